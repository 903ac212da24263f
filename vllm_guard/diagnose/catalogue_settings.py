"""Where the messages about the start's own settings come from (LoRA, speculative decoding, RoPE scaling, a folder
the start cannot write, a hybrid model's Mamba cache, a pooling checkpoint, Model Runner V2, the Transformers
backend's tensor parallelism, Ray's ROCm variables, bitsandbytes under tensor parallelism, an engine keyword in a
command-line spelling), and a few of the kernels' and plugins' (CUTLASS, Marlin's repacking, Rebellions' runtime and
vllm-rbln, openai-harmony's vocabulary): part of catalogue.SOURCES, kept apart to keep that file readable."""

from __future__ import annotations

SETTINGS_SOURCES: dict[str, str] = {
    "lora_model": "vLLM 0.3-0.6 model_executor/model_loader/loader.py: 'Model X does not support LoRA, but LoRA is "
                  "enabled.'; 0.7-0.33 v1/worker/lora_model_runner_mixin.py: 'X does not support LoRA yet.'",
    "spec_config": "vLLM 0.10-0.13 config/speculative.py __post_init__: 'Speculative decoding with draft model is not "
                   "supported yet.'; 0.5-0.6 config.py SpeculativeConfig.maybe_create_spec_config: 'Expected both "
                   "speculative_model and num_speculative_tokens to be provided, but found ...'",
    "spec_cudagraph": "vLLM 0.11-0.30 config/compilation.py adjust_cudagraph_sizes_for_spec_decode: 'Can't determine "
                      "cudagraph shapes that are both a multiple of N (num_speculative_tokens + 1) required by "
                      "spec-decode and M (tensor_parallel_size) required by sequence parallelism'; 0.20-0.33: 'No "
                      "valid cudagraph sizes after rounding to multiple of N (num_speculative_tokens + 1 or tp if "
                      "sequence parallelism is enabled)' (to 0.30; '(num_speculative_tokens + 1)' from 0.32)",
    "rope_type": "vLLM 0.2-0.33 get_rope (model_executor/layers/rotary_embedding.py; rotary_embedding/__init__.py at "
                 "0.32): 'ValueError: Unknown RoPE scaling type X'",
    "custom_allreduce_cuda": "vLLM 0.3-0.33 csrc/custom_all_reduce.cuh CUDACHECK: 'Failed: Cuda error FILE:LINE "
                             "'REASON'' (the custom all-reduce's IPC buffers between the GPUs)",
    "hccl_port": "HCCL (CANN, through torch_npu): 'EJ0003: ... Failed to bind the IP port. Reason: The IP address and "
                 "port have been bound already.', hccl_socket.cc 'listen on ip[A] and specific port[P] fail. Please "
                 "check the port status and whether the port is being used by other process.'",
    "tokenizer_old": "vLLM 0.1-0.2 transformers_utils/tokenizer.py get_tokenizer: 'RuntimeError: Failed to load the "
                     "tokenizer. If you are using a LLaMA-based model, use 'hf-internal-testing/llama-tokenizer' "
                     "instead of the original tokenizer.'",
    "no_model_type": "transformers configuration_auto.py AutoConfig.from_pretrained: 'ValueError: Unrecognized model "
                     "in PATH. Should have a `model_type` key in its config.json, or contain one of the following "
                     "strings in its name: ...'",
    "ray_node_ip": "vLLM 0.5-0.30 Ray executors' _init_workers_ray (executor/ray_gpu_executor.py 0.5-0.6, "
                   "executor/ray_distributed_executor.py 0.7-0.10, v1/executor/ray_executor.py 0.11-0.30): "
                   "'RuntimeError: Every node should have a unique IP address. Got N nodes with node ids [...] and M "
                   "unique IP addresses {...}'",
    "lora_vocab": "vLLM 0.4-0.34 LogitsProcessorWithLoRA.create_lora_weights (lora/layers.py; lora/layers/"
                  "logits_processor.py from 0.10): 'ValueError: When using LoRA, vocab size must be 32000 >= "
                  "vocab_size <= 257024' (128512 at 0.4; '<= 258048' from 0.20)",
    "backend_name": "vLLM 0.10-0.11 attention/selector.py _cached_get_attn_backend: 'ValueError: Invalid attention "
                    "backend: 'X'. Valid backends are: [...]' (VLLM_ATTENTION_BACKEND)",
    "batch_invariant": "vLLM 0.13-0.16 model_executor/layers/batch_invariant.py, 0.20-0.34 v1/attention/selector.py: "
                       "'VLLM batch_invariant mode is not supported for X', 'VLLM batch_invariant mode requires an "
                       "attention backend in [...], but got 'Y''",
    "encoder_attention": "vLLM 0.5-0.34 attention/backends/*.py and v1/attention/backends/*.py, each backend's "
                         "impl: 'NotImplementedError: Encoder self-attention and encoder/decoder cross-attention are "
                         "not implemented for XImpl' ('Encoder self-attention is not implemented for XImpl')",
    "v1_unsupported": "vLLM 0.8-0.10 engine/arg_utils.py _raise_or_fallback: 'NotImplementedError: VLLM_USE_V1=1 is "
                      "not supported with FEATURE.'",
    "engine_choice": "vLLM 0.8-0.10 v1/engine/async_llm.py and llm_engine.py (V0's engine/llm_engine.py, "
                     "async_llm_engine.py): 'ValueError: Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False. This "
                     "should not happen. As a workaround, ... explicitly set VLLM_USE_V1=0 or 1'",
    "cdi_device": "the NVIDIA Container Toolkit's internal/modifier/cdi/registry.go: 'failed to inject CDI devices: "
                  "unresolvable CDI devices NAME' (container-device-interface pkg/cdi/cache.go), in the runtime's "
                  "'OCI runtime create failed'",
    "hpu_lazy_collectives": "Habana's PyTorch bridge (Gaudi, lazy mode): 'RuntimeError: collective nonSFG is not "
                            "supported during hpu graph capturing', in vLLM's HPU warm-up (habana_worker.py "
                            "_warm_up_model in HabanaAI's vllm-fork)",
    "window_layers": "vLLM 0.4-0.34 model_executor/models/qwen2.py Qwen2Model.__init__ (a ValueError to 0.8, an "
                     "assertion from 0.9; seed_oss.py, ouro.py from 0.10): 'Sliding window for some but all "
                     "layers is not supported. This model uses sliding window but `max_window_layers` = N is less "
                     "than `num_hidden_layers` = M.'",
    "moe_act_platform": "vLLM 0.11-0.20 model_executor/layers/fused_moe/layer.py (fused_moe/config.py 0.25-0.34): "
                        "'NotImplementedError: is_act_and_mul=False is supported only for CUDA and ROCm for now' "
                        "(CUDA alone, or CUDA, XPU and ROCm, by release)",
    "env_choice": "vLLM 0.11-0.34 envs.py env_with_choices: 'ValueError: Invalid value 'X' for VLLM_NAME. Valid "
                  "options: [...]'",
    "permission": "Python's 'PermissionError: [Errno 13] Permission denied: PATH' (a cache or home folder the start "
                  "cannot write), and a shell's 'vllm: Permission denied' (a container user that cannot run it)",
    "pooling_checkpoint": "vLLM 0.6-0.34 model_executor/models/utils.py AutoWeightsLoader._load_module: 'There is no "
                          "module or parameter named 'embed_tokens' in XForCausalLM' (a base model's weight names)",
    "mamba_blocks": "vLLM 0.20-0.34 config/compilation.py (resolving the CUDA-graph mode): 'max_num_seqs (N) exceeds "
                    "available Mamba cache blocks (M). Each decode sequence requires one Mamba cache block, so CUDA "
                    "graph capture cannot proceed.'",
    "mamba_groups": "vLLM 0.11-0.34 model_executor/layers/mamba/mamba_mixer2.py: 'If tensor parallel world size does "
                    "not divide num_groups, then num_groups must equal 1.'",
    "lmcache_mamba": "LMCache lmcache/integration/vllm/kv_cache_group_edits.py: \"LMCache cannot serve this model's KV "
                     "cache groups: group N: MambaSpec with mamba_cache_mode='X' (only 'align' keeps reusable state "
                     "snapshots)\"",
    "eplb_unsupported": "vllm-ascend vllm_ascend/eplb/utils.py model_register: 'NotImplementedError: EPLB is not "
                        "supported.'",
    "mrv2_unsupported": "vLLM config/vllm.py _validate_v2_model_runner: 'VLLM_USE_V2_MODEL_RUNNER does not yet "
                        "support: X' (0.20), 'Model Runner V2 does not yet support: X' (0.25-0.33)",
    "lora_moe": "vLLM 0.11-0.20 lora/utils.py: \"AttributeError: To support LoRA for MoE model, 'get_expert_mapping' "
                "must be implemented\"",
    "rocr_visible_devices": "Ray ray/_private/accelerators/amd_gpu.py (imported by vLLM): 'RuntimeError: Please use "
                            "HIP_VISIBLE_DEVICES instead of ROCR_VISIBLE_DEVICES'",
    "kv_page_size": "vLLM unify_kv_cache_spec_page_size (v1/core/kv_cache_utils.py; kv_cache_planning.py from 0.33): "
                    "0.13-0.20 'The page size of the layer is not divisible by the maximum page size. Cannot unify by "
                    "adjusting block_size.', 0.30-0.34 'Layer X: page size is not divisible by the maximum page size "
                    "and cannot be padded. Padding is only supported for non-MLA attention layers.'",
    "transformers_no_tp": "vLLM's Transformers backend (model_executor/models/transformers.py, later transformers/"
                          "base.py) applying the model's tensor-parallel plan: 0.7 'Trying to run tensor "
                          "parallelization but the model does not support it yet!', 0.8-0.9 '<class X> does not "
                          "support tensor parallel yet!', 0.10-0.20 '<class X> does not support tensor parallel. ...'",
    "cutlass_capability": "vLLM csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu: 'No compiled X: no "
                          "cutlass_scaled_mm kernel for CUDA device capability: N. Required capability: ...' "
                          "(STD_TORCH_CHECK_NOT_IMPLEMENTED)",
    "bnb_tp": "vLLM 0.7-0.25 bitsandbytes loader (model_loader/loader.py, later bitsandbytes_loader.py "
              "_verify_model_compatibility): 'Prequant BitsAndBytes models with tensor parallelism is not supported. "
              "Please try with pipeline parallelism.'",
    "engine_kwarg": "Python's TypeError for vLLM's (Async)EngineArgs dataclass: '__init__() got an unexpected keyword "
                    "argument X', X spelled with a hyphen as on a command line",
    "marlin_repack": "vLLM's Marlin repacking (csrc/quantization/gptq_marlin/gptq_marlin_repack.cu TORCH_CHECK): "
                     "'size_n = N is not divisible by tile_n_size = 64' (and size_k, tile_k_size)",
    "rbln_oom": "Rebellions' runtime (RBLN NPUs, under the vllm-rbln plugin): 'RuntimeError: SYS_EBUSY: Lack of device "
                "memory. (code: -16)' and 'SYS_ENOMEM: Out of memory', the two errors vllm-rbln's worker takes for "
                "out of memory (vllm_rbln/v1/worker/rbln_worker.py is_rbln_oom_error)",
    "rbln_blocks": "vllm-rbln vllm_rbln/v1/worker/rbln_worker.py compile_or_warm_up_model, an RBLN out-of-memory "
                   "ending the warm-up's compile: 'Not enough memory for N blocks of KV cache. Try reducing the number "
                   "of blocks by setting --num-gpu-blocks-override.'",
    "harmony_vocab_file": "openai-harmony (Rust, tiktoken_ext/public_encodings.rs load_tiktoken_vocab): 'HarmonyError: "
                          "invalid tiktoken vocab file: hash mismatch: computed=X, expected=Y' (TIKTOKEN_ENCODINGS_"
                          "BASE's file) or '... expected token and rank, could not split on ' ' at line N'",
    "spec_vocab": "vLLM 0.4.2-0.5.5 spec_decode/spec_decode_worker.py _vocab_size: 'assert all(vocab_sizes[0] == "
                  "vocab_size for vocab_size in vocab_sizes)' (a bare AssertionError)",
    "moe_quant": "vLLM 0.5 model_executor/layers/fused_moe/layer.py FusedMoE.__init__: 'assert self.quant_method is "
                 "not None' (a bare AssertionError)",
    "fp8_moe_scales": "vLLM compressed_tensors_moe.py (0.8.3's log): 'For FP8 Fused MoE layers, only per-tensor scales "
                      "for weights and activations are supported. Found ...'; quark_moe.py (0.11-0.34) with "
                      "per-channel (and per-block) added",
    "moe_backend": "vLLM 0.20-0.34 model_executor/layers/fused_moe/oracle/*.py map_*_backend: \"moe_backend='X' is "
                   "not supported for FP8 MoE. Expected one of [...]\" (NvFP4, unquantized, W4A8 MoE alike)",
    "hybrid_kv_disabled": "vLLM 0.9.2-0.25 v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs: 'Hybrid KV cache "
                          "manager is disabled but failed to convert the KV cache specs to one unified type.' "
                          "(0.30-0.34 _promote_local_kv_cache_specs: 'Failed to promote local KV cache specs to one "
                          "unified type.')",
    "ascend_graph_mode": "vllm-ascend 0.9.0rc1-0.10.2rc1 ascend_config.py check_ascend_config: 'ACL Graph does not "
                         "support deepseek. Please try torchair graph mode ... Or set `enforce_eager=True`', "
                         "'Torchair graph mode only works with deepseek model.' (0.10: 'with following model types:"
                         "[...]'), \"Can't enable graph mode and eager mode at the same time.\"",
    "npu_task_queue": "torch_npu NPUGraph.cpp NPUGraph::capture_begin: TORCH_CHECK 'Do not support "
                      "TASK_QUEUE_ENABLE = 2 during NPU graph capture' (the torch_npu of a 2026 log adds ', please "
                      "export TASK_QUEUE_ENABLE=1/0.'; vllm-ascend 0.13+ wraps it: 'NPUModelRunner init failed, error "
                      "is ...')",
    "spyre_warmup": "vllm-spyre 0.3.1-0.9.x platform.py (its warmup shapes check): 'Warmup shape [B, P, N] results in "
                    "a maximum sequence length of S which is longer that what the model supports (M)'",
    "mistral_quant": "vLLM 0.9.2-0.34 transformers_utils/configs/mistral.py (0.9's transformers_utils/config.py), "
                     "params.json's quantization entry: \"ValueError: Found unknown quantization='{...}' in "
                     "config\"",
    "ray_platform": "vLLM 0.11-0.34 v1/executor/ray_utils.py initialize_ray_cluster (and 0.33's ray_executor_v2.py): "
                    "'ValueError: current platform cpu does not support ray.' (the platform has no Ray device key); "
                    "0.9-0.20's ray_utils.py also: RuntimeError('current platform %s does not support ray.', ...)",
    "mamba_align": "vLLM 0.20.2-0.32 model_executor/models/config.py MambaModelConfig.verify_and_update_config: assert "
                   "'Chunked prefill is required for mamba cache mode 'align'.' (prefix caching on a hybrid model), "
                   "raised through VllmConfig's pydantic check as 'Assertion failed, ...'",
    "platform_start": "Google Cloud Run (gcloud run deploy): 'The user-provided container failed to start and listen "
                      "on the port defined provided by the PORT=N environment variable within the allocated "
                      "timeout.'",
}
