"""Pure: a vLLM startup log (and maybe its exit status) -> the failure class, stage, numbers, evidence.

Reads every vLLM wording we know (V0 <= 0.7, V1 0.8-0.11, 0.33; vllm-reference
§2, §6), PyTorch's OOM texts, uvicorn's and CPython's bind errors, through
process prefixes, ANSI colours, journald prefixes, CRLF and tqdm bars. The
first decisive line wins over the wrappers ("Engine core initialization
failed"). When the evidence is weak the answer is ``unknown``: a wrong class
sends the ladder the wrong way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_guard.diagnose import (
    certainty,
    conditions,
    context,
    fallback,
    guard_report,
    hang_log,
    leads,
    logread,
    progress,
    raise_sites,
    segments,
)
from vllm_guard.diagnose.catalogue_support import SUPPORT_SOURCES
from vllm_guard.diagnose.diagnosis import ERRORISH, WRAPPERS, Diagnosis, cut, evidence, last_errors, ready
from vllm_guard.diagnose.dispatch import rules_for
from vllm_guard.diagnose.figures import held_by_another, numbers_of, own_pids, placement_numbers
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, WRAPPED_MIN, WRAPPED_PREFIXED_MIN, LogLine
from vllm_guard.diagnose.markers import API_SERVER, BEFORE_START, KV_CACHE, LOADING, STAGE_NAMES, stage_of
from vllm_guard.diagnose.missing_modules import package_missing
from vllm_guard.diagnose.rule import Rule
from vllm_guard.diagnose.rules import SIGBUS, SIGKILL

CLASSES = ("gpu_busy", "kv_cache_too_small", "no_kv_memory", "oom_loading", "oom_profiling", "oom_cudagraph",
           "host_oom", "shm_exhausted", "tp_indivisible", "dtype_unsupported", "quant_unsupported",
           "max_len_exceeds_model", "too_few_gpus", "port_in_use", "disk_full", "model_access",
           "remote_code_required", "unsupported_architecture", "startup_timeout", "usage_error", "network",
           "startup_hang", "version_mismatch", "gpu_oom", "preflight_failed", "unknown")
UNKNOWN_STAGE = "unknown"  # a stage the log does not show (a bare CUDA OOM pasted without frames)

# --- cleaning (logread.py reads the structure) ---------------------------------------

def clean_lines(text: str) -> list[tuple[str, str]]:
    """(process, line) pairs: prefixes, colours and progress-bar redraws removed."""
    return [(line.proc, line.text) for line in logread.read(text)]
# (PyCharm's "exit code 137 (interrupted by signal 9: SIGKILL)" and Databricks' "The Python process exited with exit
# code 137 (SIGKILL)" (blind98/b98-002) name the signal; a bare 137 is not read as one: a served start's container
# stopped by Docker, or another container's, writes it too)
_EXIT_IN_LOG = re.compile(r"Failed core proc\(s\): \{'EngineCore(?:_DP\d+)?': (-?\d+)\}"
                          r"|exit code[: ]+(-?\d+)(?: \((?:interrupted by signal \d{1,2}: ?)?SIG(KILL|BUS)\))?"
                          r"|exited with code (-?\d+)|status=(\d+)/(KILL|BUS)|code=killed, status=(\d+)/(\w+)")
# The kernel's "Out of memory: Killed process 4242 (python3)"; a reporter may elide the pid (blind22/b22-013).
_HOST_OOM = re.compile(r"Out of memory: Kill(?:ed)? process (?:\d+|\()|Failed with result 'oom-kill'"
                       r"|\"?OOMKilled\"?:\s*true"
                       # systemd's "A process of this unit has been killed by the OOM killer." (not Ray's list of
                       # what may have ended a worker, "(1) the process was killed by the OOM killer due to high memory
                       # usage, (2) ...", however a paste wraps it; blind115/b115-009)
                       r"|Memory cgroup out of memory|oom-kill:|oom_reaper|has been killed by the OOM killer"
                       r"|exceeds the memory usage threshold of [\d.]{1,10}\. Ray killed this worker"
                       # Ray's raylet (node_manager.cc): "N Workers (tasks / actors) killed due to memory pressure"
                       r"|killed due to memory pressure \(OOM\)")
# Ray's memory monitor: "... memory used=11.15GB) was running was 12.49GB / 13.15GB (0.950003), which exceeds ..."
_RAY_OOM = re.compile(r"memory used=(?P<worker_rss_gb>[\d.]{1,20})GB\) was running was "
                      r"(?P<node_used_gb>[\d.]{1,20})GB / (?P<node_total_gb>[\d.]{1,20})GB")
_KILLED = re.compile(r"Kill(?:ed)? process (?:\d+ )?\((?P<process>[^)]{1,64})\)")


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
    # "vllm", or "preflight": the guard's own preflight report, which is not a start of vLLM
    kind: str = "vllm"


def starts(text: str, *, exit_status: int | None = None) -> list[Start]:
    """Every start in the log, each diagnosed on its own lines; ``exit_status`` belongs to the last one."""
    lines = logread.read(text)
    bounds = segments.segments(lines) if lines else [(0, 0)]
    out = []
    number = 0
    for index, (a, b) in enumerate(bounds, 1):
        part = lines[a:b]
        last = index == len(bounds)
        diagnosis, failed = _classify_start(part, exit_status if last else None)
        report = diagnosis.cls == "preflight_failed" or _passed_report(part)
        number += 0 if report else 1
        out.append(Start(0 if report else number, part[0].n if part else 0, part[-1].n if part else 0, diagnosis,
                         failed, "preflight" if report else "vllm"))
    return out


def _passed_report(lines: list[LogLine]) -> bool:
    """A segment that is only the guard's preflight report (it passed: vLLM starts in the next segment)."""
    return any(line.text.startswith("verdict: ") and guard_report.VERDICT.match(line.text) for line in lines) and \
        not any(stage_of(line.text) for line in lines)


def last_failed(found: list[Start]) -> Start:
    """The start to diagnose: the last one that failed, or the last one when none did."""
    return next((s for s in reversed(found) if s.failed), found[-1])


def classify(text: str, *, exit_status: int | None = None) -> Diagnosis:
    """Classify the last failed start in a vLLM log; ``exit_status`` helps when the log alone cannot tell."""
    return last_failed(starts(text, exit_status=exit_status)).diagnosis


def _classify_start(lines: list[LogLine], exit_status: int | None) -> tuple[Diagnosis, bool]:
    d = _diagnose(lines, exit_status)
    if d.cls != "unknown" or d.exit_signal is not None:
        return d, True
    return d, not ready(lines) and any(ERRORISH.search(line.text) for line in lines)


def _candidates(lines: list[LogLine], i: int) -> list[str]:
    """The texts a line is read as: itself, an exception's tuple of strings joined, a wrapped line rejoined."""
    text = lines[i].text
    out = [text]
    if "Worker failed with error '" in text and (m := _WORKER_QUOTE.search(text)):
        # V1's wrapper (v1/executor/multiproc_executor.py, 0.10+) quotes its worker's error: read first, since a
        # paste may keep the wrapper and lose the worker's traceback (llm-d #663)
        # an error the worker raised: as it reads (for the rules anchored at its start), and said as an error (for
        # those that want an error line: "CUDA error: out of memory" alone is also Inductor's dropped choice)
        out[:0] = [m.group(1), WORKER_ERROR + m.group(1)]
    if "('" in text and "', '" in text:  # RuntimeError: ('Quantization scheme is not supported for ', ...)
        out.append(_TUPLE.sub("", text))
    # An exception quoted indented (a post's or a commit message's "  OSError: ..."; blind173/b173-006) is also read
    # as it was raised, for the rules anchored at a line's start.
    head = text
    if text[:1] in (" ", "\t") and logread.quoted_head(text):
        head = text.lstrip()
        out.append(head)
    # too short to have been wrapped (logread.continuation's own first test), unless a person broke it by hand
    elif (len(text) < WRAPPED_PREFIXED_MIN or (len(text) < WRAPPED_MIN and not lines[i].proc)) \
            and not logread.quoted_head(text):
        return out
    nxt = logread.continuation(lines, i)
    if nxt is not None:
        # a message re-wrapped over more lines (blind106/b106-001: vLLM's KV message at 70 columns over four): the
        # whole run, joined both ways, first, so that a rule reads the figures on its later lines
        run = [head, nxt.text]
        while len(run) < logread.WRAPPED_RUN_MAX and (more := logread.continuation(lines, i + len(run) - 1,
                                                                            WRAPPED_PREFIXED_MIN)) is not None:
            run.append(more.text)
        if len(run) > 2:
            out += [" ".join(part.strip() for part in run), "".join(run)]
        # a terminal cuts mid-word and keeps the space; a person re-wrapping a line drops it
        out += [f"{head} {nxt.text.lstrip()}", head + nxt.text]
    return out


WORKER_ERROR = "Error in worker: "
_TUPLE = re.compile(r"'\s{0,4},\s{0,4}'|(?<=: )\('|'\)$")
# The quote ends at vLLM's own words after it, or where a paste stops.
_WORKER_QUOTE = re.compile(r"Worker failed with error '(.{1,2000}?)(?:', please check the stack trace above|$)")


def _diagnose(lines: list[LogLine], exit_status: int | None) -> Diagnosis:
    ctx = context.read(lines)
    reached = progress.progress(lines)
    final_stage = reached.final
    own = functools.cache(lambda: own_pids(lines))  # read only when an OOM names another process
    if final_stage == BEFORE_START and any(line.text.startswith(guard_report.STARTS) and
                                           guard_report.is_report_line(line.text) for line in lines):
        report = guard_report.failed_preflight(lines)
        if report is not None:  # the guard refused to start vLLM: its own report, not a vLLM failure
            checks, shown = report
            return Diagnosis("preflight_failed", BEFORE_START, {"failed_checks": len(checks["failed_checks"])},
                             shown, _signal_of(exit_status), ", ".join(checks["failed_checks"]) or None,
                             {**ctx, **checks}, template=guard_report.SOURCE, stage_from=certainty.MESSAGE)
    if (stopped := hang_log.guard_hang(lines, ctx)) is not None:  # the guard stopped it: vLLM's stop lines follow
        return stopped
    tbs = logread.tracebacks(lines)
    frame_stage = certainty.frame_stages(tbs)
    signal = _signal_of(exit_status)
    # An OOM the log does not place, and a warning that may explain the failure: said when nothing decisive follows
    aside: list[Diagnosis] = []
    # A line read before (same process, same text less vLLM's logging prefix of level, time and file:line,
    # same traceback stage around it) decides nothing new: a crash loop's million identical errors cost a set
    # lookup each (issue 28). Whether a prefix was there stays in the key, for the rules anchored at ^; the
    # rules that read the lines around (`when`) are never skipped.
    tried: set[tuple[str, str, str | None]] = set()
    for i in range(len(lines)):
        if "Worker failed with error '" in lines[i].text:  # V1's wrapper: its quote was read with it (_candidates)
            body = logread.body(lines[i].text)
            key = (lines[i].proc, body if body is lines[i].text else "\x00" + body, frame_stage(lines[i].proc, i))
            if key in tried:
                continue
        for text in _candidates(lines, i):
            body = logread.body(text)
            key = (lines[i].proc, body if body is text else "\x00" + body, frame_stage(lines[i].proc, i))
            if key in tried:
                continue
            rules = rules_for(body)  # no rule word lives in vLLM's logging prefix: read the body only
            if rules is None or _settled(rules, text):
                tried.add(key)
            if rules is None:
                continue
            m_exit = _EXIT_IN_LOG.search(text)
            if m_exit and signal is None:
                signal = _signal_from_match(m_exit)
            if WRAPPERS.search(text):
                break
            found = _match(text, rules, lines, i, ctx, reached, frame_stage, signal, aside, own)
            if found is not None:
                return found
    oom = next((d for d in aside if d.cls == "gpu_oom"), None)
    if oom is not None:  # an OOM is an error, a warning only may be one
        return oom
    raised = fallback.raised_in(lines, tbs, signal, ctx)
    if raised is not None:
        return raised
    if signal == SIGKILL:
        # A SIGKILL alone does not say who sent it: the host's OOM killer (most likely while the weights
        # are read through host memory), `docker kill`, a watchdog or a person. Not a confident host_oom.
        note = ("vLLM was killed (SIGKILL): by the host OOM killer, `docker kill`, a watchdog or a person; "
                "the log does not say which (look for 'Out of memory: Killed process' in dmesg or the journal)")
        return Diagnosis("unknown", final_stage, {"signal": SIGKILL}, (note, *last_errors(lines, tbs, 4)), signal,
                         "sigkill", ctx, confidence="none", stage_from=certainty.PROGRESS,
                         hint=("host_oom", "a SIGKILL while loading is most often the host's OOM killer"))
    if signal == SIGBUS:
        return Diagnosis("shm_exhausted", final_stage, {"signal": SIGBUS}, last_errors(lines, tbs), signal,
                         context=ctx, confidence="medium", template="the exit signal SIGBUS (7)",
                         stage_from=certainty.PROGRESS)
    # a warning the start went on after, when what raised and how it ended say nothing more; or a warning that
    # explains a failure the log shows without naming it
    warned = aside or [d for d in (fallback.supported(lines, tbs, signal, ctx),) if d is not None]
    decided = leads.deciding(warned, bool(aside), lines, tbs, signal, exit_status)
    if decided is not None:
        return decided
    # before a hang: one rank's import that ended its start, the others waiting for it (a plugin vLLM logged as
    # skipped, or an import the start's progress went past, is not read)
    missing = package_missing(lines, tbs, reached, signal, ctx)
    if missing is not None:
        return missing
    hung = hang_log.log_hang(lines, ctx) if signal is None and exit_status is None else None  # it never exited
    if hung is not None:
        return hung
    if warned:  # warnings the start went on after, in a paste that shows no failure: the first is a lead only
        return leads.only_a_lead(warned[0], final_stage)
    # a paste of a traceback alone: its frames say where it failed when no progress line does (blind39/b39-004, a
    # KeyError in a model's load_weights)
    placed = certainty.stage_of_frames(tbs[-1].frames) if tbs and final_stage == BEFORE_START else None
    where = raise_sites.where_raised(lines)  # the message is vLLM's own: say where it raises it
    hint = certainty.hint_for(lines, tbs)
    # a paste with no error at all, not ready, of a start whose end nobody reported: cut there, or hung there
    quiet = (hint is None and not tbs and signal is None and exit_status is None and final_stage != API_SERVER
             and bool(lines) and not ready(lines) and not any(leads.NOT_QUIET.search(line.text[:MAX_LINE_CHARS])
                                                              for line in lines))
    if quiet:
        where_ended = STAGE_NAMES.get(final_stage, final_stage)
        hint = ("startup_hang", f"the log ends at {where_ended} with no error: if the start stayed there for "
                                "minutes, it hung there")
    return Diagnosis("unknown", placed or final_stage, {}, (*last_errors(lines, tbs), *((where,) if where else ())),
                     signal, "no_error" if quiet else None, context=ctx,
                     confidence="none", stage_from=certainty.FRAMES if placed else certainty.PROGRESS,
                     hint=hint)


def _settled(rules: tuple[Rule, ...], text: str) -> bool:
    """Whether a text's reading is the same wherever it stands: no rule that reads the lines around matches its own
    words in it (a word such a rule shares with many lines, "error:", must not make a crash loop's every copy read
    again)."""
    return not any(rule.when and rule.when not in conditions.LOG_WIDE and rule.pattern.search(text) for rule in rules)


def _match(text: str, rules: tuple[Rule, ...], lines: list[LogLine], i: int, ctx: dict[str, Any],
           reached: progress.Progress, frame_stage: Callable[[str, int], str | None], signal: int | None,
           aside: list[Diagnosis], own: Callable[[], frozenset[int]] = frozenset) -> Diagnosis | None:
    # what the log says: V1's wrapper line itself, not the candidate that reads its quote as an error
    said = lines[i].text if text.startswith(WORKER_ERROR) else text
    if _HOST_OOM.search(text):
        killed = next((m for line in lines[i:i + 5] if (m := _KILLED.search(line.text))), None)
        numbers: dict[str, Any] = {"process": killed.group("process")} if killed else {}
        ray = _RAY_OOM.search(text)
        if ray:
            numbers.update(numbers_of(ray, "worker_rss_gb", "node_used_gb", "node_total_gb"))
        shown = (cut(text), killed.group(0)) if killed and killed.group(0) not in text else (cut(text),)
        return Diagnosis("host_oom", _host_oom_stage(reached.at[i]), numbers, shown, signal, context=ctx,
                         template=certainty.HOST_OOM_SOURCE, stage_from=certainty.PROGRESS)
    for rule in rules:
        m = rule.pattern.search(text)
        if not m or (rule.warning and any(d.template == rule.source for d in aside)):
            continue  # a warning of its kind is kept once: its condition need not be asked again
        if rule.when is not None and not rule.when(text, lines, i, ctx):
            continue
        if rule.cls == "oom" and any(d.cls == "gpu_oom" for d in aside) and frame_stage(lines[i].proc, i) is None:
            continue  # an OOM the log does not place is already kept: its figures are not needed again
        numbers = rule.numbers(m) if rule.numbers else {}
        if rule.warning:
            if not any(d.template == rule.source for d in aside):
                at = rule.stage or reached.at[i]
                how = certainty.MESSAGE if rule.stage else certainty.PROGRESS
                if rule.cls == "gpu_oom":  # an out-of-memory kept aside is not placed: its stage is not shown
                    at, how = UNKNOWN_STAGE, certainty.NO_STAGE
                aside.append(Diagnosis(rule.cls, at, numbers, evidence(lines, i, said), signal, rule.detail, ctx,
                                       confidence="medium", template=rule.source, stage_from=how))
            continue
        if rule.cls == "too_few_gpus" and "placement group" in text:
            numbers = {**placement_numbers(lines[i:]), **numbers}  # vLLM's later wait lines carry the numbers
        if rule.cls == "oom":
            placed, how = reached.oom_stage(lines, i, frame_stage)
            held = held_by_another(text, numbers, own, kv_sized=placed == KV_CACHE,
                                   utilization=ctx.get("gpu_memory_utilization"))
            if held is not None:  # the OOM names who holds the GPU: that is the failure, at whatever stage
                at = UNKNOWN_STAGE if placed == BEFORE_START else placed
                return Diagnosis("gpu_busy", at, {**numbers, **held}, evidence(lines, i, said), signal,
                                 "oom_other_process", ctx, confidence="medium",
                                 template=SUPPORT_SOURCES["oom_other_process"],
                                 stage_from=certainty.NO_STAGE if at == UNKNOWN_STAGE else how)
            cls, at = progress.oom_class(placed)
            if cls == "unknown":
                # A CUDA OOM is an OOM wherever it happened; without its stage the ladder cannot pick the
                # change, so keep looking for a decisive line and say gpu_oom only when none comes.
                if not any(d.cls == "gpu_oom" for d in aside):
                    at = UNKNOWN_STAGE if placed == BEFORE_START else placed
                    aside.append(Diagnosis("gpu_oom", at, numbers, evidence(lines, i, said), signal,
                                           context=ctx, confidence="medium", template=rule.source,
                                           stage_from=certainty.NO_STAGE if at == UNKNOWN_STAGE else how))
                continue
            return Diagnosis(cls, at, numbers, evidence(lines, i, said), signal, context=ctx,
                             confidence="high" if how == certainty.FRAMES else "medium", template=rule.source,
                             stage_from=how)
        at = rule.stage or reached.at[i]
        return Diagnosis(rule.cls, at, numbers, evidence(lines, i, said), signal, rule.detail, ctx,
                         template=rule.source, stage_from=certainty.MESSAGE if rule.stage else certainty.PROGRESS)
    return None


def _signal_from_match(m: re.Match[str]) -> int | None:
    groups = m.groups()
    code = next((g for g in groups if g and g.lstrip("-").isdigit()), None)
    if code is None:
        return None
    if "KILL" in groups or "BUS" in groups:
        return SIGKILL if "KILL" in groups else SIGBUS
    value = int(code)  # Python's proc.exitcode is negative for a signal; a positive code in a log is no signal
    return -value if value < 0 else None


def _host_oom_stage(stage: str) -> str:
    return stage if stage != BEFORE_START else LOADING
