"""The failure rules about the start's own settings that no other rule file holds: LoRA on a model or vocabulary it
cannot take, a speculative-decoding set-up this vLLM refuses, a RoPE scaling type, an attention backend named that
does not exist, a folder the start cannot write, VLLM_USE_V1 against the engine or feature, a sliding window on some
layers, Gaudi's HPU graphs without lazy collectives, a CDI device name the container runtime does not know. Read in
their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.markers import BEFORE_START, CUDA_GRAPH, KV_CACHE, LOADING
from vllm_guard.diagnose.rule import Rule

SETTINGS_RULES: tuple[Rule, ...] = (
    # Ray's AMD accelerator manager (ray/_private/accelerators/amd_gpu.py) refusing ROCR_VISIBLE_DEVICES without
    # HIP_VISIBLE_DEVICES, which Slurm sets on ROCm clusters (LUMI, Frontier; blind104/b104-003), as vLLM imports Ray
    Rule("usage_error", re.compile(r"Please use HIP_VISIBLE_DEVICES instead of ROCR_VISIBLE_DEVICES"), BEFORE_START,
         detail="rocr_visible_devices", source=SOURCES["rocr_visible_devices"]),
    # vLLM's Model Runner V2 refusing a feature it does not run yet (config/vllm.py _validate_v2_model_runner: 0.20's
    # "VLLM_USE_V2_MODEL_RUNNER does not yet support: X", 0.25-0.33's "Model Runner V2 ..."; blind102/b102-002:
    # ngram speculative decoding on Intel XPU)
    Rule("usage_error", re.compile(r"(?:Model Runner V2|VLLM_USE_V2_MODEL_RUNNER) does not yet support: "
                                   r"(?P<features>[^\[\n]{1,300})"),
         BEFORE_START, detail="mrv2_unsupported", source=SOURCES["mrv2_unsupported"]),
    # LoRA on a mixture-of-experts model whose class has no expert mapping (vLLM 0.11-0.20 lora/utils.py;
    # blind102/b102-001: Gemma 4's MoE)
    Rule("usage_error", re.compile(r"To support LoRA for MoE model, 'get_expert_mapping' must be implemented"),
         BEFORE_START, detail="lora_moe", source=SOURCES["lora_moe"]),
    # An adapter whose modules are not among those vLLM's LoRA layers take for the model (vLLM 0.4-0.11
    # lora/models.py prints a list, 0.13-0.34 lora_model.py a set; blind102/b102-008: a Tinker adapter's
    # 'model.unembed_tokens'). Only in a start never ready: an adapter loaded at run time (/v1/load_lora_adapter)
    # fails in the engine core, which logs it and goes on serving.
    Rule("model_access", re.compile(r"expected target modules in [\[{][^\]}]{0,1000}[\]}] but received "
                                    r"\[[^\]]{0,1000}\]"), detail="lora_modules", when=conditions.never_ready,
         source=SOURCES["lora_modules"]),
    # vllm-ascend's EPLB registering a model it cannot balance (vllm_ascend/eplb/utils.py model_register; blind101/
    # b101-011: Qwen3-VL MoE with dynamic_eplb under v0.13.0rc1; the raise's source line is what the paste kept)
    Rule("usage_error", re.compile(r"NotImplementedError(?::|\()\s?[\"']?EPLB is not supported"), BEFORE_START,
         detail="eplb_unsupported", source=SOURCES["eplb_unsupported"]),
    # A hybrid model (Mamba, gated delta net, KDA layers) keeps one state block per decode sequence, and vLLM 0.20-0.34
    # refuses full CUDA graphs for more sequences than blocks (config/compilation.py): its own figure is the most
    # max-num-seqs can be (blind99/b99-001, b99-002, b99-012, b99-013: Nemotron-H, Qwen3.5/3.6, at the default 1024).
    Rule("usage_error", re.compile(r"max_num_seqs \((?P<max_num_seqs>\d{1,7})\) exceeds available Mamba cache blocks "
                                   r"\((?P<mamba_blocks>\d{1,9})\)"), CUDA_GRAPH, detail="mamba_blocks",
         numbers=lambda m: numbers_of(m, "max_num_seqs", "mamba_blocks"), source=SOURCES["mamba_blocks"]),
    # Mamba2's mixer splits its groups across tensor-parallel ranks (model_executor/layers/mamba/mamba_mixer2.py,
    # 0.11-0.34): a size that does not divide them works only for a single group (blind99/b99-006: Nemotron 3 Ultra's
    # 8 groups at TP 32).
    Rule("tp_indivisible", re.compile(r"If tensor parallel world size does not divide num_groups"), LOADING,
         detail="mamba_groups", source=SOURCES["mamba_groups"]),
    # LMCache's vLLM integration (lmcache/integration/vllm/kv_cache_group_edits.py) refusing a hybrid model's Mamba
    # groups unless vLLM keeps their state as 'align', which it does with prefix caching (blind99/b99-003: Dynamo's
    # images with Nemotron 3).
    Rule("usage_error", re.compile(r"LMCache cannot serve this model's KV cache groups"), BEFORE_START,
         detail="lmcache_mamba", source=SOURCES["lmcache_mamba"]),
    # A checkpoint saved as the bare base model (its weights named "embed_tokens...", "layers.N...", "norm" without
    # the "model." of a causal LM: an embedding or reranking model such as Qwen3-Embedding) started as a generator:
    # vLLM's *ForCausalLM loader (AutoWeightsLoader, 0.6-0.34) finds no such module; as a pooling model vLLM maps
    # the names (blind100/b100-002: GPUStack over vLLM 0.8.5 "Defaulting to 'generate'").
    Rule("usage_error", re.compile(r"There is no module or parameter named '(?:embed_tokens|layers|norm)' in "
                                   r"\w{1,128}ForCausalLM\b"), LOADING,
         detail="pooling_checkpoint", source=SOURCES["pooling_checkpoint"]),
    # Gaudi's lazy mode captures HPU graphs in the warm-up, and with tensor parallelism their collectives need
    # PT_HPU_ENABLE_LAZY_COLLECTIVES=true (Habana's runtime; vllm-gaudi's platform.py sets it when unset, HabanaAI's
    # vllm-fork did not; blind81/b81-002: Ray tensor parallelism with HPU graphs)
    Rule("usage_error", re.compile(r"collective nonSFG is not supported during hpu graph capturing"), CUDA_GRAPH,
         detail="hpu_lazy_collectives", source=SOURCES["hpu_lazy_collectives"]),
    # The container runtime asked for a GPU through CDI by a name no CDI spec on the node defines: the NVIDIA
    # Container Toolkit's CDI modifier (internal/modifier/cdi/registry.go "failed to inject CDI devices") over the
    # CDI library's "unresolvable CDI devices" (blind76/b76-001: a kubelet event, GPUStack's pod in StartError)
    Rule("usage_error", re.compile(r"failed to inject CDI devices: unresolvable CDI devices (?P<device>\S{1,200})"),
         BEFORE_START, detail="cdi_device", source=SOURCES["cdi_device"]),
    # Google Cloud Run giving up on a container that did not listen on $PORT within its start timeout (gcloud run
    # deploy's error; blind148/b148-001, vLLM's image on Cloud Run GPUs): the platform's budget. It says the same of a
    # container that crashed, so it is kept aside: an error of the container's own in the paste decides (a review).
    Rule("startup_timeout", re.compile(r"The user-provided container failed to start and listen on the port defined "
                                       r"(?:provided )?by the PORT=(?P<port>\d{1,5}) environment variable within the "
                                       r"allocated timeout"), BEFORE_START, detail="platform_start",
         numbers=lambda m: numbers_of(m, "port"), when=conditions.never_ready, warning=True,
         source=SOURCES["platform_start"]),
    # Qwen2's class (Seed-OSS's and Ouro's from 0.10) runs sliding-window attention on all layers or none: 0.4-0.8
    # refuse a config with use_sliding_window on and max_window_layers set at all (the message then says "28 is
    # less than 28"), 0.9-0.34 assert a window on all layers (models/qwen2.py; blind69/b69-001: Qwen2.5-7B)
    Rule("usage_error", re.compile(r"Sliding window for some but all layers is not supported"), LOADING,
         detail="window_layers", source=SOURCES["window_layers"]),
    # VLLM_USE_V1=1 set, with a feature or device vLLM 0.8-0.10's V1 engine does not run: the engine-args check
    # raises where it would otherwise fall back to V0 (engine/arg_utils.py _raise_or_fallback; blind86/b86-004: the
    # CPU image's V1 on device type=cpu)
    Rule("usage_error", re.compile(r"VLLM_USE_V1=1 is not supported with (?P<feature>[^\n]{1,160})"), BEFORE_START,
         detail="v1_unsupported", source=SOURCES["v1_unsupported"]),
    # An engine class built directly (a framework calling AsyncLLM.from_vllm_config) while VLLM_USE_V1 says the
    # other engine: vLLM 0.8-0.10's engine-args check sets VLLM_USE_V1=0 when a feature V1 lacks falls back to V0,
    # or the variable differs in the process that builds it (v1/engine/async_llm.py, llm_engine.py and V0's
    # engine/llm_engine.py, async_llm_engine.py; blind6/b6-042: verl's async server)
    Rule("usage_error", re.compile(r"Using V[01] (?:Async)?LLMEngine, but envs\.VLLM_USE_V1=(?:True|False)\. This "
                                   r"should not happen"), BEFORE_START, detail="engine_choice",
         source=SOURCES["engine_choice"]),
    # LoRA asked for a model class without it: V0's loader (0.3-0.6 model_loader/loader.py "Model X does not support
    # LoRA, but LoRA is enabled."), V1's runner (0.7-0.33 lora_model_runner_mixin.py "X does not support LoRA yet.");
    # blind48/b48-011, b48-012
    Rule("usage_error", re.compile(r"Model \w{1,128} does not support LoRA, but LoRA is enabled"
                                   r"|\b\w{1,100}(?:For\w{1,60}|Model) does not support LoRA yet"),
         BEFORE_START, detail="lora_model", source=SOURCES["lora_model"]),
    # V1's speculative config before separate draft models came back (0.10-0.13 config/speculative.py), and 0.5-0.6's
    # check of a draft model's settings (config.py SpeculativeConfig.maybe_create_spec_config; blind48/b48-013, b48-014)
    Rule("usage_error", re.compile(r"Speculative decoding with draft model is not supported yet"
                                   r"|Expected both speculative_model and num_speculative_tokens to be provided"),
         BEFORE_START, detail="spec_config", source=SOURCES["spec_config"]),
    # Full decode CUDA graphs with speculative decoding need capture sizes that are multiples of num_speculative_tokens
    # + 1 (config/compilation.py adjust_cudagraph_sizes_for_spec_decode): 0.11-0.30 refused a tensor-parallel size
    # with sequence parallelism that shares no multiple with it (blind128/b128-003: EAGLE's 2 tokens at TP 4), and
    # 0.20-0.33 refuse when no capture size rounds up to one under max_cudagraph_capture_size ("(num_speculative_
    # tokens + 1 or tp if sequence parallelism is enabled)" to 0.30, "(num_speculative_tokens + 1)" from 0.32; 0.11
    # only warned, without the number after "multiple of")
    Rule("usage_error", re.compile(r"Can't determine cudagraph shapes that are both a multiple of \d{1,4} "
                                   r"\(num_speculative_tokens \+ 1\) required by spec-decode and \d{1,4}"
                                   r"|No valid cudagraph sizes after rounding to multiple of \d{1,4} "
                                   r"\(num_speculative_tokens \+ 1(?:\)| or tp if sequence parallelism)"),
         BEFORE_START, detail="spec_cudagraph", source=SOURCES["spec_cudagraph"]),
    # A RoPE type some vLLM knows, named by the model's config.json to a vLLM that predates it (Llama 3.1's llama3
    # before 0.5.3), then any other name (a --rope-scaling typo; blind48/b48-001's "extended"): get_rope in
    # model_executor/layers/rotary_embedding.py (rotary_embedding/__init__.py at 0.32)
    Rule("version_mismatch", re.compile(r"Unknown RoPE scaling type (?:llama3|yarn|dynamic|linear|longrope|su|mrope|"
                                        r"deepseek_yarn|default|ntk|mllama4|proportional|bailing_mrope|openpangu|"
                                        r"dual_chunk_attention|xdrope|deepseek_llama_scaling)\b"), BEFORE_START,
         detail="rope_newer", source=SOURCES["rope_type"]),
    Rule("usage_error", re.compile(r"Unknown RoPE scaling type (?P<rope_type>\w{1,64})"), BEFORE_START,
         detail="rope_type", source=SOURCES["rope_type"]),
    # A cache or home folder the start cannot write (OpenShift's arbitrary user with HOME=/: "/.cache"; a read-only
    # mount; blind47/b47-007, retyped in lower case): a warning, since a thread may hit it and the start go on
    # (vLLM's usage-stats reporter writes under ~/.config), so any decisive line after it wins
    Rule("usage_error", re.compile(r"(?i:PermissionError: \[Err(?:no|or) 13\] Permission denied): "
                                   r"'(?P<path>[^']{1,512})'"), BEFORE_START, detail="permission",
         when=conditions.never_ready, warning=True, source=SOURCES["permission"]),
    # A shell that cannot execute vllm at all: nothing of vLLM ran (blind47/b47-008, OpenShift's arbitrary user)
    Rule("usage_error", re.compile(r"^/bin/(?:ba|da)?sh: (?:\d{1,6}: )?vllm: Permission denied"), BEFORE_START,
         detail="permission", source=SOURCES["permission"]),
    Rule("usage_error", re.compile(r"max_lora_rank \((?P<max_lora_rank>\d+)\) must be one of"), BEFORE_START,
         detail="lora_rank", numbers=lambda m: numbers_of(m, "max_lora_rank"), source=SOURCES["lora_rank"]),
    # LoRA's logits kernels take a bounded vocabulary (lora/layers.py 0.4-0.9, lora/layers/logits_processor.py
    # 0.10-0.34: "32000 >= vocab_size <= 128512" at 0.4, "<= 257024" at 0.5-0.13, "<= 258048" from 0.20;
    # blind64/b64-002, a 40,960-token vocabulary on 0.3)
    Rule("usage_error", re.compile(r"When using LoRA, vocab size must be (?:\d{1,9} >= vocab_size )?<= "
                                   r"(?P<max_vocab>\d{1,9})"), LOADING, detail="lora_vocab",
         numbers=lambda m: numbers_of(m, "max_vocab"), source=SOURCES["lora_vocab"]),
    # VLLM_BATCH_INVARIANT=1 where this vLLM has no batch-invariant kernel for the model's attention or the backend
    # (model_executor/layers/batch_invariant.py 0.13-0.16, v1/attention/selector.py 0.20-0.34; blind65/b65-004: a
    # GDN hybrid, blind66/b66-004: no backend chosen)
    # (0.20+ says the first as it sets up the attention backends, after the weights: the stage is the log's)
    Rule("usage_error", re.compile(r"VLLM batch_invariant mode requires an attention backend"), BEFORE_START,
         detail="batch_invariant", source=SOURCES["batch_invariant"]),
    Rule("usage_error", re.compile(r"VLLM batch_invariant mode is not supported for"), detail="batch_invariant",
         source=SOURCES["batch_invariant"]),
    # Any environment variable of vLLM's with a fixed set of values (envs.py env_with_choices, 0.11-0.34: "Invalid
    # value 'X' for VLLM_ATTENTION_BACKEND. Valid options: [...]")
    Rule("usage_error", re.compile(r"Invalid value '[^']{0,200}' for (?P<variable>VLLM_\w{1,64})\. Valid options"),
         BEFORE_START, detail="env_choice", source=SOURCES["env_choice"]),
    # Layers whose KV cache pages vLLM cannot make one size (v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size,
    # 0.13-0.20: it grows the smaller pages' block size, so the largest page must be a multiple of each; 0.30-0.34
    # also pad non-MLA attention pages, and say "Layer X: page size is not divisible by the maximum page size and
    # cannot be padded"), as it plans the KV cache after profiling (blind110/b110-001: Gemma 4 with an int8
    # per-token-head KV cache dtype)
    Rule("unsupported_architecture", re.compile(r"The page size of the layer is not divisible by the maximum page "
                                                r"size"), KV_CACHE, detail="kv_page_size",
         source=SOURCES["kv_page_size"]),
    Rule("unsupported_architecture", re.compile(r": page size is not divisible by the maximum page size and cannot be "
                                                r"padded"), KV_CACHE, detail="kv_page_padding",
         source=SOURCES["kv_page_size"]),
    # A model whose layers keep KV caches of kinds only the hybrid KV cache manager keeps apart (Mamba or linear
    # attention beside attention, sliding windows beside full attention), started with that manager off: a KV
    # connector turns it off (--kv-transfer-config, unless the connector supports it), as do
    # --disable-hybrid-kv-cache-manager and non-GPU platforms (config/vllm.py; blind151/b151-003, b151-004: Qwen3.5/3.6
    # under LMCache)
    Rule("unsupported_architecture", re.compile(r"Hybrid KV cache manager is disabled but failed to convert the KV "
                                                r"cache specs to one unified type|Failed to promote local KV cache "
                                                r"specs to one unified type"), KV_CACHE, detail="hybrid_kv_disabled",
         source=SOURCES["hybrid_kv_disabled"]),
    # V0's speculative decoding checking that the draft and the target share one vocabulary (spec_decode/
    # spec_decode_worker.py, its _vocab_size property, 0.4.2-0.5.5 read): a bare AssertionError, so its code line
    # decides (blind153/b153-020,
    # a GPTQ Qwen2.5-0.5B draft for a DeepSeek-R1 distill)
    Rule("usage_error", re.compile(r"assert all\(vocab_sizes\[0\] == vocab_size for vocab_size in vocab_sizes\)"),
         BEFORE_START, detail="spec_vocab", when=conditions.never_ready, source=SOURCES["spec_vocab"]),
    # A pre-quantized bitsandbytes checkpoint under tensor parallelism: its quant states cannot be split (vLLM 0.7-0.25;
    # blind124/b124-007). vLLM's own advice is pipeline parallelism.
    Rule("usage_error", re.compile(r"Prequant BitsAndBytes models with tensor parallelism is not supported"),
         LOADING, detail="bnb_tp", source=SOURCES["bnb_tp"]),
    # A program passing vLLM a command-line spelling as a keyword ("tool-call-parser"; blind125/b125-002, Xinference's
    # extra options): no release of vLLM takes it, so it is the option's spelling, not another vLLM release
    Rule("usage_error", re.compile(r"EngineArgs\.__init__\(\) got an unexpected keyword argument "
                                   r"'(?P<keyword>\w{0,64}-[\w-]{1,64})'"), BEFORE_START, detail="engine_kwarg",
         source=SOURCES["engine_kwarg"]),
    # vllm-ascend 0.9.0rc1-0.10.2rc1 (ascend_config.py check_ascend_config) picks a graph mode per model: its ACL graph
    # mode, the default without eager mode, refuses DeepSeek models, and its own advice is torchair graph mode or eager
    # mode (blind158/b158-003, vllm-ascend #1456)
    Rule("usage_error", re.compile(r"ACL Graph does not support deepseek\."), BEFORE_START, detail="acl_graph",
         source=SOURCES["ascend_graph_mode"]),
    # the same check's torchair graph mode: DeepSeek models alone (0.9.x), the types it lists (0.10), never eager
    Rule("usage_error", re.compile(r"Torchair graph mode only works with (?:deepseek model|following model types)|"
                                   r"Can't enable graph mode and eager mode at the same time"), BEFORE_START,
         detail="torchair_graph", source=SOURCES["ascend_graph_mode"]),
    # torch_npu's graph capture refusing its second-level task queue (TASK_QUEUE_ENABLE=2), which vllm-ascend's
    # graphs meet unless eager mode is set (blind169/b169-006, PaddleOCR-VL on vllm-ascend 0.17)
    Rule("usage_error", re.compile(r"Do not support TASK_QUEUE_ENABLE = 2 during NPU graph capture"),
         detail="npu_task_queue", source=SOURCES["npu_task_queue"]),
    # vllm-spyre's warmup shapes, each compiled for at start, longer than --max-model-len (blind169/b169-013, the
    # message before vllm-spyre #244 formatted its figures, braces and all)
    Rule("usage_error", re.compile(r"Warmup shape \[.{1,200}?\] results in a maximum sequence length of \S{1,40} "
                                   r"which is longer that what the model"), BEFORE_START, detail="spyre_warmup",
         source=SOURCES["spyre_warmup"]),
    # Ray asked of a platform with no Ray device key (vLLM 0.11-0.34 v1/executor/ray_utils.py initialize_ray_cluster,
    # 0.20+'s ray_executor_v2.py: "current platform cpu does not support ray."; 0.9-0.20's ray_utils also raise it as a
    # RuntimeError with its % unformatted; blind176/b176-007, vllm-metal on a Mac). Ray may be vLLM's own choice too
    # (--data-parallel-backend ray, a Ray placement group), which the advice names.
    Rule("usage_error", re.compile(r"current platform (?:%s|\S{1,40}) does not support ray\b"), BEFORE_START,
         detail="ray_platform", source=SOURCES["ray_platform"]),
    # prefix caching on a hybrid (Mamba) model without chunked prefill (vLLM 0.20-0.32 model_executor/models/config.py
    # MambaModelConfig.verify_and_update_config's assert, under VllmConfig's pydantic check: "1 validation error for
    # VllmConfig / Assertion failed, Chunked prefill is required for mamba cache mode 'align'."; blind176/b176-003)
    Rule("usage_error", re.compile(r"Chunked prefill is required for mamba cache mode 'align'"), BEFORE_START,
         detail="mamba_align", source=SOURCES["mamba_align"]),
    # VLLM_ATTENTION_BACKEND naming no backend (vLLM 0.10-0.11 attention/selector.py _cached_get_attn_backend:
    # "Invalid attention backend: 'X'. Valid backends are: [...]"; blind64/b64-004, set to an empty string)
    Rule("usage_error", re.compile(r"Invalid attention backend: '(?P<backend>[^']{0,64})'\. Valid backends are"),
         BEFORE_START, detail="backend_name", source=SOURCES["backend_name"]),
)
