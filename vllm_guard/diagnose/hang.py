"""Pure: is a start still moving? Lines, bytes and memory with their times in, a progress or hung verdict out.

A start that prints is not necessarily moving: vLLM repeats its waiting lines forever (the DP engine's
"Waiting for READY message from DP Coordinator..." every 10 s, v1/engine/core.py; the API server's "Waiting
for N local, M remote core engine proc(s) to start." every 10 s at debug level, v1/engine/utils.py
wait_for_engine_startup; Ray's "Waiting for creating a placement group of specs for N seconds", with backoff,
v1/executor/ray_utils.py _wait_until_pg_ready; the message queue's "No available shared memory broadcast block
found in 60 seconds" every minute while a peer is stuck, distributed/device_communicators/shm_broadcast.py; all
read in vLLM 0.32). Progress is: a new phase, a log line
whose shape (numbers and times taken out) was not seen before and is not a waiting line, a tqdm bar that
advances, bytes arriving in the model's cache, or the launch's GPU memory changing.

Also pure: the stage a hang stuck in (``hang_stage``), from the innermost frames of the stacks (stacks.py
reads py-spy's text), the waiting line, and what the start was doing when it last moved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_guard.diagnose.catalogue_support import HANG_SOURCES
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, body

HANG_STAGES = ("nccl_init", "custom_allreduce", "engine_handshake", "dp_coordinator", "ray_placement", "download",
               "weights_loading", "compile", "graph_capture", "unknown")
UNKNOWN = "unknown"

# guard.stall-timeout's per-stage defaults (docs/serve.md): a weight shard from a network disk, a torch.compile
# or Inductor autotune may take many minutes without a line; a download's bytes count as progress, so its
# limit is only for a transfer that stops. Everything else waits on a peer that answers in seconds.
DEFAULT_STALL_S = 300.0
STAGE_STALL_S: Mapping[str, float] = {"download": 600.0, "weights_loading": 900.0, "compile": 900.0,
                                      "graph_capture": 600.0}
EVIDENCE_CHARS = 500
MAX_SHAPES = 20_000  # line shapes remembered: a start's log has a few hundred; a flood is bounded


@dataclass(frozen=True)
class WaitingLine:
    """A line vLLM repeats while it waits on another process: never progress, and a hang's stage when last."""

    stage: str
    pattern: re.Pattern[str]
    source: str
    # it waits behind another process (the API server behind its engines, a message queue behind its peer): what
    # the start printed last before the waiting began says more about where it is stuck than the line itself
    behind: bool = False


WAITING: tuple[WaitingLine, ...] = (
    WaitingLine("dp_coordinator", re.compile(r"Waiting for READY message from DP Coordinator"),
                HANG_SOURCES["hang_dp_coordinator"]),
    WaitingLine("engine_handshake", re.compile(r"Waiting for (?P<local_engines>\d{1,6}) local, (?P<remote_engines>"
                                               r"\d{1,6}) remote core engine proc\(s\) to (?:start|connect)"),
                HANG_SOURCES["hang_engine_handshake"], behind=True),
    WaitingLine("ray_placement", re.compile(r"Waiting for creating a placement group of specs for (?P<waited_s>"
                                            r"\d{1,9}) seconds"), HANG_SOURCES["hang_ray_placement"]),
    # shm_broadcast.py (0.32): every VLLM_RINGBUFFER_WARNING_INTERVAL (60 s) while a message-queue peer is stuck;
    # 0.5-0.6 said "No available block found in 60 second" (vllm issues #6614, #10661)
    WaitingLine(UNKNOWN, re.compile(r"No available (?:shared memory broadcast )?block found in (?P<waited_s>"
                                    r"\d{1,9}) second"), HANG_SOURCES["hang_shm_broadcast"], behind=True),
)
_WAITING_WORDS = re.compile(r"Waiting for|No available (?:shared memory broadcast )?block found")
_BEHIND = frozenset(w.stage for w in WAITING if w.behind)

# What a start is doing, read from its progress lines (vLLM 0.32's texts; huggingface_hub's bars).
_ACTIVITY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("download", re.compile(r"Fetching \d+ files|Downloading|\.(?:safetensors|bin|pt)[\"']?: {0,3}\d{1,3}%")),
    # model_loader/weight_utils.py (0.32) also draws "Multi-thread loading shards" (vllm-omni's hang, h08)
    ("weights_loading", re.compile(r"Loading safetensors checkpoint shards|Loading weights|Starting to load model"
                                   r"|Loading model weights|Loading pt checkpoint shards|Multi-thread loading shards")),
    # pynccl.py: "vLLM is using nccl==2.x" once the communicator is made; parallel_state.py: the rank line and
    # init_distributed_environment's "Detected N nodes in the distributed environment"; NCCL's own NCCL_DEBUG lines
    ("nccl_init", re.compile(r"vLLM is using nccl==|distributed_init_method=|rank \d+ in world size \d+ is"
                             r"|Detected \d+ nodes in the distributed environment|\bNCCL INFO\b")),
    # all_reduce_utils.py gpu_p2p_access_check (0.32; custom_all_reduce_utils.py before): "generating GPU P2P
    # access cache in ..." while it tests P2P between every pair of GPUs, the step that hangs on PCIe boxes
    ("custom_allreduce", re.compile(r"[Cc]ustom [Aa]ll-?[Rr]educe|custom_all_reduce|GPU P2P access cache")),
    # compilation/backends.py: "Dynamo bytecode transform time", "Compiling a graph for compile range"
    ("compile", re.compile(r"torch\.compile|Dynamo bytecode transform|Compiling a graph|Start compiling"
                           r"|Inductor|autotun")),
    ("graph_capture", re.compile(r"Capturing CUDA graph|Capturing cudagraphs|Graph capturing")),
)
# tqdm's bars: "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01, ...]"
_TQDM = re.compile(r"\d{1,3}%(?: Completed)? ?\||\b\d{1,12}/\d{1,12} \[")
_COUNTS = re.compile(r"\d{1,3}%|\b\d{1,12}/\d{1,12}\b")
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+(?:[.:,]\d+)*")


def shape(text: str) -> str:
    """A line less vLLM's logging prefix (level, date, time, file:line) and with every number as '#'."""
    return _NUMBERS.sub("#", body(text[:MAX_LINE_CHARS]).strip())


def waiting_line(text: str) -> tuple[WaitingLine, dict[str, Any]] | None:
    """The waiting line this is, with the numbers it names; None for any other line."""
    text = text[:MAX_LINE_CHARS]
    if not _WAITING_WORDS.search(text):
        return None
    for wait in WAITING:
        m = wait.pattern.search(text)
        if m:
            return wait, {k: int(v) for k, v in m.groupdict().items() if v is not None}
    return None


# The engine's settings, printed once at the start ("Initializing a V1 LLM engine (v0.11.0) with config: ...
# disable_custom_all_reduce=False, ..."; 0.11+'s "non-default args: {...}"; 0.4-0.10's api_server "args:
# Namespace(...)"; a wrapper's repr of the AsyncEngineArgs it passes, as Ray Serve's vLLM example logs it): they
# name steps, they are none (blind42/b42-004 and b42-005, blind109/b109-009: a log cut in that line was read as
# stopping in the P2P check; blind136/b136-012: 0.2-0.3's "Initializing an LLM engine with config: ...", no version).
_SETTINGS_LINE = re.compile(r"engine (?:\(v[\w.+-]{1,40}\) )?with config: |non-default args: \{|\bargs: Namespace\("
                            r"|EngineArgs\(model=")
_SETTINGS_WORDS = ("with config: ", "non-default args: ", "args: Namespace(", "EngineArgs(model=")


# vLLM saying its custom all-reduce will not be set up (config/parallel.py "Disabled the custom all-reduce kernel
# because it is not supported on current platform", custom_all_reduce.py "Custom allreduce is disabled because ...",
# 0.5-0.33): the line names the stage, and its header the file, but the start goes on past it
AR_OFF = re.compile(r"Custom (?:allreduce|collectives) (?:is|are) disabled|Disabled the custom all-reduce")


def activity_of(text: str) -> str | None:
    """What a progress line says the start is doing (download, weights_loading, ...), if it says."""
    text = text[:MAX_LINE_CHARS]
    if (any(word in text for word in _SETTINGS_WORDS) and _SETTINGS_LINE.search(text)) \
            or ("isabled" in text and AR_OFF.search(text)):
        return None
    found = None
    for name, pattern in _ACTIVITY:
        if pattern.search(text):
            found = name
    return found


@dataclass(frozen=True)
class StallLimits:
    """Seconds without progress after which a start is hung, per stage; ``one_s`` (the setting) for all."""

    one_s: float | None = None

    def for_stage(self, stage: str) -> float:
        return self.one_s if self.one_s is not None else STAGE_STALL_S.get(stage, DEFAULT_STALL_S)


@dataclass(frozen=True)
class Verdict:
    hung: bool
    idle_s: float  # since the last progress
    limit_s: float
    activity: str  # what the start was doing when it last moved (a HANG_STAGES name)
    last_progress: str | None  # the last line that was progress
    waiting: str | None  # the last waiting line, if the start's last lines are one
    waiting_stage: str | None
    numbers: dict[str, Any] = field(default_factory=dict)


class ProgressDetector:
    """Follows one start: feed it lines, bar redraws, cache bytes and GPU memory with their times; ask ``verdict``.

    Pure: no clock of its own, no I/O; every observation carries its time (seconds, any origin, one per start).
    """

    def __init__(self, start_s: float, limits: StallLimits | None = None) -> None:
        self.limits = limits or StallLimits()
        self.last_progress_s = start_s
        self.activity = UNKNOWN
        self.last_progress: str | None = None
        self.waiting: tuple[WaitingLine, dict[str, Any], str] | None = None
        self._shapes: set[str] = set()
        self._bars: dict[str, str] = {}
        self._bytes: int | None = None
        self._looked = False
        self._gpu_bytes: int | None = None
        self._phase: str | None = None

    def _moved(self, t: float, what: str | None = None) -> None:
        self.last_progress_s = max(self.last_progress_s, t)
        if what is not None:
            self.last_progress = what[:MAX_LINE_CHARS]

    def line(self, text: str, t: float) -> bool:
        """One log line; True when it is progress."""
        text = text.rstrip("\r\n")
        found = waiting_line(text)
        if found is not None:
            self.waiting = (found[0], found[1], text[:MAX_LINE_CHARS])
            return False
        key = shape(text)
        if not key:
            return False
        if _TQDM.search(text[:MAX_LINE_CHARS]):
            return self.bar(text, t)
        if key in self._shapes:  # a heartbeat: the same line again, its numbers or time changed
            return False
        if len(self._shapes) < MAX_SHAPES:
            self._shapes.add(key)
        self.waiting = None
        self._note_activity(text)
        self._moved(t, text)
        return True

    def bar(self, text: str, t: float) -> bool:
        """A tqdm redraw (or a bar's final line): progress when its counts differ from its last redraw."""
        key = shape(text)
        # its "n/total" and "%" only: the rate and the times change on every redraw, moving or not
        counts = " ".join(m.group(0) for m in _COUNTS.finditer(text[:MAX_LINE_CHARS]))
        if self._bars.get(key) == counts:
            return False
        if len(self._bars) < MAX_SHAPES:
            self._bars[key] = counts
        self.waiting = None
        self._note_activity(text)
        self._moved(t, text)
        return True

    def phase(self, name: str, t: float) -> bool:
        """The start reached a new phase or stage (markers.py): always progress when it changes."""
        if name == self._phase:
            return False
        self._phase = name
        self._moved(t)
        return True

    def cache_bytes(self, n: int | None, t: float) -> bool:
        """Bytes of the model's downloads in flight (partial files in its cache); None: none in flight. A
        partial file means the start is downloading; a change (a file begun, grown or finished) is progress.
        The first look is no change: it says where the start is, not that it moved."""
        before, looked = self._bytes, self._looked
        self._bytes, self._looked = n, True
        if n is not None:
            self.activity = "download"
        moved = looked and n != before
        if moved:
            self._moved(t)
        return moved

    def gpu_memory(self, used_bytes: int | None, t: float) -> bool:
        """GPU memory in use on the launch's GPUs; None: no GPU probe (a snapshot, a CPU build)."""
        if used_bytes is None:
            return False
        moved = self._gpu_bytes is not None and used_bytes != self._gpu_bytes
        self._gpu_bytes = used_bytes
        if moved:
            self._moved(t)
        return moved

    def _note_activity(self, text: str) -> None:
        found = activity_of(text)
        if found is not None:
            self.activity = found

    def verdict(self, t: float) -> Verdict:
        idle = max(0.0, t - self.last_progress_s)
        limit = self.limits.for_stage(self.activity)
        wait = self.waiting
        return Verdict(idle > limit, round(idle, 1), limit, self.activity, self.last_progress,
                       wait[2] if wait else None, wait[0].stage if wait else None, dict(wait[1]) if wait else {})


# --- the stage a hang stuck in -------------------------------------------------------------------------

# Innermost frames (function, file) that place a hang, most specific first; vLLM 0.32 function names.
_FRAME_STAGES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # distributed/device_communicators/custom_all_reduce.py, all_reduce_utils.py gpu_p2p_access_check
    ("custom_allreduce", re.compile(r"CustomAllreduce|custom_all_reduce|gpu_p2p_access_check|can_actually_p2p"
                                    r"|all_reduce_utils")),
    # pynccl.py PyNcclCommunicator, torch's init_process_group / ProcessGroupNCCL, ncclCommInitRank
    ("nccl_init", re.compile(r"pynccl|ncclCommInit|PyNcclCommunicator|ProcessGroupNCCL|init_process_group"
                             r"|_new_process_group_helper|init_distributed_environment|initialize_model_parallel")),
    ("ray_placement", re.compile(r"_wait_until_pg_ready|initialize_ray_cluster|placement_group")),
    ("download", re.compile(r"snapshot_download|hf_hub_download|http_get|download_weights_from_hf"
                            r"|_download_to_tmp_and_move")),
    ("graph_capture", re.compile(r"capture_model|_capture_cudagraphs|cudagraph_utils|CUDAGraph")),
    ("compile", re.compile(r"torch/_dynamo|torch/_inductor|compilation/backends|compile_or_warm_up_model")),
    ("weights_loading", re.compile(r"load_weights|load_model|safetensors_weights_iterator|weight_utils")),
)
# The API server's wait for its engines (v1/engine/utils.py): true of every hang behind it, so the least telling.
_HANDSHAKE_FRAMES = re.compile(r"wait_for_engine_startup|_perform_handshakes?|startup_handshake")
INNERMOST = 6  # frames per thread that decide: the waits of a hang are in the last few calls


@dataclass(frozen=True)
class StageReading:
    stage: str
    came_from: str  # "stacks" | "waiting line" | "last progress" | "nothing"
    evidence: str | None = None


def hang_stage(frames: Iterable[Sequence[str]], verdict: Verdict) -> StageReading:
    """The stage from each process's innermost frames ("func (file:line)" texts, innermost first), the waiting
    line the start repeated, and what it was doing when it last moved, in that order of trust."""
    handshake: str | None = None
    stacks = [list(f)[:INNERMOST] for f in frames]
    for stage, pattern in _FRAME_STAGES:
        for stack in stacks:
            hit = next((frame for frame in stack if pattern.search(frame)), None)
            if hit is not None:
                return StageReading(stage, "stacks", hit)
    for stack in stacks:
        handshake = handshake or next((f for f in stack if _HANDSHAKE_FRAMES.search(f)), None)
    behind = verdict.waiting_stage in _BEHIND and verdict.activity != UNKNOWN
    if verdict.waiting_stage is not None and not behind:
        return StageReading(verdict.waiting_stage, "waiting line", verdict.waiting)
    if handshake is not None and not behind:
        return StageReading("engine_handshake", "stacks", handshake)
    if verdict.activity != UNKNOWN:
        return StageReading(verdict.activity, "last progress", verdict.last_progress)
    return StageReading(UNKNOWN, "nothing")
