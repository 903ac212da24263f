"""Command line: parse, dispatch one function per subcommand, turn errors into exit codes.

Kept light on imports so that `vllm-guard --help` stays fast: every command
imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import NoReturn, TextIO, cast

from vllm_guard import __version__
from vllm_guard.errors import GuardError, UsageError
from vllm_guard.exit_codes import EXIT_CODE_MEANINGS, ExitCode

PROG = "vllm-guard"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so main() owns every exit code."""

    def error(self, message: str) -> NoReturn:
        wrong = re.search(r"invalid choice: '([^']*)'", message)
        if wrong and self._subparsers is not None:
            # A mistyped command: say which one was meant, not argparse's whole list.
            import difflib

            known = [c for a in self._subparsers._group_actions for c in getattr(a, "choices", None) or ()]
            close = difflib.get_close_matches(wrong.group(1), known, n=1, cutoff=0.5)
            raise UsageError(f"{wrong.group(1)!r} is not a vllm-guard command"
                             + (f"; did you mean {close[0]!r}?" if close else ""),
                             hint=f"the commands are: {', '.join(known)}; see `{self.prog} --help`")
        raise UsageError(message, hint=f"see `{self.prog} --help`")


def _exit_code_table() -> str:
    return ("`vllm-guard COMMAND --help` shows a command's options and examples.\n\nexit codes:\n"
            + "\n".join(f"  {int(c):>3}  {m}" for c, m in EXIT_CODE_MEANINGS.items()))


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks for errors")

    parser = _Parser(
        prog=PROG,
        description="A drop-in `vllm serve` that checks GPU memory, host and model before loading, "
        "and supervises vLLM with a guarded retry ladder.",
        epilog=_exit_code_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
        from vllm_guard.cli.helptext import epilog

        # The exit-code table is printed once, by `vllm-guard --help`; each command shows its examples.
        p = sub.add_parser(name, help=help_text, description=description or help_text, parents=[common],
                           formatter_class=argparse.RawDescriptionHelpFormatter, epilog=epilog(name))
        p.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}",
                       help="print the version and exit")
        return p

    def target(p: argparse.ArgumentParser) -> None:
        p.add_argument("--machine", metavar="FILE",
                       help="plan against a machine snapshot instead of this machine (env VLLMGUARD_MACHINE)")
        p.add_argument("--gpus", metavar="auto|0,1",
                       help='guard.gpus: "auto" (the idlest GPUs the layout needs, chosen under the launch locks) '
                       "or NVML indices / UUIDs (env VLLMGUARD_GPUS)")
        p.add_argument("target", nargs="?", metavar="TARGET",
                       help="a profile (a TOML file, whatever its name) or a model id / local directory as "
                       "`vllm serve` takes it "
                       "(env VLLMGUARD_PROFILE when omitted)")
        p.add_argument("vllm_args", nargs=argparse.REMAINDER, metavar="VLLM OPTIONS",
                       help="`vllm serve` options; they override the profile's values")

    serve = command("serve", "check, then start and supervise vLLM",
                    "Run the preflight checks, then start vLLM. Guard options go before TARGET; "
                    "everything after TARGET is passed to `vllm serve`.")
    serve.add_argument("--dry-run", action="store_true",
                       help="print the checks, the command line and the environment; start nothing")
    serve.add_argument("--force", action="store_true", help="launch even when a preflight check fails")
    serve.add_argument("--exec", action="store_true",
                       help="after preflight, replace the guard by vLLM: no ladder, no supervision")
    serve.add_argument("--json", action="store_true",
                       help="with --dry-run: print the checks, the command line and the environment as JSON")
    target(serve)

    check = command("check", "preflight checks only: will this profile start here?")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--list", action="store_true", help="list every check id with what it checks, and exit")
    target(check)

    snapshot = command("snapshot", "record this machine's GPUs and host as a JSON snapshot")
    snapshot.add_argument("-o", "--output", metavar="FILE", help="write the snapshot to FILE")
    snapshot.add_argument("--json", action="store_true", help="print the snapshot JSON to stdout")
    snapshot.add_argument("--force", action="store_true", help="overwrite an existing FILE (as init does)")
    snapshot.add_argument("--cluster", action="store_true",
                          help="every node of the Ray cluster, probed by Ray tasks on each node, in one file "
                          "(docs/ray.md)")
    snapshot.add_argument("--address", metavar="ADDR",
                          help="with --cluster: the Ray cluster (default RAY_ADDRESS, else the one started here)")
    snapshot.add_argument("--model", metavar="MODEL", help="with --cluster: whether each node can read this model")
    snapshot.add_argument("--timeout", type=float, default=5.0, metavar="S",
                          help="with --cluster: seconds each node has to answer (default 5)")

    explain = command("explain", "diagnose a failed vLLM start from its log")
    explain.add_argument("log", nargs="?", metavar="FILE", help="a log file, or - for stdin")
    explain.add_argument("--unit", metavar="NAME", help="read the journal of this systemd unit")
    explain.add_argument("--exit-status", type=int, metavar="N", help="vLLM's exit status (negative: signal)")
    explain.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    explain.add_argument("--all", action="store_true",
                         help="every start in the log with its class (a journal holds several), not only the last "
                         "failed one; with --json, a list with the diagnosed start marked")

    init = command("init", "write a profile fitted to this machine (or a snapshot)")
    init.add_argument("model", metavar="MODEL", help="a Hugging Face id or a local path")
    init.add_argument("--machine", metavar="FILE", help="fit the profile to a machine snapshot")
    init.add_argument("-tp", "--tensor-parallel-size", type=int, metavar="N",
                      help="default: one GPU, else tensor parallel over the free GPUs")
    init.add_argument("--users", type=int, metavar="N", help="full-length requests that must fit at once")
    init.add_argument("--context", metavar="N", help="wanted max-model-len (e.g. 32768 or 32K)")
    init.add_argument("-o", "--output", metavar="PROFILE", help="where to write the profile (default: stdout)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--json", action="store_true", help="print what was chosen and why, with the profile, as JSON")

    attempts = command("attempts", "show the attempt history of a profile")
    attempts.add_argument("source", nargs="?", metavar="PROFILE|NAME|FILE",
                          help="a profile (its guard.attempt-log), a profile name (its log in the state directory) "
                          "or an attempt log file (env VLLMGUARD_PROFILE when omitted)")
    attempts.add_argument("--json", action="store_true", help="print the records as JSON")
    attempts.add_argument("--forget", action="store_true",
                          help="drop the relaxations remembered for PROFILE ([guard.ladder] remember)")
    ps = command("ps", "every vLLM on this host: which guard started it, its state, GPUs and memory; orphans flagged",
                 "List every vLLM on this host, one line each: those a guard started (with the guard's pid, "
                 "profile, state and attempt) and those started without one, with the GPUs and GPU memory of "
                 "their processes. Orphaned engines and workers (their `vllm serve` or guard gone) are flagged; "
                 "so is vLLM's weight daemon (`vllm preload`).")
    ps.add_argument("--json", action="store_true", help="print the list as JSON")
    ps.add_argument("--machine", metavar="FILE", help="list the vLLM processes a machine snapshot recorded")
    ps.add_argument("--lock-dir", metavar="DIR",
                    help="where guards register (their guard.lock-dir); default: VLLMGUARD_LOCK_DIR, else "
                    "/run/lock/vllm-guard, else this user's private directory")

    checks = command("checks", "list every preflight check id with what it checks")
    checks.add_argument("--json", action="store_true", help="print the list as JSON")

    models = command("models", "list the models whose facts are bundled (used offline, without the Hub)")
    models.add_argument("--json", action="store_true", help="print the list as JSON")

    completion = command("completion", "print a shell completion script (bash, zsh or fish)")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL",
                            help="bash, zsh or fish")
    return parser


# The guard's options of `serve` and `check` that may come before TARGET (True: takes a value).
_BEFORE_TARGET = {"--dry-run": False, "--force": False, "--exec": False, "--machine": True, "--gpus": True,
                  "--json": False, "--list": False, "--debug": False, "-h": False, "--help": False, "--version": False,
                  "-V": False}


def split_at_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """For `serve` and `check`: the guard's options, and from the first other word on, the
    `vllm serve` command line (TARGET and vLLM options, in any order vLLM accepts).

    Guard options before TARGET are spelled out in full (no abbreviations), so a vLLM option
    placed before the model (`serve --max-model-len 4096 MODEL`) is never mistaken for one.
    """
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1  # the top-level --debug / --version / --help
    if i >= len(argv) or argv[i] not in ("serve", "check"):
        return argv, []
    j = i + 1
    while j < len(argv):
        name, eq, _ = argv[j].partition("=")
        if name not in _BEFORE_TARGET:
            break
        j += 1 if eq or not _BEFORE_TARGET[name] else 2
    return argv[:j], argv[j:]


def main(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the CLI and return the exit code. Tests call this directly."""
    from vllm_guard.cli.pipes import PipeSafe

    env = dict(os.environ if environ is None else environ)
    # A reader that leaves early (`| head -1`) must not turn the command's exit status into 1.
    out = cast(TextIO, PipeSafe(stdout or sys.stdout))
    err = cast(TextIO, PipeSafe(stderr or sys.stderr))
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = False
    try:
        # argparse prints --help and --version to sys.stdout; send them where the caller asked.
        guard_part, vllm_part = split_at_target(args_list)
        with contextlib.redirect_stdout(out):
            args = build_parser().parse_args(guard_part)
        if vllm_part:
            args.target, args.vllm_args = None, vllm_part
        debug = bool(getattr(args, "debug", False))
        if args.command is None:
            build_parser().print_help(out)
            return ExitCode.USAGE
        from vllm_guard.cli import commands

        return int(commands.dispatch(args, env=env, stdout=out, stderr=err, stdin=stdin))
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
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
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

