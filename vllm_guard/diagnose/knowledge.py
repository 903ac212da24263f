"""What each failure class means, what helps and what does not (domain.md's table, in words)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vllm_guard.diagnose.classify import Diagnosis


@dataclass(frozen=True)
class Advice:
    explanation: str
    helps: tuple[str, ...]
    does_not_help: tuple[str, ...] = ()


ADVICE: dict[str, Advice] = {
    "gpu_busy": Advice(
        "Other processes hold GPU memory: vLLM wants total x gpu-memory-utilization free at start-up and found "
        "less. The utilization is a fraction of the GPU's total memory, not of what is free.",
        ("free the GPU (check who holds it: nvidia-smi, or `vllm-guard snapshot`)",
         "lower --gpu-memory-utilization to what is really free", "wait for the other job to finish",
         "stop orphaned VLLM::EngineCore processes you own; use KillMode=mixed in their unit"),
        ("raising --gpu-memory-utilization",)),
    "kv_cache_too_small": Advice(
        "One request of max-model-len tokens needs more KV cache than is left after the weights and activations. "
        "vLLM takes max-model-len from config.json unless told otherwise: the most common failed start.",
        ("lower --max-model-len (to vLLM's estimate when it gives one)",
         "raise --gpu-memory-utilization if the GPU really has the memory free",
         "--kv-cache-dtype fp8 (compute capability 8.9 natively; 8.0-8.6 through FlashInfer)",
         "more GPUs with tensor parallel"),
        ("lowering --max-num-seqs", "--enforce-eager alone")),
    "no_kv_memory": Advice(
        "Weights, the profiling pass's activations and the CUDA-graph estimate used the whole budget: nothing "
        "is left for KV cache blocks.",
        ("lower --max-num-batched-tokens", "lower --max-num-seqs", "--enforce-eager (no CUDA-graph memory)",
         "raise --gpu-memory-utilization if the GPU has the memory", "a quantized checkpoint"),
        ("lowering --max-model-len",)),
    "oom_loading": Advice(
        "The GPU ran out of memory while loading the weights: they do not fit at this utilization.",
        ("a smaller or pre-quantized checkpoint (AWQ, GPTQ, FP8)", "more GPUs (--tensor-parallel-size)",
         "raise --gpu-memory-utilization if the GPU has room"),
        ("lowering --max-model-len", "lowering --max-num-seqs", "--quantization awq on a non-AWQ checkpoint")),
    "oom_profiling": Advice(
        "The GPU ran out of memory in the profiling pass (a dummy batch of max-num-batched-tokens, then the "
        "sampler warm-up with max-num-seqs requests).",
        ("lower --max-num-batched-tokens", "lower --max-num-seqs",
         "multimodal models: --limit-mm-per-prompt", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when the "
         "message says memory is reserved but unallocated"),
        ("lowering --max-model-len",)),
    "oom_cudagraph": Advice(
        "The GPU ran out of memory while capturing CUDA graphs, after the KV cache was sized.",
        ("--enforce-eager (10-20% less throughput on short answers)", "lower --max-num-seqs (fewer capture sizes)",
         "lower --gpu-memory-utilization slightly"),
        ("lowering --max-model-len",)),
    "host_oom": Advice(
        "The kernel or cgroup OOM killer ended vLLM: weights are read through host RAM while loading. It leaves "
        "no Python error, only a SIGKILL (exit 137) and a line in dmesg or the journal.",
        ("host RAM (and the cgroup limit: Docker --memory, systemd MemoryMax=) of at least 2x the weight size",
         "add swap", "fewer other processes on the host"),
        ("any vLLM flag",)),
    "shm_exhausted": Advice(
        "/dev/shm is too small for vLLM's shared-memory ring buffers or NCCL: Docker gives 64 MiB by default.",
        ("docker run --ipc=host", "docker run --shm-size=8g", "a larger /dev/shm on the host"),
        ("lowering vLLM's memory settings",)),
    "tp_indivisible": Advice(
        "The tensor-parallel size does not divide the model: attention heads, KV heads or quantization groups "
        "must split evenly over the GPUs.",
        ("a --tensor-parallel-size that divides the head count (and the KV heads)",), ()),
    "dtype_unsupported": Advice(
        "The requested dtype is not supported on this GPU (bfloat16 needs compute capability 8.0).",
        ("--dtype half on older GPUs (T4, V100)",), ()),
    "quant_unsupported": Advice(
        "The quantization method or the KV-cache dtype needs a newer GPU than this one.",
        ("a checkpoint in a format this GPU supports", "--kv-cache-dtype auto"), ()),
    "max_len_exceeds_model": Advice(
        "--max-model-len is longer than the model's own maximum from config.json; vLLM refuses it.",
        ("--max-model-len at most the derived maximum",
         "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only if you know the model handles longer contexts"), ()),
    "too_few_gpus": Advice(
        "tensor x pipeline parallel needs more GPUs than vLLM can see on this node, or, on Ray, than the cluster's "
        "placement group can have: vLLM then waits up to 1800 s, logging the wait every few seconds.",
        ("a smaller --tensor-parallel-size or --pipeline-parallel-size", "check CUDA_VISIBLE_DEVICES",
         "Ray for multi-node; on Ray, `ray status` shows the GPUs each node offers (`vllm-guard check` names the "
         "node that is short)"), ("waiting longer for the placement group",)),
    "network": Advice(
        "NCCL or Gloo could not connect vLLM's workers across the nodes: they picked the wrong interface or IP "
        "(Gloo falls back to 127.0.0.1, vllm #7815), VLLM_HOST_IP names another address than Ray's, or a "
        "firewall blocks the ports between the nodes.",
        ("on every node, before `ray start`: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME = the interface of the "
         "nodes' network, VLLM_HOST_IP = the address Ray registered the node under (docs/ray.md)",
         "open the ports between the nodes", "NCCL_DEBUG=INFO shows the interface NCCL chose"),
        ("lowering memory settings", "retrying unchanged")),
    "version_mismatch": Advice(
        "The nodes run different Ray or Python versions (or vLLM, torch): Ray refuses to join them, or they "
        "fail late and obscurely.",
        ("the same vLLM, torch, Ray and Python on every node (one container image)",
         "`vllm-guard check` lists each node's versions"), ("restarting",)),
    "port_in_use": Advice(
        "Another process already listens on the API port.",
        ("choose another --port", "stop the server that holds it (ss -ltnp shows it)"), ()),
    "disk_full": Advice(
        "The disk filled up while downloading the weights.",
        ("free space where the Hugging Face cache lives", "point --download-dir or HF_HOME at a larger disk"), ()),
    "model_access": Advice(
        "The model could not be read: a wrong id or path, a gated repository, or a missing or invalid token.",
        ("check the id", "accept the licence on the Hub and set HF_TOKEN", "use a local path"), ()),
    "remote_code_required": Advice(
        "The model ships its own code: vLLM needs --trust-remote-code to run it.",
        ("--trust-remote-code, after reviewing the repository's code",), ()),
    "unsupported_architecture": Advice(
        "This vLLM does not support the model's architecture.",
        ("a newer vLLM", "a supported variant of the model"), ()),
    "startup_timeout": Advice(
        "The start did not finish in time: a hung NCCL set-up, a slow download or a very slow disk.",
        ("look at the last lines for the step that hung", "retry once", "a longer startup timeout for large models"),
        ()),
    "startup_hang": Advice(
        "The start stopped moving: no new phase, no new kind of log line, no bar, no download bytes and no change "
        "in GPU memory for guard.stall-timeout, while vLLM stayed alive. The stage says where it waits.",
        ("read the stacks recorded with the attempt (`vllm-guard attempts --json`)", "the stage's own advice"),
        ("starting the same hang again unchanged",)),
    "first_request_failed": Advice(
        "vLLM answered /health, but its first real request failed: the server is up and cannot serve. The "
        "evidence is vLLM's own answer.",
        ("a missing chat template: pass --chat-template, or serve only /v1/completions with "
         "guard.first-request = false", "a tokenizer error: check the model's tokenizer files",
         "a timeout: a longer guard.first-request-timeout for a cold cache", "401: the API key the guard sends is "
         "the profile's --api-key; check VLLM_API_KEY in the environment"),
        ("restarting unchanged",)),
    "usage_error": Advice(
        "vLLM refused its own command line before starting (argparse, exit status 2): an option this vLLM does "
        "not know, or a value it does not accept. The line after 'error:' names it.",
        ("fix or remove the option in the profile or the command line",
         "`vllm serve --help` of the installed vLLM lists the options it knows"),
        ("retrying: the same command line is refused the same way",)),
    "gpu_oom": Advice(
        "The GPU ran out of memory (PyTorch's CUDA out-of-memory error), but the log does not show the stage: no "
        "progress line and no traceback frame says whether the weights, the profiling pass, the KV cache or the "
        "CUDA graphs were being allocated, and each needs a different change.",
        ("the full log of the start: vLLM's lines before the error name the stage",
         "the OOM's figures: 'Tried to allocate' near the weights' size points at loading, a small allocation "
         "with little free at profiling or CUDA graphs; 'Process N has X GiB memory in use' is another process",
         "`vllm-guard check PROFILE` predicts which stage overflows"),
        ("changing a setting before the stage is known",)),
    "preflight_failed": Advice(
        "The guard's preflight refused to start vLLM: a check of the profile against this machine failed, so vLLM "
        "never ran. The failed checks and their fixes are the evidence below (the full table is in the log).",
        ("apply the fix of each failed check to the profile, then `vllm-guard check PROFILE` again",
         "`vllm-guard check PROFILE --json` gives one set of values that passes, when there is one",
         "`--force` starts vLLM anyway (it will most likely fail the way the check says)"),
        ("restarting the unit unchanged: the same check fails again",)),
    "unknown": Advice(
        "The log does not show a failure the guard recognises with confidence; the last error lines are shown.",
        ("read the evidence lines", "run vLLM with VLLM_LOGGING_LEVEL=DEBUG for more detail"), ()),
}

PROFILING_ASSERTION = Advice(
    "vLLM's memory profiler saw free memory grow during profiling: another process on the same GPU released "
    "memory while vLLM measured. It is not a lack of memory.",
    ("start again unchanged, when the other process is steady", "give vLLM a GPU of its own"),
    ("lowering --gpu-memory-utilization",),
)

KILLED = Advice(
    "vLLM was killed by SIGKILL (exit 137 or -9), and nothing in the log says by whom: the host's or the "
    "container's OOM killer (most likely while the weights are read through host memory), `docker kill`, a "
    "watchdog or a person. The kernel says which: `dmesg | grep -i 'killed process'` or `journalctl -k`.",
    ("if the kernel logged 'Out of memory: Killed process': host RAM (and the cgroup limit) of at least 2x the "
     "weight size, or swap", "if a watchdog or a start-up timeout killed it: a longer timeout for large models"),
    ("guessing a vLLM flag before knowing who sent the signal",),
)

# Advice for a reading within a class (Diagnosis.detail) that says more than the class's own.
RAY_HEAD_WITHOUT_GPU = Advice(
    "On Ray, vLLM's driver runs where `vllm serve` runs, and vLLM (ray_utils.py) wants a GPU on that node for its "
    "first worker: this node has none that Ray can schedule.",
    ("run `vllm serve` (or `vllm-guard serve`) on a node with a GPU, joined to the cluster",
     "check `ray status`: the node's GPU may be held by another job"),
    ("adding GPUs to the other nodes",),
)

HUB_UNREACHABLE = Advice(
    "The Hugging Face Hub could not be reached: offline mode (HF_HUB_OFFLINE=1), no network, a proxy or a firewall. "
    "vLLM resolves a model id on the Hub even when the files are cached (vllm #3719).",
    ("the model's local path instead of its id (`hf download ID --local-dir DIR`, then --model DIR)",
     "HF_HUB_OFFLINE=1 only once the config, tokenizer and weights are all in the cache",
     "HF_ENDPOINT for a mirror, HTTPS_PROXY for a proxy"),
    ("raising timeouts before the Hub answers at all", "changing vLLM's memory settings"),
)
CONFIG_MISSING = Advice(
    "The model repository or folder has no config.json where vLLM looked: a wrong id or path, or the model lives on "
    "another revision or in a subfolder.",
    ("check the id and the files on the Hub", "--revision (and --tokenizer-revision) for a model on another branch",
     "a local folder that holds config.json itself"), ("a token, when the Hub answered 404 rather than 401/403",),
)
EXTENSION_ABI = Advice(
    "A compiled extension (vLLM's own, or flash-attn, xformers) was built for another torch or CUDA than the one "
    "installed: the loader finds an undefined C++ symbol or a missing CUDA library.",
    ("install vLLM in a fresh virtual environment and let it pin its torch (`pip install vllm==X`)",
     "rebuild or remove a separately installed flash-attn or xformers (vLLM ships its own kernels)",
     "a wheel built for the CUDA the driver and image have"), ("restarting", "changing vLLM's settings"),
)

GPU_ARCH = Advice(
    "The installed torch or vLLM has no kernels for this GPU's compute capability (a new GPU under an older "
    "wheel: Blackwell's sm_100/sm_120 needs CUDA 12.8 builds).",
    ("a vLLM and torch built for this GPU (the CUDA 12.8+ wheels for Blackwell), in a fresh virtual environment",
     "`python -c 'import torch; print(torch.cuda.get_arch_list())'` lists the architectures the torch has"),
    ("changing vLLM's settings", "restarting"),
)
DRIVER_TOO_OLD = Advice(
    "The NVIDIA driver is older than the CUDA runtime that torch and vLLM were built with.",
    ("a newer NVIDIA driver (nvidia-smi shows the CUDA version it supports)",
     "a vLLM and torch built for the CUDA the driver supports"), ("changing vLLM's settings",),
)
EXCLUSIVE_GPU = Advice(
    "The GPU is in Exclusive Process compute mode and another process already holds it, or it is unavailable.",
    ("`nvidia-smi -q -d COMPUTE` shows the mode, `nvidia-smi` who holds the GPU", "wait for the other process",
     "another GPU (CUDA_VISIBLE_DEVICES)"), ("lowering --gpu-memory-utilization",),
)
QUANT_MISMATCH = Advice(
    "--quantization names another method than the checkpoint's own (its config.json's quantization_config).",
    ("drop --quantization: vLLM reads the method from the checkpoint", "or set it to the checkpoint's method"),
    ("retrying unchanged",),
)

MODEL_DTYPE = Advice(
    "This model type refuses the dtype asked for (vLLM lists gemma2, gemma3 and a few others as numerically "
    "unstable in float16).",
    ("--dtype bfloat16 (compute capability 8.0 or newer)", "--dtype float32 on older GPUs, at twice the memory"),
    ("retrying unchanged",),
)

PP_LAYERS = Advice(
    "This vLLM splits the model's layers evenly across pipeline stages, and the layer count is not divisible by "
    "--pipeline-parallel-size.",
    ("a --pipeline-parallel-size that divides the layer count", "tensor parallelism instead, where the heads allow",
     "a newer vLLM, which splits layers unevenly (VLLM_PP_LAYER_PARTITION)"), ("retrying unchanged",),
)
BATCHED_TOKENS = Advice(
    "vLLM's scheduler refuses --max-num-batched-tokens: with chunked prefill off it must hold a whole prompt "
    "(at least --max-model-len), and it must be at least --max-num-seqs.",
    ("--max-num-batched-tokens at least the max-model-len (and max-num-seqs) it names",
     "or --enable-chunked-prefill, or a smaller --max-model-len"), ("retrying unchanged",),
)
MM_BUDGET = Advice(
    "A multimodal model's single image (or audio, video) item needs more tokens than --max-num-batched-tokens, and "
    "this model cannot split an item across steps.",
    ("--max-num-batched-tokens at least the max_tokens_per_mm_item it names",
     "or fewer items per prompt with --limit-mm-per-prompt"), ("retrying unchanged",),
)
TOOL_PARSER = Advice(
    "--enable-auto-tool-choice needs a --tool-call-parser this vLLM has (and --reasoning-parser must name one it "
    "has): the API server refused its options before loading the model.",
    ("--tool-call-parser with a parser the error lists (the model card names the right one)",
     "drop --enable-auto-tool-choice if the model does not call tools"), ("retrying unchanged",),
)
UNKNOWN_QUANT = Advice(
    "This vLLM does not know the quantization method named (a typo, or a method added in a later release).",
    ("a method from the list the error prints, or drop --quantization to use the checkpoint's own",
     "a newer vLLM for a newer method"), ("retrying unchanged",),
)
NO_GPU = Advice(
    "The process sees no GPU at all: a container started without GPUs, CUDA_VISIBLE_DEVICES empty or wrong, no "
    "working NVIDIA driver, or a vLLM built for another platform (the PyPI wheel is CUDA's; CPU, ROCm and XPU have "
    "their own builds).",
    ("`nvidia-smi` in the same container or shell", "Docker: --gpus all (the NVIDIA Container Toolkit); "
     "Kubernetes: a nvidia.com/gpu resource limit", "check CUDA_VISIBLE_DEVICES",
     "on a machine without an NVIDIA GPU: vLLM's build for its platform"), ("changing vLLM's settings",),
)
INSPECTION_FAILED = Advice(
    "vLLM's model registry could not import the model's class in a subprocess: the subprocess's own error, printed "
    "above this line, is the cause (most often an install that does not import: torch, transformers or a kernel "
    "package of the wrong version; sometimes an architecture this vLLM does not have).",
    ("the first error in the subprocess's output (`python -c 'import vllm.model_executor.models'` shows it)",
     "a fresh virtual environment with the versions vLLM pins", "a newer vLLM for a newer architecture"),
    ("retrying unchanged", "changing vLLM's memory settings"),
)
PYTHON_PACKAGE = Advice(
    "An installed Python package (transformers, torch or vLLM itself) lacks a name this vLLM or model imports: it "
    "is older or newer than the one they were written for.",
    ("the versions vLLM pins (`pip install vllm==X` in a fresh virtual environment)",
     "a newer transformers for a model newer than it (`pip install -U transformers`)"),
    ("restarting", "changing vLLM's settings"),
)

PP_UNSUPPORTED = Advice(
    "This model (or its speculative draft or MTP head) cannot run with pipeline parallelism in this vLLM.",
    ("--pipeline-parallel-size 1 with tensor parallelism across the GPUs",
     "without the speculative head when only it lacks pipeline support"), ("retrying unchanged",),
)
LORA_RANK = Advice(
    "--max-lora-rank must be one of the ranks vLLM builds kernels for (the error lists them).",
    ("the smallest listed rank at least the adapters' own rank (adapter_config.json's r)",), ("retrying unchanged",),
)
QUANT_PLATFORM = Advice(
    "This platform's vLLM (ROCm, XPU, Ascend, CPU) does not run the checkpoint's quantization method.",
    ("a checkpoint in a method the platform lists", "--quantization naming a supported kernel for the same format "
     "(gptq for gptq_bitblas, for example)"), ("retrying unchanged",),
)

HUB_REFUSED = Advice(
    "The Hugging Face Hub answered but refused (429: too many requests), failed (5xx), or answered too slowly (a "
    "read timeout): the network reaches it.",
    ("for 429: HF_TOKEN (authenticated requests have a higher limit), then wait", "for 5xx: start again later",
     "for a read timeout: HF_HUB_ETAG_TIMEOUT / HF_HUB_DOWNLOAD_TIMEOUT of a minute",
     "download once with `hf download` and serve the local folder"), ("changing vLLM's memory settings",),
)
QUANT_SHAPE = Advice(
    "A quantized layer's share on one GPU is not a whole number of quant groups or kernel tiles: tensor parallel "
    "splits its input or output unevenly, or the layer's own shape does not fit the kernel (Marlin's 64-wide "
    "tiles).",
    ("a smaller --tensor-parallel-size", "another kernel for the same format (vLLM's advice for Marlin: "
     "--quantization gptq)"), ("retrying unchanged",),
)

VLLM_API = Advice(
    "The program that drives vLLM (FastChat, OpenRLHF, verl, unsloth, Triton's vllm backend, LLaMA-Factory) was "
    "written for another vLLM release: it reads an attribute or passes an option this vLLM does not have.",
    ("the vLLM version that program pins (its requirements or release notes)",
     "for V1-era code on an older vLLM, or V0-era code on 0.8+: upgrade the program, or VLLM_USE_V1=0 where the "
     "vLLM still has V0"), ("changing vLLM's memory settings", "retrying unchanged"),
)

NO_WEIGHTS = Advice(
    "The model folder or repository has no weight file vLLM can load: only the config and tokenizer arrived (a "
    "download stopped, an upload not finished), or the weights are in a format --load-format does not read.",
    ("list the folder: *.safetensors (or *.bin) shards as model.safetensors.index.json names them",
     "download again (`hf download`), or point --load-format at the format the files are in"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)
WEIGHTS_UNREADABLE = Advice(
    "A weight file is not a whole checkpoint: a download cut short (MetadataIncompleteBuffer, PyTorch's zip "
    "reader), or a git-lfs pointer or HTML page saved in its place (HeaderTooLarge).",
    ("compare the file sizes with the repository's; `git lfs pull` in a git clone", "download the shards again"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)
CONFIG_CHECK = Advice(
    "vLLM's own settings checks refused the combination it was given (a scheduler, cache, parallel, LoRA or "
    "speculative-decoding setting against another, or against the model): the ValueError's message names both.",
    ("change the setting the message names, in the profile or the command line",
     "the installed vLLM's `vllm serve --help=<group>` for the values it accepts"),
    ("retrying: the same settings are refused the same way",),
)

DETAIL_ADVICE: dict[str, Advice] = {
    "profiling_assertion": PROFILING_ASSERTION, "sigkill": KILLED, "ray_head_without_gpu": RAY_HEAD_WITHOUT_GPU,
    "hub": HUB_UNREACHABLE, "config_missing": CONFIG_MISSING, "extension_abi": EXTENSION_ABI, "gpu_arch": GPU_ARCH,
    "driver": DRIVER_TOO_OLD, "exclusive": EXCLUSIVE_GPU, "quantization_mismatch": QUANT_MISMATCH,
    "model_dtype": MODEL_DTYPE, "pp_layers": PP_LAYERS, "batched_tokens": BATCHED_TOKENS, "mm_budget": MM_BUDGET,
    "tool_parser": TOOL_PARSER, "unknown_method": UNKNOWN_QUANT, "no_gpu": NO_GPU, "python_package": PYTHON_PACKAGE,
    "pp_unsupported": PP_UNSUPPORTED, "lora_rank": LORA_RANK, "platform": QUANT_PLATFORM,
    "inspection_failed": INSPECTION_FAILED, "hub_refused": HUB_REFUSED, "quant_group": QUANT_SHAPE,
    "vllm_api": VLLM_API, "config_check": CONFIG_CHECK, "no_weights": NO_WEIGHTS,
    "weights_unreadable": WEIGHTS_UNREADABLE,
}


# startup_hang, per stage: what is known to unstick each (vLLM's troubleshooting guide, NCCL's docs).
HANG_ADVICE: dict[str, Advice] = {
    "nccl_init": Advice(
        "NCCL's communicator set-up never finished: on PCIe machines without working peer-to-peer (some "
        "virtualised or consumer boards, ACS enabled) NCCL's P2P transport can hang.",
        ("NCCL_P2P_DISABLE=1 in vLLM's environment", "NCCL_DEBUG=INFO to see the transport it hangs in",
         "check `nvidia-smi topo -p2p r`"), ("a longer startup timeout",)),
    "custom_allreduce": Advice(
        "vLLM's custom all-reduce (GPU peer-to-peer through CUDA IPC) never finished setting up: it is known to "
        "hang where P2P is reported but does not work.",
        ("--disable-custom-all-reduce", "NCCL_P2P_DISABLE=1 as well"), ("a longer startup timeout",)),
    "dp_coordinator": Advice(
        "A data-parallel engine waits for its DP Coordinator's READY message: the coordinator runs with rank 0 "
        "(the head, --data-parallel-rank 0); with --data-parallel-size-local below --data-parallel-size the other "
        "ranks must be started elsewhere.",
        ("start the other data-parallel ranks (or the head) with the same --data-parallel-address and "
         "--data-parallel-rpc-port", "check that the address and port are reachable from every node"),
        ("restarting this rank alone",)),
    "engine_handshake": Advice(
        "The API server waits for engine processes that never report: the engine or its workers are stuck "
        "(see their stacks), or remote engines were never started.",
        ("the stacks of the EngineCore and workers", "VLLM_LOGGING_LEVEL=DEBUG"), ()),
    "ray_placement": Advice(
        "Ray cannot give the placement group vLLM asked for: the cluster lacks the GPUs (or they are held).",
        ("`ray status`: free GPUs per node", "VLLM_HOST_IP the same as the Ray node's address"), ()),
    "download": Advice(
        "The model download stopped: no bytes arrived for guard.stall-timeout.",
        ("check the network and the Hub (HF_ENDPOINT, a proxy)", "download once with `hf download` first"), ()),
}


def advice_for(d: Diagnosis) -> Advice:
    """The advice for a more specific reading within the class when there is one (a bare SIGKILL)."""
    if d.cls == "startup_hang" and d.stage in HANG_ADVICE:
        return HANG_ADVICE[d.stage]
    return DETAIL_ADVICE.get(d.detail or "", ADVICE[d.cls])
