"""The failure rules: what vLLM, PyTorch, NCCL, Ray and the kernel write when a start fails, and the numbers in it."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of, oom_numbers
from vllm_guard.diagnose.markers import BEFORE_START, CUDA_GRAPH, KV_CACHE, LOADING, PROFILING
from vllm_guard.diagnose.rule import Rule
from vllm_guard.diagnose.rules_files import FILE_RULES
from vllm_guard.diagnose.rules_gpus import ACCELERATOR_MEMORY_RULES, GPU_COUNT_RULES
from vllm_guard.diagnose.rules_network import NETWORK_RULES
from vllm_guard.diagnose.rules_quant import DTYPE_QUANT_RULES
from vllm_guard.diagnose.rules_settings import SETTINGS_RULES
from vllm_guard.diagnose.rules_shm import SHM_RULES
from vllm_guard.diagnose.rules_versions import VERSION_RULES

SIGKILL, SIGBUS = 9, 7


# PyTorch's OOM, raised bare or inside another error's message (Inductor's autotuning, a vLLM layer);
# only on an error line: a model may be named "no-CUDA-out-of-memory".
# Its figures alone are an OOM too: "Tried to allocate 136.00 MiB. GPU 0 has a total capacity of" (2.1+) and "Tried
# to allocate 20.00 MiB (GPU 0; 14.75 GiB total capacity" (older) are written by the caching allocator's OOM only
# (c10/cuda/CUDACachingAllocator.cpp), and a paste may quote them without the head (blind2/b015).
_OOM = re.compile(
    r"(?:Error|ERROR)\b.{0,300}?(?:CUDA|HIP|XPU|NPU) out of memory"
    r"|CUBLAS_STATUS_ALLOC_FAILED"
    # Habana's PyTorch bridge on Gaudi (vllm-gaudi, HabanaAI's fork): its device allocator's failure, the HPU's OOM
    # ("RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::134217728 (128)MB";
    # blind169/b169-019, at model.to("hpu") in load_model)
    r"|MODULE:PT_DEVMEM Allocation failed for size"
    # XLA (vLLM's TPU backends, JAX or torch_xla): a buffer or a compiled program's reservation that does not fit in
    # HBM ("XLA:TPU compile permanent error. Ran out of memory in memory space hbm", error code 1000; "Attempting to
    # allocate 3.98G. That was not possible"; blind23/b23-003's "Error loading program: Attempting to reserve"), and
    # XLA's GPU allocator's words. Not vmem or smem, a kernel's scratch memory on the core: rules_gpus.py's tpu_onchip.
    # (its program's or buffer's words may come between: "Error loading program 'jit__multi_slice': Attempting to
    # reserve", "Error allocating device buffer: Attempting to allocate"; blind43/b43-008, b43-009 on TPU v5p, v7x)
    r"|RESOURCE_EXHAUSTED: (?:.{0,80}?Ran out of memory in memory space hbm"
    r"|(?!.{0,240}?Ran out of memory in memory space [sv]mem).{0,240}?Attempting to (?:allocate|reserve) [\d.]"
    r"|Out of memory while trying to allocate)"
    r"|Tried to allocate [\d.]{1,20} ?[GMK]i?B(?:\. GPU \d{1,3} has a total capacity| \(GPU \d{1,3}; [\d.]{1,20} ?"
    r"[GMK]i?B total capacity)"
    # the same message's tail (2.1+), all a paste may keep when it is cut at its start (blind37/b37-002: a Hugging
    # Face Space's error box)
    r"|Of the allocated memory [\d.]{1,20} ?[GMK]i?B is allocated by PyTorch"
)
RULES: tuple[Rule, ...] = (
    # argparse refusing --quantization's value: this vLLM (or its platform plugin) does not know the method, as
    # ModelConfig's "Unknown quantization method" says when the choices are not checked by the parser (blind25/b25-008:
    # 'ascend' before vllm-ascend registered it). Before the generic refusal below.
    Rule("quant_unsupported", re.compile(r"error: argument --quantization(?:/-q)?: invalid choice: "
                                         r"'(?P<method>[\w-]{1,64})'"), BEFORE_START, detail="unknown_method",
         source=SOURCES["quant_choice"]),
    # argparse (exit 2): vLLM refused its own command line. Nothing to retry.
    # vLLM's platform plugins' own launchers too ("vllm-metal: error: the following arguments are required").
    Rule("usage_error", re.compile(r"^(?:usage: )?(?:vllm(?:-[a-z]{1,32})?(?: serve)?|[\w.-]{1,64}\.py): error: "
                                   r"(?P<message>.{1,500})"
                                   # a program name, not a sentence: "vllm serve" is its one name with a space
                                   r"|^(?:usage: )?(?:vllm serve|[\w.-]{1,64}): error: unrecognized arguments: "),
         BEFORE_START,
         source=SOURCES["usage_error"]),
    # Quoted in a sentence: vLLM's own program name only (a user's script says nothing of vLLM).
    Rule("usage_error", re.compile(r"(?<![\w/.-])vllm(?: serve)?: error: unrecognized arguments: --?\w"),
         BEFORE_START, source=SOURCES["argparse_inline"]),
    # The CPU build's gpu_busy: --gpu-memory-utilization is the fraction of the NUMA node's memory.
    Rule("gpu_busy", re.compile(
        r"Available memory on node (?P<node>\d+) \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
        r"is less than desired CPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)"),
        BEFORE_START, detail="cpu_node_memory",
        numbers=lambda m: numbers_of(m, "free_gib", "total_gib", "utilization", "requested_gib"),
         source=SOURCES["cpu_node_memory"]),
    Rule("gpu_busy", re.compile(
        r"Free memory on device(?: (?P<device>\S{1,64}))? \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) "
        # 0.32+ also says "than the engine's budget after excluding external process's weights" (v1/worker/utils.py
        # request_memory); a line that ends at "is less" is the head of a message a paste wrapped there
        # (blind46/b46-001), one wrapped further on is read joined, with its figures
        r"on startup is less(?: than (?:desired GPU memory utilization|the engine's budget after excluding external "
        r"process's weights) \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)|\s{0,4}$)"),
        BEFORE_START, numbers=lambda m: numbers_of(m, "free_gib", "total_gib", "utilization", "requested_gib"),
         source=SOURCES["gpu_busy"]),
    Rule("kv_cache_too_small", re.compile(
        r"To serve at least one request with the models?'s max seq len \((?P<max_seq_len>\d+)\), \(?"
        r"(?P<needed_gib>[\d.]+) ?Gi?B KV cache is needed, which is larger than the available KV cache memory "
        r"\((?P<available_gib>[\d.]+) ?Gi?B\)"
        r"(?:.{0,300}?estimated maximum model length is (?P<estimated_max_len>\d+))?"),
        KV_CACHE, numbers=lambda m: numbers_of(m, "max_seq_len", "needed_gib", "available_gib", "estimated_max_len"),
         source=SOURCES["kv_too_small"]),
    Rule("kv_cache_too_small", re.compile(
        # a paste may end before the token count (b11-037), or inside "stored" (blind51/b51-002); people retype it
        # into issues ("the model’s max sew len", "maxinum": blind6/b6-024, blind9/b9-002), and its second half is
        # vLLM's words alone
        r"[Tt]he model.s max se\w len \((?P<max_seq_len>\d+)\) is larger than the max\w{0,4} number of tokens "
        r"that can be(?: stored in KV cache(?: \((?P<kv_tokens>\d+)\))?| ?[a-z]{0,6}\s{0,4}$)"),
        KV_CACHE, numbers=lambda m: numbers_of(m, "max_seq_len", "kv_tokens"), source=SOURCES["kv_too_small_v0"]),
    Rule("no_kv_memory", re.compile(r"No available memory for the cache blocks|Cannot auto-fit max_model_len: not "
                                    r"enough GPU memory"), KV_CACHE, source=SOURCES["no_kv_memory"]),
    # 0.10-0.11 went on to fail with a negative budget ("Available KV cache memory: -0.53 GiB").
    Rule("no_kv_memory", re.compile(r"Available KV cache memory: (?P<available_kv_gib>-[\d.]{1,20}) ?GiB"), KV_CACHE,
         numbers=lambda m: numbers_of(m, "available_kv_gib"), source=SOURCES["negative_kv"]),
    # vllm-ascend's worker (worker_v1.py determine_available_memory, 0.9-0.13) clamps the KV budget at 0 and logs it
    # in bytes; vLLM then raises "No available memory for the cache blocks", a line a paste often cuts
    # (blind31/b31-010): a warning, so any decisive line after it wins.
    Rule("no_kv_memory", re.compile(r"Available memory: 0, total memory: (?P<total_bytes>\d{6,20})(?!\d)"), KV_CACHE,
         numbers=lambda m: numbers_of(m, "total_bytes"), when=conditions.never_ready, warning=True,
         source=SOURCES["ascend_no_kv"]),
    # V0's executor (0.2-0.10 gpu_executor.py / distributed_gpu_executor.py determine_num_available_blocks) logs the
    # blocks it found before the workers raise "No available memory for the cache blocks" (worker.py
    # raise_if_cache_size_invalid), a line a paste often cuts (blind35/b35-007): a warning, a decisive line wins.
    # (0.1's figure may go negative, "# GPU blocks: -1", before torch refuses a tensor of that size; blind52/b52-002;
    # a paste may stop anywhere after "# GPU blocks: 0": blind120/b120-005)
    Rule("no_kv_memory", re.compile(r"# GPU blocks: (?:0|-\d{1,9})(?:, # CPU blocks: \d{1,12}"
                                    r"|,?(?: #(?: CPU(?: blocks:?)?)?)?$)"), KV_CACHE,
         when=conditions.never_ready, warning=True, source=SOURCES["v0_zero_blocks"]),
    # 0.6.5-0.9 said it in their profiling summary, then found no block for it and raised "No available memory for
    # the cache blocks" (V0: 0 GPU blocks; V1 0.8-0.9: check_enough_kv_cache_memory), a line a paste often cuts.
    # Their budget holds no CUDA-graph memory (captured after the KV cache is sized): detail before_graphs.
    Rule("no_kv_memory", re.compile(r"the rest of the memory reserved for KV Cache is "
                                    r"(?P<available_kv_gib>-[\d.]{1,20}) ?GiB"), KV_CACHE, detail="before_graphs",
         numbers=lambda m: numbers_of(m, "available_kv_gib"), source=SOURCES["negative_kv_summary"]),
    # in bytes in V0 and its plugins (vllm-ascend 0.7: blind62/b62-003)
    Rule("unknown", re.compile(r"Error in memory profiling\. Initial free memory (?:(?P<initial_free_gib>[\d.]+) ?GiB"
                               r"|(?P<initial_free_bytes>\d{4,20})), current free memory (?:(?P<current_free_gib>"
                               r"[\d.]+) ?GiB|(?P<current_free_bytes>\d{4,20}))"), PROFILING,
         detail="profiling_assertion", numbers=lambda m: numbers_of(m, "initial_free_gib", "current_free_gib",
                                                                    "initial_free_bytes", "current_free_bytes"),
         source=SOURCES["profiling_assertion"]),
    Rule("oom_loading", re.compile(r"Failed to load model - not enough GPU memory"), LOADING,
         source=SOURCES["load_oom"]),
    Rule("oom_profiling", re.compile(r"CUDA out of memory occurred when warming up (?:sampler|pooler) with "
                                     r"(?P<dummy_requests>\d+) dummy requests"), PROFILING, detail="sampler_warmup",
         numbers=lambda m: numbers_of(m, "dummy_requests"), source=SOURCES["sampler_oom"]),
    # resolved by stage (progress.oom_class)
    Rule("oom", _OOM, numbers=oom_numbers, source=SOURCES["torch_oom"]),
    # The CUDA runtime's own string for cudaErrorMemoryAllocation, on an error line (torch's "RuntimeError: CUDA
    # error: out of memory"; V1's wrapper quoting a worker's, read as "Error in worker: ..."; blind32/b32-002, and
    # blind32/b32-009 typed by hand, "Runtime Error: Cuda error"), and as vLLM's sleep-mode allocator prints it
    # (csrc/cumem_allocator.cpp's CUDA_CHECK: "CUDA Error: out of memory at .../cumem_allocator.cpp:62"). Not the
    # words alone on a line: Inductor's autotuning logs them for a choice it drops and goes on.
    Rule("oom", re.compile(r"(?:Error|ERROR)\b.{0,300}?(?i:cuda error): out of memory"
                           r"|(?i:cuda error): out of memory at \S{0,300}cumem_allocator\.cpp"),
         source=SOURCES["cuda_runtime_oom"]),
    # The driver API's (torch's C10_CUDA_DRIVER_CHECK, c10/cuda/driver_api.h: "CUDA driver error: out of memory"; the
    # allocator's expandable segments and vLLM's sleep-mode pool map memory through it), in a start that never got
    # ready: a caller may catch it and go on (blind38/b38-011: Unsloth printed it under "Error:" and retried).
    # (its colon escaped: a rule with a `when` spelling the dispatch's "error:" would be tried again on every line
    # that holds it, and a crash loop's million repeated errors would each cost the rules again; issue 28)
    Rule("oom", re.compile(r"CUDA driver error\: out of memory"), when=conditions.never_ready,
         source=SOURCES["cuda_runtime_oom"]),
    # AWS Neuron's runtime (NRT_RESOURCE, status 4) when a tensor does not fit the NeuronCores' memory
    # (transformers-neuronx under vLLM's neuron backend, 0.3-0.9; blind34/b34-002). Its placement helpers
    # (shard_along, parallel_to_nc) carry both the weights and the KV cache (decoder.py init_caches), so its frames
    # do not say which: the stage is the start's.
    Rule("oom", re.compile(r"nrt_tensor_allocate status=4 message=\"Allocation Failure\""),
         source=SOURCES["neuron_oom"]),
    *ACCELERATOR_MEMORY_RULES,
    *SHM_RULES,
    Rule("tp_indivisible", re.compile(r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by "
                                      r"tensor parallel size \((?P<tp_size>\d+)\)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "heads", "tp_size"), source=SOURCES["tp_heads"]),
    Rule("tp_indivisible", re.compile(r"is not divisible by group_size=(?P<group_size>\d+)"), LOADING,
         detail="quant_group", numbers=lambda m: numbers_of(m, "group_size"), source=SOURCES["tp_group"]),
    Rule("tp_indivisible", re.compile(r"AssertionError: (?P<numerator>\d+) is not divisible by (?P<denominator>\d+)"),
         LOADING, detail="kv_heads", numbers=lambda m: numbers_of(m, "numerator", "denominator"),
         source=SOURCES["tp_kv_heads"]),
    *DTYPE_QUANT_RULES,
    # The same selection with no backend for the model's attention on this GPU for other reasons (vLLM 0.11-0.33
    # platforms/cuda.py and rocm.py get_attn_backend_cls; the reasons per backend from v1/attention/backend.py
    # validate_configuration: compute capability, head size, MLA or sparse MLA, sinks, sliding window), e.g.
    # DeepSeek V3.2's sparse MLA below Hopper (blind33/b33-002). A setting listed among the reasons (block size, a
    # KV connector, batch invariance) is in the advice.
    # FlexAttention, the backend vLLM falls back to where FlashAttention cannot run (compute capability below 8.0)
    # or the one VLLM_ATTENTION_BACKEND names, without a feature the model's attention needs (0.9-0.33
    # v1/attention/backends/flex_attention.py; blind48/b48-009: gpt-oss's sliding window)
    Rule("unsupported_architecture", re.compile(r"FlexAttention does not support (?P<feature>sliding window|alibi "
                                                r"slopes|logits soft cap|kv sharing|\w{1,20} attention)"), LOADING,
         detail="flex_attention", source=SOURCES["flex_attention"]),
    # An encoder or encoder-decoder model (Llama 3.2 Vision's cross-attention, Whisper, BERT-like poolers) on an
    # attention backend without encoder attention: every backend's impl raises it (vLLM 0.5-0.34,
    # attention/backends/*.py, v1/attention/backends/*.py; blind67/b67-003: mllama on Gaudi's HPUAttentionImpl)
    Rule("unsupported_architecture", re.compile(r"Encoder self-attention (?:and encoder/decoder cross-attention )?"
                                                r"(?:are|is) not implemented for \w{1,60}"),
         detail="encoder_attention", source=SOURCES["encoder_attention"]),
    Rule("unsupported_architecture", re.compile(r"No valid attention backend found for \S{1,64} with "
                                                r"(?:AttentionSelectorConfig\(|head_size)"), LOADING,
         detail="no_attention_backend", source=SOURCES["no_backend"]),
    # --attention-backend (or VLLM_ATTENTION_BACKEND) naming one that refuses this model or GPU (the same file)
    # vLLM 0.5.1-0.6 attention/backends/flash_attn.py and xformers.py: Gemma-2's logit soft-capping runs only on
    # FlashInfer there (blind34/b34-005: VLLM_ATTENTION_BACKEND set in a script after vLLM had read it); 0.5.1 wrote
    # "withlogits_soft_cap" (vllm #6218)
    Rule("usage_error", re.compile(r"XFormers does not support attention logits soft capping"), LOADING,
         detail="softcap_xformers", source=SOURCES["softcap_xformers"]),
    Rule("usage_error", re.compile(r"Please use Flashinfer backend for models with ?logits_soft_cap"), PROFILING,
         detail="softcap_backend", source=SOURCES["softcap_backend"]),
    Rule("usage_error", re.compile(r"Selected backend \S{1,64} is not valid for this configuration\. Reason: \["),
         LOADING, detail="attention_backend", source=SOURCES["selected_backend"]),
    # vLLM's bitsandbytes loader (0.5-0.26 model_loader/loader.py, later bitsandbytes_loader.py) before the model's
    # class declares the mapping it needs ("No 'packed_modules_mapping' found.", "Ensure this model has
    # 'get_expert_mapping' method."; blind33/b33-007: LlavaForConditionalGeneration on 0.6)
    Rule("quant_unsupported", re.compile(r"(?:MoE )?Model \w{1,128} does not support BitsAndBytes quantization yet"),
         LOADING, detail="bnb_model", source=SOURCES["bnb_model"]),
    # vLLM's native CUTLASS NVFP4 MoE experts refuse data parallelism (FlashInfer's CUTLASS MoE runs it), when the
    # experts are chosen as the weights are set up (blind37/b37-016: an NVFP4 MiniMax-M2 under DP)
    Rule("quant_unsupported", re.compile(r"CutlassExpertsFp4 doesn't support DP"), LOADING, detail="nvfp4_moe_dp",
         source=SOURCES["nvfp4_moe_dp"]),
    # vllm-ascend's graph capture (ACL graph through torch_npu's NPUGraph.capture_begin) failing to get memory: CANN
    # prints "[Error]: Failed to apply for memory." right after the call (blind33/b33-008, a second model on the NPU)
    # (the call's name alone: V1's wrapper quote may cut it there, blind50/b50-004)
    Rule("oom_cudagraph", re.compile(r"AclmdlRICaptureBegin\(capture_stream_,"),
         CUDA_GRAPH, when=conditions.npu_memory_follows, source=SOURCES["acl_capture"]),
    Rule("max_len_exceeds_model", re.compile(
        r"User-specified max_model_len \((?P<max_model_len>\d+)\) is greater than the derived max_model_len "
        r"\((?P<key>\w+)=(?P<derived_max_len>\d+)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "max_model_len", "derived_max_len"), source=SOURCES["max_len"]),
    # Settings vLLM's own config validation refuses: no retry changes them on its own.
    Rule("tp_indivisible", re.compile(r"Total number of hidden layers \((?P<layers>\d+)\) must be divisible by "
                                      r"pipeline parallel size \((?P<pp_size>\d+)\)"), BEFORE_START, detail="pp_layers",
         numbers=lambda m: numbers_of(m, "layers", "pp_size"), source=SOURCES["pp_layers"]),
    Rule("usage_error", re.compile(r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\) (?:is smaller than "
                                   r"max_model_len \((?P<max_model_len>\d+)\)|must be greater than or equal to "
                                   r"max_num_seqs \((?P<max_num_seqs>\d+)\))"), BEFORE_START, detail="batched_tokens",
         numbers=lambda m: numbers_of(m, "max_num_batched_tokens", "max_model_len", "max_num_seqs"),
         source=SOURCES["batched_tokens"]),
    # The number after "max_num_batched_tokens" may be hard-wrapped onto the next line: the head decides. A paste
    # that shortens it keeps "max_tokens_per_mm_item (N) is larger than", which only this raise writes (0.9-0.34;
    # blind170/b170-014, quoted in a commit message without its first words).
    Rule("usage_error", re.compile(r"(?:Chunked MM input disabled but max_tokens_per_mm_item \(|max_tokens_per_mm_item "
                                   r"\((?=\d+\) is larger than))(?P<max_tokens_per_mm_item>\d+)\)"), BEFORE_START,
         detail="mm_budget",
         numbers=lambda m: numbers_of(m, "max_tokens_per_mm_item"), source=SOURCES["mm_budget"]),
    Rule("usage_error", re.compile(r"--enable-auto-tool-choice requires --tool-call-parser"
                                   r"|invalid (?:tool call|reasoning) parser: (?P<parser>\S{0,64}) \(choo?se from"
                                   r"|(?:Tool|Reasoning) parser '[^'\s]{1,64}' not found"),
         BEFORE_START, detail="tool_parser", source=SOURCES["tool_parser"]),
    # vllm serve's check of its flags: each message begins "Error: --flag" (blind63/b63-001; catalogue.py)
    # Not the chat server's "Error: --enable-auto-tool-choice requires tool_parser:'X' which has not been registered",
    # raised from the parser's own failure (a name or an import): its chained cause decides.
    Rule("usage_error", re.compile(r"(?:TypeError|ValueError): Error: --(?![\w-]{1,64} requires tool_parser:')"
                                   r"[a-z][a-z0-9-]{1,64}\b"), BEFORE_START,
         detail="cli_flags", source=SOURCES["cli_flags"]),
    Rule("usage_error", re.compile(r"The supplied chat template (?:string )?\((?P<template>[^\n]{0,200}?)\) "
                                   r"(?:appears path-like, but doesn't exist|looks like a file path, but it failed)"
                                   r"|[Tt]he supplied chat template path doesn't exist"),
         BEFORE_START, detail="chat_template", source=SOURCES["chat_template"]),
    Rule("usage_error", re.compile(r"GPU memory utilization must be less than 1\.0\. Got "
                                   r"(?P<gpu_memory_utilization>[\d.]+)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "gpu_memory_utilization"), source=SOURCES["gpu_utilization_range"]),
    # (vLLM 0.5's allow-list: "Pipeline parallelism is only supported for the following  architectures: [...]",
    # blind48/b48-015)
    Rule("usage_error", re.compile(r"Pipeline parallelism is not supported for this model"
                                   r"|Pipeline parallelism is only supported for the following {1,2}architectures"),
         BEFORE_START, detail="pp_unsupported", source=SOURCES["pp_unsupported"]),
    *SETTINGS_RULES,
    # FP8 block quantization (128x128 blocks) split by tensor parallel into shares that are not whole blocks (vLLM
    # 0.7-0.33 quantization/utils/fp8_utils.py validate_fp8_block_shape and _moe): a line that ends at "is not" is
    # the head of a message wrapped there (blind43/b43-005: a MoE's 768 over TP 8), one wrapped further on is read
    # joined
    # ("Weight input_size_per_partition = N is not" is Marlin's head too: that wording needs its FP8 tail)
    Rule("tp_indivisible", re.compile(r"(?:The output_size of gate's and up's weight|The input_size of down's weight"
                                      r"|Weight output_partition_size) = (?P<size>\d{1,9}) is not(?: divisible by "
                                      r"weight quantization block_[nk] = (?P<block>\d{1,6})|\s{0,4}$)"),
         LOADING, detail="quant_block", numbers=lambda m: numbers_of(m, "size", "block"),
         source=SOURCES["fp8_block_tp"]),
    Rule("tp_indivisible", re.compile(r"Weight input_size_per_partition = (?P<size>\d{1,9}) is not divisible by "
                                      r"weight quantization block_k = (?P<block>\d{1,6})"),
         LOADING, detail="quant_block", numbers=lambda m: numbers_of(m, "size", "block"),
         source=SOURCES["fp8_block_tp"]),
    Rule("tp_indivisible", re.compile(r"The input size is not aligned with the quantized weight shape"
                                      r"|Weight (?:out|in)put_size_per_partition = (?P<size>\d+) is not divisible by "
                                      r"min_thread_[nk] = (?P<min_thread>\d+)"), LOADING, detail="quant_group",
         numbers=lambda m: numbers_of(m, "size", "min_thread"), source=SOURCES["quant_tp_shape"]),
    # Marlin's own check as it repacks the weights (csrc gptq_marlin_repack.cu: TORCH_CHECK(size_n % tile_n_size ==
    # 0, ...)): a layer's share, or at one GPU its whole width, is no multiple of 64 (blind111/b111-001)
    Rule("tp_indivisible", re.compile(r"size_[nk] = (?P<size>\d{1,9}) is not divisible by tile_[nk]_size = "
                                      r"(?P<tile>\d{1,4})"), LOADING, detail="marlin_tile",
         numbers=lambda m: numbers_of(m, "size", "tile"), source=SOURCES["marlin_repack"]),
    Rule("quant_unsupported", re.compile(r"(?P<method>[\w-]{1,64}) quantization is currently not supported in "
                                         r"(?P<platform>[\w-]{1,32})"), BEFORE_START, detail="platform",
         source=SOURCES["quant_platform"]),
    # vLLM 0.5-0.33 compressed_tensors.py _get_scheme_from_parts: none of the schemes this build has (for this GPU)
    # matches the checkpoint's quantization_config.
    Rule("quant_unsupported", re.compile(r"No compressed-tensors compatible scheme was found"), LOADING,
         source=SOURCES["compressed_tensors_scheme"]),
    # vLLM 0.6-0.33 choose_*_linear_kernel (model_executor/kernels/linear/__init__.py at 0.32) and the MXFP4 MoE
    # oracle (fused_moe/oracle/mxfp4.py): no kernel of this build implements the checkpoint's weight format on this
    # GPU (blind19/b19-011: FP8 linear layers on a GB10; b19-006: an MXFP4 MoE backend without its conversion).
    Rule("quant_unsupported", re.compile(r"Failed to find a kernel that can implement the (?P<layer>[\w ]{1,40}?) "
                                         r"linear layer|Unsupported mxfp4_backend(?: for Mxfp4MoEMethod)?: |No "
                                         r"(?:FP8|Int8|MXFP4|Mxfp4|NvFp4|W4A8(?: Int8)?|WNA16) MoE backend supports"),
         LOADING, detail="no_kernel", source=SOURCES["no_kernel"]),
    Rule("quant_unsupported", re.compile(r"Unknown quantization method: (?P<method>\S{0,64})\. Must be one of"),
         BEFORE_START, detail="unknown_method", source=SOURCES["unknown_quant"]),
    *GPU_COUNT_RULES,
    # Nodes on different Ray or Python versions: Ray refuses to connect them (ray/_private/utils.py
    # check_version_info: "Version mismatch: The cluster was started with: Ray: ... Python: ...").
    Rule("version_mismatch", re.compile(r"Version mismatch: [Tt]he cluster was started with"), BEFORE_START,
         source=SOURCES["ray_version"]),
    *NETWORK_RULES,
    Rule("disk_full", re.compile(r"No space left on device|\[Errno 28\]"), source=SOURCES["disk"]),
    # A quota, not the disk: the same failed write (torch.compile's cache under ~/.cache/vllm, the Hub's cache) on a
    # cluster's home or project filesystem (blind20/b20-001)
    Rule("disk_full", re.compile(r"Disk quota exceeded|\[Errno 122\]"), detail="quota", source=SOURCES["disk_quota"]),
    # vLLM 0.32+ device_allocator/__init__.py: sleep mode on a platform that has no sleep-mode allocator at all
    Rule("usage_error", re.compile(r"Sleep mode allocator is not available on platform"), BEFORE_START,
         detail="sleep_mode_platform", source=SOURCES["sleep_mode_platform"]),
    Rule("usage_error", re.compile(r"NUMA binding was requested, but vLLM could not detect the GPU-to-NUMA topology"),
         BEFORE_START, detail="numa_bind", source=SOURCES["numa_bind"]),
    # PyTorch's lazy CUDA init in a forked child of a process that had already initialised CUDA (torch/cuda/
    # __init__.py _lazy_init): the program touched the GPU before vLLM forked its workers. vLLM 0.32 switches to
    # spawn itself when it sees CUDA initialised (utils/system_utils.py _maybe_force_spawn); a path that does not,
    # or an older release, fails so (blind11/b11-006: 0.5.4; blind22/b22-008). torch_npu says the same of an Ascend
    # NPU under vllm-ascend (blind39/b39-008).
    Rule("usage_error", re.compile(r"Cannot re-initialize (?:CUDA|NPU) in forked subprocess"), BEFORE_START,
         detail="fork_cuda", source=SOURCES["fork_cuda"]),
    *FILE_RULES,
    *VERSION_RULES,
    Rule("gpu_busy", re.compile(r"CUDA-capable device\(s\) is/are busy or unavailable"), BEFORE_START,
         detail="exclusive", source=SOURCES["exclusive_gpu"]),
    Rule("usage_error", re.compile(r"Quantization method specified in the model config \((?P<config_method>[\w-]{1,64})"
                                   r"\) does not match the quantization method specified in the [`']?quantization[`']? "
                                   r"argument \((?P<argument_method>[\w-]{1,64})\)"), BEFORE_START,
         detail="quantization_mismatch", source=SOURCES["quant_mismatch"]),
    # --quantization naming a method whose config file the checkpoint lacks: an unquantized model, or one quantized
    # another way (vLLM 0.2-0.33 model_loader/weight_utils.py get_quant_config; blind3/b3-023, blind26/b26-001)
    Rule("usage_error", re.compile(r"Cannot find the config file for (?P<argument_method>[\w-]{1,64})"), BEFORE_START,
         detail="quant_config_missing", source=SOURCES["quant_config_missing"]),
    # A local path that does not exist is taken for a Hub id, which a path can never be (0.32-0.33).
    Rule("model_access", re.compile(r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
                                    r"'(?P<path>[./~][^']{0,4096})'"), BEFORE_START, detail="missing_local_path",
         source=SOURCES["hub_path"]),
    # Any other name that is neither a folder nor a valid Hub id (the head of both of validate_repo_id's messages).
    Rule("model_access", re.compile(r"HFValidationError: Repo id must"), BEFORE_START,
         source=SOURCES["hub_validation"]),
    # Not a bare "trust_remote_code=True": the engine's config line prints that when it is set.
    Rule("remote_code_required", re.compile(r"(?:setting|pass(?:ing)? the argument|set the option) "
                                            r"[`']?trust_remote_code=[Tt]rue"
                                            # transformers dynamic_module_utils.py resolve_trust_remote_code (4.3x)
                                            r"|contains custom code which must be executed to correctly load"
                                            r"|requires you to execute the (?:configuration|modeling) file"
                                            r"|Failed to load the model config\. If the model is a custom model"),
         BEFORE_START, source=SOURCES["remote_code"]),
    # transformers' auto_factory.py, under vLLM's Transformers fallback (0.7.3+): "Unrecognized configuration class
    # <class '...Gemma3Config'> for this kind of AutoModel: AutoModel." (vllm #14723)
    # (and vLLM 0.4-0.9's Neuron loader, model_loader/neuron.py: "... are not supported on Neuron for now. Supported
    # architectures: [...]"; blind94/b94-001)
    Rule("unsupported_architecture", re.compile(r"Model architectures \[(?P<architectures>[^\]]{0,500})\] are not "
                                                r"supported (?:on Neuron )?for now"
                                                r"|Unrecognized configuration class <class '[^']{1,300}'> for this "
                                                r"kind of AutoModel"
                                                # tpu-inference raising (not its warning that falls back to
                                                # vLLM's PyTorch class): blind23/b23-011
                                                r"|UnsupportedArchitectureError: Model architectures \[[^\]]{0,500}\] "
                                                r"not registered in tpu-inference"),
         BEFORE_START, when=conditions.not_a_fallback, source=SOURCES["architecture"]),
    # vLLM's MiniCPM-V class dispatches on the checkpoint's version (model_executor/models/minicpmv.py, 0.5-0.10).
    Rule("unsupported_architecture", re.compile(r"Currently, MiniCPMV only supports versions"), BEFORE_START,
         source=SOURCES["minicpmv_version"]),
    # vLLM 0.6-0.10 ModelConfig._init_multimodal_config: a multimodal option for a model this vLLM does not treat as
    # multimodal, most often a vision model newer than it (GLM-4.1V, Kimi-VL, Qwen3-VL on 0.9).
    Rule("unsupported_architecture", re.compile(r"`?(?:limit_mm_per_prompt|mm_processor_kwargs)`? is only supported "
                                                r"for multimodal models"), BEFORE_START, detail="not_multimodal",
         source=SOURCES["not_multimodal"]),
    # vLLM 0.8+ has no class of its own for the architecture and transformers' class cannot stand in for one.
    Rule("unsupported_architecture", re.compile(r"(?P<architecture>\w{1,128}) has no vLLM implementation and the "
                                                r"Transformers implementation is not compatible with vLLM"
                                                r"|The Transformers implementation of \w{1,128} is not compatible "
                                                r"with vLLM|Cannot find model module\. '\w{1,128}' is not a "
                                                r"registered model"), BEFORE_START,
         source=SOURCES["transformers_fallback"]),
    # The Transformers backend standing in for an architecture vLLM has no class for, asked for tensor parallelism
    # its class has no plan for (blind97/b97-003: Gemma 4 under vLLM 0.7.3 at TP=2).
    Rule("unsupported_architecture", re.compile(r"Trying to run tensor parallelization but the model does not support "
                                                r"it yet|\S{1,200} does not support tensor parallel(?: yet!|\. )"),
         BEFORE_START, detail="transformers_no_tp", source=SOURCES["transformers_no_tp"]),
    Rule("unsupported_architecture", re.compile(r"GGUF model with architecture (?P<gguf_architecture>\S{1,64}) is "
                                                r"not supported yet"
                                                # transformers' own GGUF loader (modeling_gguf_pytorch_utils.py),
                                                # which vLLM calls for a GGUF's config (blind28/b28-003)
                                                r"|ValueError: Architecture (?P<architecture>[\w-]{1,64}) not "
                                                r"supported\s*$"),
         BEFORE_START, source=SOURCES["gguf_architecture"]),
    # "sendinitial": vLLM's own missing space (V1, 0.11-0.16).
    Rule("startup_timeout", re.compile(r"Timed out waiting for engine core processes to start"
                                       r"|Timed out waiting for engines to send ?initial message"
                                       # the raise line Python prints in the traceback, when the paste stops
                                       # before the message (core_client.py; blind23/b23-020)
                                       r"|raise TimeoutError\(\s*\"Timed out waiting for engines to send\"\s*$"),
         source=SOURCES["startup_timeout"]),
    # vllm-omni's orchestrator waiting --stage-init-timeout for a stage's engine process (its
    # engine/async_omni_engine.py, as the log names it; blind40/b40-006, a stage whose weights were incomplete), and
    # its engine waiting --init-timeout for the orchestrator itself (omni_engine_base.py 0.30; blind77/b77-001)
    Rule("startup_timeout", re.compile(r"Timed out waiting for READY from \w{0,40}EngineCore\w{0,40} after "
                                       r"(?P<waited_s>\d{1,6})s|Orchestrator did not become ready within "
                                       r"(?P<waited_s2>\d{1,6})s"), detail="omni_stage",
         numbers=lambda m: {"waited_s": int(m.group("waited_s") or m.group("waited_s2"))},
         source=SOURCES["omni_stage_timeout"]),
    # The kubelet giving up on a start (failureThreshold x periodSeconds of failed startup probes), as `kubectl
    # describe pod` and `kubectl get events` print it. One "Startup probe failed: ..." line is a probe that failed
    # once, while the start may still be going on: not this.
    Rule("startup_timeout", re.compile(r"Container [a-z0-9][-a-z0-9]{0,62} failed startup probe, will be restarted"),
         detail="startup_probe", source=SOURCES["startup_probe"]),
)
