"""What each failure class means, what helps and what does not (domain.md's table, in words)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Advice:
    explanation: str
    helps: tuple[str, ...]
    does_not_help: tuple[str, ...] = ()


# Settings the failed start already ran with, as its log shows them (context.read): advice to set one again is
# marked, not dropped, so the reader sees both (blind8/b8-020 ran --enforce-eager and was told eager mode helps).
_ALREADY: tuple[tuple[str, str, str, str], ...] = (
    # (the advice's leading flag, the setting, the value that means it is set, the mark)
    ("--enforce-eager", "enforce_eager", "True", "this start already ran eager"),
    ("--kv-cache-dtype fp8", "kv_cache_dtype", "fp8", "this start's KV cache was already fp8"),
)


def as_started(advice: Advice, settings: Mapping[str, Any]) -> Advice:
    """The advice, with each change the start had already made marked as made."""
    marks = [(flag, mark) for flag, key, value, mark in _ALREADY if str(settings.get(key, "")).startswith(value)]
    if not marks:
        return advice
    helps = tuple(next((_marked(item, mark) for flag, mark in marks if item.startswith(flag)), item)
                  for item in advice.helps)
    return advice if helps == advice.helps else replace(advice, helps=helps)


def _marked(item: str, mark: str) -> str:
    return f"{item[:-1]}; {mark})" if item.endswith(")") else f"{item} ({mark})"


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

# A pasted log with no error line, no traceback and no ready line (Diagnosis.detail "no_error"): it ends at the
# stage named, and nothing in it says whether the paste stops there or the start stayed there.
NO_ERROR = Advice(
    "The log shows no error and no line saying vLLM is ready: it ends at the stage named above. Either the paste "
    "stops there, or the start was still at that stage when the log was taken; the last lines are shown.",
    ("the rest of the log, and how the start ended: its exit status (`systemctl status`, `docker inspect`, "
     "`kubectl describe pod`'s Last State)",
     "if the start stays at this stage for minutes, it hung there: `vllm-guard serve` stops such a start and "
     "shows where each process is stuck",
     "run vLLM with VLLM_LOGGING_LEVEL=DEBUG for more detail"),
    ("changing a setting before the log shows a failure",))

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
