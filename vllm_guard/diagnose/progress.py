"""Pure: how far a start got, line by line and process by process, and where an OOM the rules found happened.

vLLM's progress lines (markers.py) mark the stage a start has reached. A raw CUDA OOM means something different at
each stage (the weights, the profiling pass, the KV cache, the CUDA graphs), so its stage decides its class.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from vllm_guard.diagnose import certainty
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.markers import BEFORE_START, CUDA_GRAPH, LOADING, PROFILING, STAGES, stage_of

NOT_PROGRESS = ("ERROR", "  File ", "    ")  # error records and traceback lines: no stage, no setting
_RECORD = ("INFO", "WARNING", "DEBUG", "CRITICAL")  # a logging record (vLLM's format: level first)


@dataclass(frozen=True)
class Progress:
    at: list[str]  # the stage the log had reached at each line
    final: str  # ... by its end
    # A prefixed process -> the furthest stage its own lines reached. vLLM prefixes each line a decorated process
    # writes, but a progress bar's redraw (after "\r") loses the prefix: an unprefixed bar is any process's, an
    # unprefixed logging record the undecorated one's (V0's driver). Key "": the bars.
    own: dict[str, str]

    def oom_stage(self, lines: list[LogLine], i: int,
                  frame_stage: Callable[[str, int], str | None]) -> tuple[str, str]:
        """Where an OOM happened, and how that is known: its traceback's frames, else the stage the start reached.

        stdout (the stage lines) and stderr (the traceback) interleave out of order in a pasted log, so the stage
        the main process reached by the end of the start is a better guess than the stage above the OOM line. A
        prefixed process (a V0 or V1 worker, the engine core) prefixes both its streams: its own lines say how far
        it got, and the other workers' later lines say nothing of it (blind2/b018: one worker's OOM on the first
        line, then the others' "Using model weights format").
        """
        stage = frame_stage(lines[i].proc, i)
        if stage is None and "while processing method" in lines[i].text:
            # V0's worker (executor/multiproc_worker_utils.py, 0.5-0.10) names the method that raised on the line
            # itself: "Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks"
            m = _WORKER_METHOD.search(lines[i].text)
            stage = certainty.stage_of_functions({m.group(1)}) if m else None
        if stage is not None:
            return stage, certainty.FRAMES
        final = self.final
        if lines[i].proc:
            final = max(self.own.get(lines[i].proc, BEFORE_START), self.own.get("", BEFORE_START), key=STAGES.index)
        return max(final, self.at[i], key=STAGES.index), certainty.PROGRESS


_WORKER_METHOD = re.compile(r"while processing method (\w{1,128})")


def progress(lines: list[LogLine]) -> Progress:
    stage = BEFORE_START
    at: list[str] = []
    own: dict[str, str] = {}
    for line in lines:
        # vLLM's progress lines are INFO records; its error records and traceback lines never mark a stage
        marker = None if line.text.startswith(NOT_PROGRESS) else stage_of(line.text)
        if marker is not None:
            if STAGES.index(marker) > STAGES.index(stage):
                stage = marker
            whose = line.proc or ("" if not line.text.startswith(_RECORD) else None)
            if whose is not None and STAGES.index(marker) > STAGES.index(own.get(whose, BEFORE_START)):
                own[whose] = marker
        at.append(stage)
    return Progress(at, stage, own)


def oom_class(stage: str) -> tuple[str, str]:
    """Where a raw CUDA OOM happened decides what it means (vLLM 0.33's V2 runner does not wrap it)."""
    if stage == LOADING:
        return "oom_loading", LOADING
    if stage == PROFILING:
        return "oom_profiling", PROFILING
    if stage == CUDA_GRAPH:
        return "oom_cudagraph", CUDA_GRAPH
    return "unknown", stage  # before loading, or while allocating the KV cache: not enough to act on
