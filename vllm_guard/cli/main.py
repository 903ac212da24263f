"""Command line: parse, dispatch to one stage per command, turn errors into exit codes.

Kept light on imports so that `vllm-guard --help` stays fast: each command's module is imported by name only
when that command runs (``COMMANDS``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import TextIO, cast

from vllm_guard.cli.parser import PROG, build_parser, split_at_target
from vllm_guard.errors import GuardError, UsageError
from vllm_guard.exit_codes import ExitCode

# command -> (module under vllm_guard.cli, function): imported when the command runs.
COMMANDS = {
    "serve": ("serve", "serve"), "check": ("serve", "check"), "snapshot": ("snapshot", "snapshot"),
    "explain": ("explain", "explain"), "init": ("init", "init"), "attempts": ("attempts", "attempts"),
    "ps": ("ps", "ps"), "checks": ("listings", "list_checks"), "completion": ("listings", "completion"),
    "models": ("listings", "models"), "manifest": ("manifest", "manifest"),
}


def dispatch(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
             stdin: TextIO | None = None) -> int:
    module, name = COMMANDS[args.command]
    handler = getattr(importlib.import_module(f"vllm_guard.cli.{module}"), name)
    if args.command == "explain":
        return int(handler(args, env=env, stdout=stdout, stderr=stderr, stdin=stdin))
    return int(handler(args, env=env, stdout=stdout, stderr=stderr))


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the CLI and return the exit code. Tests call this directly."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv is None and "serve" in args_list:
            # First, before the imports and the preflight: a stop signal from now on is exit 128+signum (143 for
            # SIGTERM), never death by the signal. Only for serve, so that --help imports no stage. Inside the
            # try: a SIGTERM caught while the later handlers are still being installed raises here (CI, once).
            from vllm_guard.launch.process import raise_on_stop_signals

            raise_on_stop_signals()
        code = _main(args_list, environ=environ, stdout=stdout, stderr=stderr, stdin=stdin)
    except KeyboardInterrupt as e:  # a stop signal outside _main's own try
        code = _interrupted(e)
    if argv is None:
        _leave_if_ray_abandoned(code)
    return code


def _leave_if_ray_abandoned(code: int) -> None:
    """A Ray call left running past its deadline (cluster/bounded.py): Ray's atexit shutdown would wait on it, so
    the process leaves now, its output flushed."""
    bounded = sys.modules.get("vllm_guard.cluster.bounded")
    if bounded is not None and getattr(bounded, "ABANDONED", None):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _usage_termination_message(guard_part: list[str], e: UsageError, env: Mapping[str, str], err: TextIO) -> None:
    """A `serve` command line argparse refuses: the pod's termination message says so (cli/serve.py writes the
    others)."""
    words = [w for w in guard_part if not w.startswith("-")]
    if words[:1] != ["serve"] or "--dry-run" in guard_part:
        return
    from vllm_guard.report import termination

    note = termination.write(termination.summary(int(e.exit_code), e.message, [e.hint] if e.hint else []),
                             env.get("VLLMGUARD_TERMINATION_LOG") or None)
    if note is not None:
        err.write(f"{PROG}: note: {note}\n")


def _interrupted(e: KeyboardInterrupt) -> int:
    """Ctrl-C: 130; a stop signal before the supervisor's handlers (process.StopSignalled): 128+signum."""
    signum = getattr(e, "signum", None)
    return 128 + signum if isinstance(signum, int) else int(ExitCode.INTERRUPTED)


def _main(args_list: list[str], *, environ: Mapping[str, str] | None, stdout: TextIO | None,
          stderr: TextIO | None, stdin: TextIO | None) -> int:
    from vllm_guard.cli.pipes import PipeSafe

    env = dict(os.environ if environ is None else environ)
    # A reader that leaves early (`| head -1`) must not turn the command's exit status into 1.
    out = cast(TextIO, PipeSafe(stdout or sys.stdout))
    err = cast(TextIO, PipeSafe(stderr or sys.stderr))
    debug = False
    try:
        # argparse prints --help and --version to sys.stdout; send them where the caller asked.
        guard_part, vllm_part = split_at_target(args_list)
        with contextlib.redirect_stdout(out):
            try:
                args = build_parser().parse_args(guard_part)
            except UsageError as e:
                _usage_termination_message(guard_part, e, env, err)
                raise
        if vllm_part:
            args.target, args.vllm_args = None, vllm_part
        debug = bool(getattr(args, "debug", False))
        if args.command is None:
            build_parser().print_help(out)
            return ExitCode.USAGE
        return dispatch(args, env=env, stdout=out, stderr=err, stdin=stdin)
    except GuardError as e:
        if debug:
            traceback.print_exc(file=err)
        if isinstance(e, UsageError) and not e.hint:
            # A command-line mistake without its own hint points to that command's help.
            command = next((a for a in args_list if not a.startswith("-")), None)
            e.hint = f"see `{PROG} {command} --help`" if command else f"see `{PROG} --help`"
        if "--json" in args_list:
            # A script that asked for JSON gets JSON on stdout for errors too, and the same words on stderr.
            import json

            from vllm_guard.schemas import ERROR

            out.write(json.dumps({"schema": ERROR, "error": e.message, "hint": e.hint, "exit": int(e.exit_code)},
                                 indent=2) + "\n")
        err.write(f"{PROG}: error: {e.message}\n")
        if e.hint:
            err.write(f"hint: {e.hint}\n")
        return int(e.exit_code)
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except SystemExit as e:  # --help and --version
        return int(e.code) if isinstance(e.code, int) else 0
    except Exception:
        if debug:
            traceback.print_exc(file=err)
        else:
            exc = sys.exc_info()[1]
            err.write(f"{PROG}: internal error: {type(exc).__name__}: {exc}\n"
                      "hint: this is a bug in vllm-guard; run again with --debug and report the traceback\n")
        return int(ExitCode.ERROR)

