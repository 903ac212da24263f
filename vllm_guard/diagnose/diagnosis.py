"""What a diagnosis is (the failure class, stage, numbers, evidence and how sure it is), and the evidence lines it
shows: the root cause first, cut to a readable length. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vllm_guard.diagnose import logread
from vllm_guard.diagnose.logread import LogLine


@dataclass(frozen=True)
class Diagnosis:
    cls: str
    stage: str
    numbers: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    exit_signal: int | None = None
    detail: str | None = None  # a more specific reading within the class (e.g. "profiling assertion")
    context: dict[str, Any] = field(default_factory=dict)  # settings read from the log (max_model_len, ...)
    # How sure the reading is (certainty.py): "high", "medium", or "none" for unknown; the template that
    # matched (its source in vLLM, PyTorch, NCCL ...), where the stage came from, and for unknown the best
    # candidate below the bar as (class, why), never acted on.
    confidence: str = "high"
    template: str | None = None
    stage_from: str | None = None
    hint: tuple[str, str] | None = None


EVIDENCE_CHARS = 500
# Wrappers: they say that something failed, never what. Never decisive.
# vLLM's lines that only say another part failed: V1's (0.8-0.33) and V0's MQLLMEngine wrapper ("Engine process
# failed to start. See stack trace for the root cause.", entrypoints/openai/api_server.py 0.6-0.9).
WRAPPERS = re.compile(r"Engine core initialization failed|WorkerProc initialization failed|EngineCore failed to "
                      r"start|WorkerProc failed to start|Worker failed with error|Engine process failed to start")
ERRORISH = re.compile(r"Error|ERROR|Exception|error:|Traceback|failed|Killed")
_READY = re.compile(r"Application startup complete|Starting vLLM server on")


def per_log(lines: list[LogLine], compute: Callable[[list[LogLine]], Any]) -> Any:
    """compute(lines), worked out once per log: rules' conditions ask such a fact of the whole log once per line
    they match, and a log of many such lines would otherwise be read whole again for each (issue 28). The facts of
    the last log asked are kept, with the list itself, so its identity cannot be reused for another."""
    global _facts
    memo = _facts  # one read: another thread may replace it
    if memo[0] is not lines:
        memo = _facts = (lines, {})
    if compute not in memo[1]:
        memo[1][compute] = compute(lines)
    return memo[1][compute]


# (lines, {fact: value}) of the last log per_log() was asked about
_facts: tuple[list[LogLine] | None, dict[Callable[[list[LogLine]], Any], Any]] = (None, {})


def _serves(lines: list[LogLine]) -> bool:
    return any(("startup complete" in line.text or "Starting vLLM server" in line.text)
               and _READY.search(line.text) for line in lines)


def ready(lines: list[LogLine]) -> bool:
    """vLLM said it serves (the two substrings first: a million lines cost a substring test each)."""
    return bool(per_log(lines, _serves))


CUT_MARK = "... (line cut)"


def cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EVIDENCE_CHARS else f"{text[:EVIDENCE_CHARS]}{CUT_MARK}"


# vLLM's plugin loader logs a plugin that fails to load, with its traceback, and goes on (plugins/__init__.py
# load_plugins_by_group, 0.6-0.33: logger.exception("Failed to load plugin %s", ...)): not the start's failure.
_PLUGIN_SKIPPED = "Failed to load plugin "


def skipped_plugin(lines: Sequence[LogLine], first: int) -> bool:
    """The traceback starting at line `first` is one vLLM logged for a plugin it skipped (its line just above)."""
    return any(_PLUGIN_SKIPPED in lines[j].text and lines[j].proc == lines[first].proc
               for j in range(max(0, first - 2), first))


_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")


def skipped_plugin_lines(lines: list[LogLine]) -> frozenset[int]:
    """The lines of each traceback vLLM logged for a plugin it skipped, its line above included, and of the tracebacks
    chained after one (a plugin's `raise ImportError(...) from e` prints two). Read once per log (per_log)."""
    out: set[int] = set()
    last_skipped: dict[str, int] = {}  # per process: where its last skipped traceback ended
    for tb in sorted(logread.tracebacks(lines), key=lambda t: t.first):
        if tb.exception is None:
            continue
        end = last_skipped.get(tb.proc)
        # chained only when Python's banner is what comes right after the skipped traceback (within 4 lines)
        chained = end is not None and tb.first - end <= 4 and any(c in lines[j].text for j in range(end + 1, tb.first)
                                                                  for c in _CHAINED)
        if chained or skipped_plugin(lines, tb.first):
            out.update(range(max(0, tb.first - 2), tb.exception + 1))
            last_skipped[tb.proc] = tb.exception
    return frozenset(out)


def evidence(lines: list[LogLine], i: int, text: str) -> tuple[str, ...]:
    out = [cut(text)]
    # The exception line often follows a logged ERROR, or the other way round: keep the neighbour.
    for j in (i - 1, i + 1):
        near = lines[j].text if 0 <= j < len(lines) else ""
        if ERRORISH.search(near) and not WRAPPERS.search(near) and near not in text:
            out.append(cut(near))
    return tuple(out[:3])


# An exception line, bare or after a logging prefix ("ERROR 11-30 13:34:01 [file.py:953] ValueError: ...").
# An exception line ("RuntimeError: ...", "torch.OutOfMemoryError: ..."), whatever logging prefix it carries: its
# class and its message. Shared by the readings that look for a paste's first or last exception.
EXCEPTION_LINE = re.compile(r"(?:^|[\s\]])(?:\w{1,64}\.){0,6}(?P<exc>[A-Z]\w{0,60}(?:Error|Exception)): "
                            r"(?P<msg>\S.*)$")
_EXCEPTION = re.compile(r"(?:^|\] )(?:[A-Za-z_][\w.]{0,100}\.)?[A-Z]\w{0,60}(?:Error|Exception): \S")
# The processes in the order a failure travels: a worker's error is wrapped by the engine, then the API server.
_DEPTH = (("Worker", 0), ("VllmWorker", 0), ("RayWorker", 0), ("Ray", 0), ("EngineCore", 1))


def depth(proc: str) -> int:
    return next((d for prefix, d in _DEPTH if proc.startswith(prefix)), 2)


def last_errors(lines: list[LogLine], tbs: list[logread.Traceback] | None = None, n: int = 5) -> tuple[str, ...]:
    """Evidence when no rule decides: the root cause first, then the last error lines.

    The real engine logs the root cause once, in the process where it happened (a worker's
    ``ValueError: ...``), and then wraps it several times ("Engine core initialization failed"):
    the exception of the deepest process that is not a wrapper is what the user needs to read.
    """
    # the last n error lines, read from the end; the first exception, read from the start (both stop early)
    tail = []
    for line in reversed(lines):
        if ERRORISH.search(line.text):
            tail.append(line.text)
            if len(tail) == n:
                break
    tail = tail[::-1] if tail else [line.text for line in lines[-n:]]
    ends = sorted((depth(lines[t.exception].proc), t.exception) for t in tbs or ()
                  if t.exception is not None and not WRAPPERS.search(lines[t.exception].text))
    root = lines[ends[0][1]].text if ends else first_exception(lines)
    picked = ([root] if root is not None else []) + [t for t in tail if t != root]
    return tuple(cut(text) for text in picked[:n])


def first_exception(lines: list[LogLine]) -> str | None:
    """The first exception line that is not a wrapper; a repeated line is judged once (a crash loop)."""
    seen: set[str] = set()
    for line in lines:
        # an approximate body (after the first "] "): it only decides which line is shown, never a class
        body = line.text.partition("] ")[2] or line.text
        if body in seen:
            continue
        seen.add(body)
        if ERRORISH.search(line.text) and _EXCEPTION.search(line.text) and not WRAPPERS.search(line.text):
            return line.text
    return None
