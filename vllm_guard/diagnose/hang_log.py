"""Pure: a hang read from a pasted log, where no live detector watched the start: the log ends on a waiting line
(repeated or once), on a stage's own lines with nothing after them and no error anywhere, or on the guard's own
report of a hang it stopped. The live detector and the stage of a hung start's stacks are in hang.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vllm_guard.diagnose import certainty
from vllm_guard.diagnose.catalogue_support import HANG_SOURCES
from vllm_guard.diagnose.diagnosis import Diagnosis, skipped_plugin_lines
from vllm_guard.diagnose.hang import (
    AR_OFF,
    EVIDENCE_CHARS,
    HANG_STAGES,
    UNKNOWN,
    WaitingLine,
    activity_of,
    waiting_line,
)
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, LogLine

_DP_RANK = re.compile(r"_DP(\d{1,5})\b")
# The guard's own report of a hang it stopped (launch/stall.py stall_summary), in its journal or a paste of it.
_GUARD_HANG = re.compile(r"^vllm-guard: startup_hang in (?P<stage>[a-z_]{1,40}) \(from (?P<came_from>[^)]{1,40})\): "
                         r"no progress for (?P<idle_s>[\d.]{1,12})s")
_GUARD_STUCK = "vllm-guard: stuck in "


def _diagnosis(stage: str, numbers: dict[str, Any], evidence: tuple[str, ...], source: str, came_from: str,
               context: dict[str, Any]) -> Diagnosis:
    return Diagnosis("startup_hang", stage, numbers, evidence, context=context, confidence="medium",
                     template=source, stage_from=came_from, detail=stage)


def _cut_repeat(last: LogLine, before: LogLine) -> bool:
    """The last line is the line before it again, cut where the paste ends (its digits may differ: a later time)."""
    a, b = last.text, before.text
    return (last.proc == before.proc and 0 < len(a) < len(b)
            and all(x == y or (x.isdigit() and y.isdigit()) for x, y in zip(a, b[:len(a)], strict=True)))


# A last line that is only the start of a process prefix, cut where the paste ends ("(autoscaler"; blind52/b52-010)
_CUT_PREFIX = re.compile(r"^\(\w{1,40}$")
STOP_LINES = 4  # the last lines that may name the stage a log stops in (a cut line, a stray line after it)
# A last line that is a vLLM log record cut inside its own header ("INFO 03-27 16:00:08 [pynccl"; blind145/b145-012):
# Python's logging writes a record whole, so a process that hangs never leaves half a header; the paste was cut.
_CUT_RECORD = re.compile(r"^(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? "
                         r"\[?[\w./-]{0,200}(?::\d{0,6})?$")
# A reporter's elision mark on a line of its own ("...", "…", "[...]", "。。。"): the paste left out what came next,
# so where it stops is not where the log did (blind129/b129-014: "[。。。" after NCCL's set-up lines).
_ELISION = re.compile(r"^\s{0,20}[\[(]?\s{0,5}(?:\.{3,20}|…{1,10}|。{2,20})\s{0,5}[\])]?\s{0,20}$")
# The stages a log that just stops can name: NCCL's set-up and the P2P check hang without a line, and a process
# killed there is rare. A log that stops while loading, compiling or capturing is as often a start the host's OOM
# killer ended (the paste lacks the exit): no evidence of a hang (tests/test_explain.py test_exit_status_forms).
STOP_STAGES = frozenset({"nccl_init", "custom_allreduce"})
# What a stage's line says when the stage is over: the log stopping after it names no stage
_DONE = re.compile(r"\btook\b|\btakes [\d.]+ ?s\b|COMPLETE|\b100%|\bdone\b|[Ff]inished")
# One rank: no communicator to wait on (the rank line of a single GPU is no NCCL set-up)
_ONE_RANK = re.compile(r"world_size=1\b|in world size 1\b")
# An error anywhere: a log that stops after one is a failure whose cause is missing, not a hang. A crash of
# compiled code prints no Python error: the shell's "Segmentation fault (core dumped)" or "Aborted", and vLLM's
# CUDA checks in csrc print "Failed: Cuda error FILE:LINE '...'" then exit (custom_all_reduce.cuh CUDACHECK).
TROUBLE = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|Error:|Exception\b|\bfailed\b|Failed: |Killed"
                      r"|Segmentation fault|core dumped|^Aborted\b|[Cc]uda error|CUDA error"
                      # NCCL's own failure, with NCCL_DEBUG=INFO: a failed CUDA call, a result code traced up its stack
                      r"|NCCL WARN Cuda failure|NCCL INFO \S{1,300}\.cc:\d{1,6}(?: \(\w{1,64}\))? -> [1-9]")


def _stage_before(lines: Sequence[LogLine], head: str = "") -> tuple[str, str] | None:
    """The stage the last few lines name (the latest first), with the line that names it."""
    texts = [line.text for line in lines[-STOP_LINES:]] + ([head] if head else [])
    for text in reversed(texts):
        if AR_OFF.search(text[:MAX_LINE_CHARS]):
            return None  # the custom all-reduce set-up the lines before name is skipped: the start went past it
        stage = None if _DONE.search(text[:MAX_LINE_CHARS]) or _ONE_RANK.search(text[:MAX_LINE_CHARS]) \
            else activity_of(text)
        if stage is not None:
            return stage, text
    return None


def log_hang(lines: Sequence[LogLine], context: dict[str, Any]) -> Diagnosis | None:
    """A hang in a pasted log: its last lines (after its last other line, and a repeat of it that the paste cut)
    are a waiting line, repeated or once; or, with no error anywhere, its last lines are a stage's own lines
    (NCCL's set-up, the P2P check) and nothing follows them (``log_stops``). A log that merely
    stops elsewhere is no evidence (every truncated paste does); nor is one that ends in an error."""
    end = len(lines)
    if end >= 2 and waiting_line(lines[-1].text) is None and (_cut_repeat(lines[-1], lines[-2])
                                                                or _CUT_PREFIX.match(lines[-1].text)):
        end -= 1
    found: tuple[WaitingLine, dict[str, Any], LogLine] | None = None
    first = end
    count = 0
    for i in range(end - 1, -1, -1):
        w = waiting_line(lines[i].text)
        if w is None:
            break
        if found is None:
            found = (w[0], w[1], lines[i])
        count += w[0] is found[0]
        first = i
    if found is None:
        return log_stops(lines, context)
    wait, numbers, last = found
    numbers = {**numbers, "repeats": count}
    rank = _DP_RANK.search(last.proc)
    if rank:
        numbers["dp_rank"] = int(rank.group(1))
    whose = "the message queue's" if wait.stage == UNKNOWN else f"{wait.stage}'s"
    said = f"the log ends waiting: {count} time(s) {whose} waiting line, and nothing after it"
    stage, came_from = wait.stage, certainty.MESSAGE
    evidence: tuple[str, ...] = (last.text[:EVIDENCE_CHARS], said)
    if wait.behind:
        # two processes on one terminal interleave mid-line: what precedes the first waiting line's message
        m = wait.pattern.search(lines[first].text[:MAX_LINE_CHARS])
        before = _stage_before(lines[:first], lines[first].text[:m.start()] if m else "")
        if before is not None:
            stage, came_from = before[0], "the last line before the waiting began"
            evidence = (*evidence, before[1][:EVIDENCE_CHARS])
    return _diagnosis(stage, numbers, evidence, wait.source, came_from, context)


def log_stops(lines: Sequence[LogLine], context: dict[str, Any]) -> Diagnosis | None:
    """No waiting line, no error anywhere: the log stops right after a stage's own lines (the start hung there,
    or the paste was cut there: the same text, so said at medium confidence with that caveat)."""
    skipped = skipped_plugin_lines(list(lines))
    if not lines or any(TROUBLE.search(line.text[:MAX_LINE_CHARS]) for i, line in enumerate(lines)
                        if i not in skipped):
        return None
    before = _stage_before(lines)
    if before is None or before[0] not in STOP_STAGES:
        return None
    stage, text = before
    tail = lines[-STOP_LINES:]
    after = max((k for k, line in enumerate(tail) if line.text == text), default=-1) + 1
    if any(_ELISION.match(line.text) for line in tail[after:]):  # an elision after the stage's line, not before it
        return None
    if _CUT_RECORD.match(lines[-1].text):
        return None
    said = (f"the log stops in {stage} with no error and nothing after it: a start that hung there, or a paste cut "
            "there")
    return _diagnosis(stage, {}, (text[:EVIDENCE_CHARS], said), HANG_SOURCES["hang_stops"], "the log's last lines",
                      context)


def guard_hang(lines: Sequence[LogLine], context: dict[str, Any]) -> Diagnosis | None:
    """The guard's own report that it stopped a hung start, with where each process was stuck (its last one)."""
    for i in range(len(lines) - 1, -1, -1):
        text = lines[i].text
        if "startup_hang in " not in text:
            continue
        m = _GUARD_HANG.match(text)
        if m is None or m.group("stage") not in HANG_STAGES:
            continue
        stuck = [line.text[len("vllm-guard: "):][:EVIDENCE_CHARS] for line in lines[i + 1:i + 12]
                 if line.text.startswith(_GUARD_STUCK)][:4]
        return _diagnosis(m.group("stage"), {"idle_s": float(m.group("idle_s"))}, (text[:EVIDENCE_CHARS], *stuck),
                          HANG_SOURCES["hang_guard"], f"the guard's report ({m.group('came_from')})", context)
    return None
