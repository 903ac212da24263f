"""Which failure rules a log line can match: a prefilter of the words the rules spell, so a long log is read by a
few regexes per line, not by every rule (issue 28)."""

from __future__ import annotations

from vllm_guard.diagnose.logread import MAX_LINE_CHARS, any_of
from vllm_guard.diagnose.rule import Rule
from vllm_guard.diagnose.rules import RULES

# Cheap prefilters: a line without one of these words cannot match a rule, a stage marker or a
# setting, so a 100k-line log is scanned by a few regexes, not a hundred. findall reports non-overlapping matches:
# a word that can swallow another's start ("HIP out of" over "out of memory") hides it, so none such is kept
# (tests/test_explain_collected.py tries the words over every real log and the accelerators' OOM lines).
_WORDS = (
    "Free memory on device", "max seq len", "MTP speculative decoding layer", "will falsely use random",
    "parser '", "HarmonyError", "nvshmem detect topo", "Unable to initialize any transports", "not a valid JSON file",
    "Unable to load vocabulary", "This modeling file requires", "Failed to import Triton kernels",
    "Device acquire failed", "tensor parallelization but", "no module or parameter named", "Mamba cache blocks",
    "does not divide num_groups", "LMCache cannot serve", "bishengir-compile", "cannot be larger than the number",
    "Cannot assign requested address", "ZMQError: Address", "Errno 99", "Could not find nvcc", "ROCR_VISIBLE_DEVICES",
    "Duplicate GPU detected", "EPLB is not supported",
    "does not yet support: ", "To support LoRA for MoE", "expected target modules", "invalid device function",
    "invalid kernel file",
    "number of tokens that can be", "No available memory", "Cannot auto-fit", "Error in memory profiling",
    "Failed to load model", "out of memory", "OutOfMemoryError", "ALLOC_FAILED", "PT_DEVMEM", "/dev/shm", "bus error",
    "Bus error",
    "SIGBUS", "num_speculative_tokens", "NotExistError", "does not exist!", "not exists on either",
    "libstreamer due",
    "shared memory", "divisible", "Bfloat16", "not supported", "FP8 KV cache", "No valid attention backend",
    "User-specified max_model_len", "World size", "DP adjusted", "Failed to infer device", "Errno 98", "No space left",
    "Errno 48", "Errno 28", "Gated", "error:", "Repo id must be", "Available memory on node",
    "gated repo", "Client Error", "RepositoryNotFound", "Repository Not Found",
    "Invalid repository", "valid model identifier", "Invalid user token", "invalid credentials", "trust_remote_code",
    "requires you to execute", "Failed to load the model config", "does not recognize", "Timed out waiting",
    "Out of memory", "oom", "OOM", "Killed process", "Failed core proc", "exit code", "exited with code", "status=",
    "Available KV cache memory: ", "Quantization scheme", "The number of required", "memory usage threshold",
    "Cannot provide a placement group", "Current node has no", "Version mismatch", "Watchdog caught",
    "ncclRemoteError", "network error",
    "NCCL WARN", "Gloo", "gloo/transport", "DistNetworkError", "DistStoreError", "custom code which must",
    "placement group bundle index", "Ray does not allocate", "Tried to allocate", "OfflineModeIsEnabled",
    "outgoing traffic", "requested files in the", "couldn't connect", "Max retries exceeded", "404 Client Error",
    "EntryNotFoundError", "does not appear to have a file", "RevisionNotFoundError", "undefined symbol",
    "cannot open shared object", "Torch not compiled", "no kernel image", "driver on your system", "driver version is",
    "busy or unavailable", "Quantization method specified", "Unrecognized configuration class",
    "does not support", "max_num_batched_tokens", "Chunked MM input disabled",
    "max_tokens_per_mm_item", "must be called with a dataclass",
    "--tool-call-parser", "parser: ", "supplied chat template",
    "GPU memory utilization must be", "Unknown quantization method", "No CUDA GPUs are available",
    "forward compatibility was attempted", "cannot import name",
    "GGUF model with architecture", "Pipeline parallelism is not supported",
    "max_lora_rank", "The input size is not aligned", "is not divisible by min_thread", "quantization is currently",
    "Server Error", "Read timed out", "No available node types", "HFValidationError", "use float16 instead",
    "invalid device ordinal", "rope_scaling", "TokenizersBackend", "unsupported toolchain",
    "unsupported display driver", "torchvision::", "has no attribute",
    "is not compatible with vLLM", "Cannot find any model weights", "deserializing header", "PytorchStreamReader",
    "Can't load the configuration", "Incorrect path_or_model_id", "Can't load tokenizer", "No supported config format",
    "Cannot find model module", "Could not detect config format", "failed to listen on any", "failed to bind to",
    "unable to mmap", "Client error '", "Server error '", "FP8 quantized models",
    "to be scheduled", "compressed-tensors compatible",
    "MiniCPMV only supports", "only supported for multimodal", "checkpoint is very new", "nvidia-container-cli",
    "not initialized from checkpoint", "rtSetDevice", "invalid choice: 'vllm-serve'",
    "device < num_gpus", "with CUDA capability sm_", "Torchair graph mode only", "enable graph mode and eager",
    "TASK_QUEUE_ENABLE = 2", "Warmup shape ", "doesn't match pattern",
    "Failed to set visible device",
    "socketStartConnect", "socketPollConnect", "opp_kernel package",
    "is already used by a Transformers config", "memory reserved for KV Cache",
    "KeyError: '", "is restricted", "vllm: ", "ImportError: lib", "OSError: lib", "toolkit headers are",
    "failed to start and listen", "moe_backend=", "one unified type", "Failed to find function", "name 'vllm_",
    "_OpNamespace", "Requested Range Not", "vocab_sizes", "build with CUDA support", "quant_method is not None",
    "in memory space", "For FP8 Fused MoE", "computeCapability not", ": No such file or",
    "failed startup probe", "Failed to find a kernel", "Unsupported mxfp4_backend", "flash attention extensions",
    "Disk quota exceeded", "Errno 122", "NUMA binding", "Numba needs NumPy", "Failed to find C compiler",
    "No working C", "allocator is not available", "Found unknown quantization", "Available memory: 0, total memory",
    "referenced in index but missing", "infer_schema", "Selected backend", "BitsAndBytes quantization yet",
    "AclmdlRICaptureBegin", "logits_soft_cap", "nrt_tensor_allocate", "driver node id",
    "integrity check failed",
    "# GPU blocks: ", "No module named", "not a string",
    "in forked subprocess", "RESOURCE_EXHAUSTED", "UnsupportedArchitectureError", "raise TimeoutError",
    "mismatched major/minor versions", "Cannot find the config file for", "not implemented for",
    "NIXL is not available", "VLLM_USE_V1=", "Sliding window for some",
    "Please install", "is required for", "version is wrong", "requires installation", "is required to",
    "mount segment: RPC_", "mount_segment_to_master_failed",
    "internal error", "ncclInternalError", "Proxy Call to rank", "NCCL INFO",
    "No node info found", "NCCL cannot be captured",
    "unresolvable CDI devices", "so cannot found", "did not become ready within",
    "nodes are available", "collective nonSFG",
    "TPU initialization failed", "TPU is already in use",
    "GLIBC_", "is not defined for",
    "The client socket has failed to connect to", "TCP client failed to connect/validate", "The server socket on",
    "argument --quantization", "No tokenizer file found in directory",
    "Architecture", "is not equal to tensor_model_parallel_size", "invalid JSON in header",
    "is allocated by PyTorch", "CutlassExpertsFp4", "gate's and up's weight", "down's weight",
    "input_size_per_partition", "output_partition_size", "DeepGEMM backend", "requires DeepGEMM",
    "Pipeline parallelism is only", "Speculative decoding with draft", "Expected both speculative_model",
    "Unknown RoPE scaling type", "Permission denied", "local_world_size", "TensileLibrary", "Failed to connect to GCS",
    "MLA kv_data_type", "FlexAttention does not support", "custom_all_reduce", "Failed to bind the IP port",
    "and specific port", "unhandled ", "unique IP address",
    "response from front-end", "Not enough resources to allocate", "Aiter MLA only supports",
    "FusedMoE flashinfer kernels", "already initialized", "MoE backend supports", "Error: --",
    "When using LoRA, vocab size", "Invalid attention backend: '", "logits soft capping",
    "VLLM batch_invariant mode", "is_act_and_mul=False is supported only", "Valid options",
    "Unrecognized model in", "Failed to load the tokenizer", "Lack of device memory", "SYS_ENOMEM", "default metallib",
    "Failed to load device library", "without libuv support",
    "too old to be supported by the triton", "cannot find -lcuda",
    "cutlass_scaled_mm kernel", "Prequant BitsAndBytes", "got an unexpected keyword argument",
    "Not enough memory ",
    "nrt_allocate_neuron_cores", "CK 2-stage MoE", "FlyDSL port", "is not available and required",
    "flash-attention/hopper/", "'shortest_edge' and 'longest_edge'", "untagged enum", "error sending request",
)
RULE_WORDS = any_of(_WORDS)
# Each rule is tried only on a line holding one of the words its own pattern spells (every rule spells one: a test
# keeps it so): a log of a million error lines costs one findall per line, not a hundred searches (issue 28).
# tests/test_explain_collected.py checks the dispatch against trying every rule.
_BY_WORD: dict[str, tuple[int, ...]] = {w: tuple(i for i, r in enumerate(RULES) if w in r.pattern.pattern)
                                        for w in _WORDS}
_ALWAYS = tuple(i for i, r in enumerate(RULES) if not any(w in r.pattern.pattern for w in _WORDS))


def rules_for(text: str) -> tuple[Rule, ...] | None:
    """The rules that can match a line, in the table's order; None when the line holds no word of the
    prefilter (it can match no rule, and says nothing of an exit or a kill either)."""
    words = frozenset(RULE_WORDS.findall(text[:MAX_LINE_CHARS]))
    if not words:
        return None
    picked = _PICKED.get(words)
    if picked is None:
        ids = set(_ALWAYS).union(*(_BY_WORD[w] for w in words))
        picked = tuple(RULES[i] for i in sorted(ids))
        if len(_PICKED) < 4096:  # bounded: a hostile log cannot grow it
            _PICKED[words] = picked
    return picked


_PICKED: dict[frozenset[str], tuple[Rule, ...]] = {}  # the word sets seen (real logs: a few dozen)
