"""Pure: a log split into its starts (each launch of vLLM a paste or a journal holds)."""

from __future__ import annotations

import re

from vllm_guard.diagnose import commandline
from vllm_guard.diagnose.logread import LEVELS, WRAPPED_RUN_MAX, LogLine, raised

# vLLM's start banner over the versions: 0.33's "vLLM server version", V0/V1's "vLLM API server version".
_BANNER = re.compile(r"vLLM (?:API )?server version \S{1,64}")
_GUARD_REPORT = re.compile(r"^vllm-guard check \S{1,4096} on \S")
_GUARD_ATTEMPT = re.compile(r"^vllm-guard: attempt \d{1,4}/\d{1,4}\b.{0,400}: starting vLLM$")
_PROGRESS = re.compile(r"Traceback|Error|ERROR|Loading|KV cache|startup complete|Started server process")
# vLLM's warning that a compiled extension did not load ("Failed to import from vllm._C with ImportError(...)",
# _custom_ops.py 0.4-0.33), logged before the banner on every platform without it: its "Error" is not a start's own
# (blind158/b158-003, vllm-ascend). Other warnings naming an error still count (a review: an attempt that died
# before its banner leaving only warnings is a start of its own). vllm-ascend's own (device_allocator/camem.py,
# an ERROR record in 0.7.3-0.8.x: "Failed to import vllm_ascend_C:%s") is the same. A terminal may wrap
# either, and the rest ("Error('libcuda.so.1: ...')") has no record header of its own: it is the warning's too.
_IMPORT_WARNINGS = ("Failed to import from vllm.", "Failed to import vllm_ascend_C:")
_SHELL_OUTPUT = re.compile(r"^usage: |: error: |Segmentation fault|Killed|Aborted|core dumped|command not found")
# a record of vLLM's own (its logging's level first, uvicorn's "INFO:"), or a traceback: not prose naming an error
_RECORD_HEADS = ("INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "Traceback")
_SYSTEMD_START = re.compile(r"^(?:Started|Starting) \S{1,255}")


def segments(lines: list[LogLine]) -> list[tuple[int, int]]:
    """The starts in a log as [first, end) index ranges: a log of one start gives one range.

    A start begins at the guard's own "attempt N/M: starting vLLM" line, at systemd's "Starting"/"Started", at
    vLLM's start banner, at a command line that starts vLLM, or where the journal's process id of vLLM's output
    changes. A boundary counts only once the current start has shown something of its own, so the banner right after
    the guard's attempt line (or systemd's Starting then Started) stays in one start. A command line counts after
    vLLM's own records or after the output of the command before it; one with nothing after it is the start before's.
    """
    bounds = [0]
    seen_content = False  # the current start has lines past its boundary lines
    progressed = False  # ... and a banner, an error or a stage of its own: a banner now is a new start
    has_record = False  # ... and a record of vLLM's (a level first, or a traceback), not prose naming an error
    pids: dict[str, str] = {}
    warning_rest = 0  # how many more unheaded lines may be an import warning's wrapped rest
    warning_proc = ""
    by_command = False  # the current start began at a command line
    command_seen = False  # the current start holds a command line
    after_command = False  # ... and a line of output (no command, no backslash-continued argument) followed the last
    in_command = False  # the line before was a command's, ending in a backslash
    for i, line in enumerate(lines):
        boundary = False
        text = line.text
        if line.source:
            name, _, pid = line.source.partition("[")
            if name == "systemd":
                if _SYSTEMD_START.match(text):
                    boundary = True
                else:
                    continue  # Stopped, Failed with result ...: the end of the start before
            elif pid and name != "kernel":
                if name in pids and pids[name] != pid:
                    boundary = True
                pids[name] = pid
        if not boundary and text.startswith("vllm-guard: attempt") and _GUARD_ATTEMPT.match(text):
            boundary = True
        # The guard's preflight report (report/check.py) begins with its header: never part of a vLLM start.
        if not boundary and text.startswith("vllm-guard check ") and _GUARD_REPORT.match(text):
            boundary = True
        banner = not boundary and "server version" in text and _BANNER.search(text) is not None
        command = not boundary and not banner and commandline.maybe(text) and commandline.command(lines, i) is not None
        # (not a banner after prose alone: "Loading the model fails with this Error:", then the command and its log)
        if (banner and progressed and has_record) or (command and ((progressed and has_record) or after_command)):
            boundary = True
        if boundary:
            # A paste that puts the command it ran after the log ("... Error ...", then "vllm serve M
            # --enforce-eager"): the command is that start's, not a start of its own (blind8/b8-028).
            merged = by_command and not after_command
            if merged:
                bounds.pop()
            appended = (seen_content or merged) and i > bounds[-1]
            if appended:
                bounds.append(i)
            seen_content = progressed = has_record = after_command = False
            by_command = command_seen = command and appended
            in_command = command and text.endswith("\\")
            continue
        seen_content = True
        if command or in_command:
            # the command's own lines: no output of it (a second command right after it does not end it either)
            command_seen = True
            after_command = after_command and not command
            in_command = text.endswith("\\")
            continue
        # output of the command, not a person's words between two commands ("or", blind8/b8-021): a record, a
        # traceback, an error, argparse's usage, the shell's word for a killed process
        after_command = after_command or (command_seen and (text.startswith(_RECORD_HEADS) or _PROGRESS.search(text)
                                                            is not None or _SHELL_OUTPUT.search(text) is not None))
        if progressed and has_record:
            continue  # (a long log's every line: nothing below can change a start that has progressed)
        has_record = has_record or text.startswith(_RECORD_HEADS)
        if progressed:
            continue
        if "Failed to import " in text and any(w in text for w in _IMPORT_WARNINGS):
            warning_rest, warning_proc = WRAPPED_RUN_MAX, line.proc
        elif warning_rest and line.proc == warning_proc and not text.startswith(LEVELS) and not raised(text):
            warning_rest -= 1
        else:
            warning_rest = 0
            progressed = _PROGRESS.search(text) is not None
        progressed = progressed or banner
    if by_command and not after_command:
        bounds.pop()  # the command pasted after its log, above
    return [(a, b) for a, b in zip(bounds, [*bounds[1:], len(lines)], strict=True)]
