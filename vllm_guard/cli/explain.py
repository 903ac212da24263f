"""`explain`: read a log (a file, stdin or a unit's journal), split it into starts, diagnose the failed one."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from vllm_guard.errors import UsageError
from vllm_guard.exit_codes import ExitCode


def explain(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
            stdin: TextIO | None = None) -> int:
    import json

    from vllm_guard.diagnose import ladder
    from vllm_guard.diagnose.classify import last_failed
    from vllm_guard.diagnose.classify import starts as split_starts
    from vllm_guard.diagnose.markers import STAGE_NAMES
    from vllm_guard.report.docs import explain_json
    from vllm_guard.report.explain import print_explain
    from vllm_guard.suggest import toml_line

    if args.unit and args.log is not None:
        raise UsageError("give a log FILE or --unit NAME, not both")
    if args.unit is None and args.log is None and _is_terminal(stdin):
        raise UsageError("no log given: nothing to diagnose",
                         hint="vllm-guard explain FILE, ... | vllm-guard explain -, or vllm-guard explain --unit NAME")
    text = _read_log(args, stdin)
    if args.unit and (not text.strip() or text.strip() == "-- No entries --"):
        raise UsageError(f"the journal has no entries for {args.unit}",
                         hint="check the unit's name (systemctl list-units 'vllm*'), and read the journal as root "
                         "or as a member of the systemd-journal group")
    if not text.strip():
        raise UsageError("the log is empty: nothing to diagnose")
    found = split_starts(text, exit_status=args.exit_status)
    chosen = last_failed(found)
    n_starts = sum(s.kind == "vllm" for s in found)  # the guard's preflight reports are not starts of vLLM
    docs = []
    for start in found:
        step = ladder.next_step(start.diagnosis, ladder.settings_from_log(start.diagnosis))
        doc = json.loads(explain_json(start.diagnosis, step))
        doc.update({"start": start.number if start.kind == "vllm" else None, "starts": n_starts,
                    "kind": start.kind, "lines": [start.first_line, start.last_line],
                    "failed": start.failed, "diagnosed": start is chosen})
        docs.append((start, step, doc))
    if args.json:
        out = [doc for _, _, doc in docs] if args.all else next(doc for s, _, doc in docs if s is chosen)
        stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        if args.all or len(found) > 1:
            for start, step, _ in docs:
                d = start.diagnosis
                state = d.cls if start.failed or d.cls != "unknown" else "no failure seen"
                if isinstance(step, ladder.Step):
                    change = f"next: {toml_line(str(step.param), step.value)}" if step.change else "next: no change"
                else:
                    change = "next: none"
                mark = "  <- diagnosed below" if start is chosen else ""
                what = (f"start {start.number}/{n_starts}" if start.kind == "vllm"
                        else "guard preflight report (not a start)")
                stdout.write(f"{what} (lines {start.first_line}-{start.last_line}): "
                             f"{state} during {STAGE_NAMES.get(d.stage, d.stage)}; {change}{mark}\n")
            stdout.write("\n")
        step = next(step for s, step, _ in docs if s is chosen)
        print_explain(chosen.diagnosis, step, stdout)
    return ExitCode.EXPLAIN_UNKNOWN if chosen.diagnosis.cls == "unknown" else ExitCode.OK


def _is_terminal(stdin: TextIO | None) -> bool:
    import sys

    stream = stdin if stdin is not None else sys.stdin
    try:
        return bool(stream is not None and stream.isatty())
    except (OSError, ValueError):
        return False


def _read_log(args: argparse.Namespace, stdin: TextIO | None) -> str:
    if args.unit:
        from vllm_guard.shell import ShellError, run

        try:
            return run("journalctl", ["-u", args.unit, "-n", "2000", "--no-pager", "-o", "short"], timeout_s=30)
        except ShellError as e:
            raise UsageError(f"cannot read the journal of {args.unit}: {e}",
                             hint="run as a user who may read the journal (root, or the systemd-journal group)"
                             ) from None
    from vllm_guard.safefile import LOG_TAIL_BYTES, FileProblem, read_stream_tail, read_tail

    if args.log in (None, "-"):
        # Read until EOF, however long a pipe runs, keeping only the tail: memory stays bounded.
        text, _ = read_stream_tail(_stdin_text(stdin), LOG_TAIL_BYTES)
        return text
    try:
        data, cut = read_tail(Path(args.log), LOG_TAIL_BYTES)
    except FileNotFoundError:
        raise UsageError(f"cannot read {args.log}: no such file") from None
    except FileProblem as e:  # a FIFO, /dev/zero, /dev/urandom, a directory
        raise UsageError(f"cannot read the log: {e}",
                         hint="give a log file, or pipe the log in: ... | vllm-guard explain -") from None
    text = data.decode("utf-8", errors="replace")
    # The last LOG_TAIL_BYTES hold the failure (vLLM's error is at the end); a cut line is dropped.
    return text.partition("\n")[2] if cut else text


def _stdin_text(stdin: TextIO | None) -> TextIO:
    """Standard input as text that never fails to decode; a device that is not a terminal
    (/dev/zero, /dev/urandom: endless, and not a log) is refused."""
    import io
    import os
    import stat
    import sys

    if stdin is not None:
        return stdin
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return sys.stdin
    if stat.S_ISCHR(mode) and not sys.stdin.isatty():
        raise UsageError("standard input is a character device (such as /dev/zero), not a log",
                         hint="pipe the log in: journalctl -u UNIT | vllm-guard explain -")
    return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
