"""The command line's grammar: every command and option, and where `vllm serve`'s own command line begins.

Only argparse and the guard's exit-code table are imported here: `--help` and completion scripts need no more.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from vllm_guard import __version__
from vllm_guard.errors import UsageError
from vllm_guard.exit_codes import EXIT_CODE_MEANINGS

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

    _serve_and_check(command, target)
    _reporting_commands(command)
    return parser


def _serve_and_check(command: Callable[..., argparse.ArgumentParser],
                     target: Callable[[argparse.ArgumentParser], None]) -> None:
    serve = command("serve", "check, then start and supervise vLLM",
                    "Run the preflight checks, then start vLLM. Guard options go before TARGET; after it, "
                    "the options are `vllm serve`'s, except " + ", ".join(
                        name for name, o in GUARD_OPTIONS["serve"].items() if o.after_target)
                    + " where the installed vLLM has no option spelled like them (docs/drop-in.md).")
    serve.add_argument("--dry-run", action="store_true",
                       help="print the checks, the command line and the environment; start nothing")
    serve.add_argument("--force", action="store_true", help="launch even when a preflight check fails")
    serve.add_argument("--exec", action="store_true",
                       help="after preflight, replace the guard by vLLM: no ladder, no supervision")
    serve.add_argument("--status-address", metavar="HOST:PORT",
                       help="guard.status-address: serve /livez, /startupz, /readyz and /metrics there while the "
                       "guard runs (docs/kubernetes.md; env VLLMGUARD_STATUS_ADDRESS)")
    serve.add_argument("--json", action="store_true",
                       help="with --dry-run: print the checks, the command line and the environment as JSON")
    target(serve)

    check = command("check", "preflight checks only: will this profile start here?")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--list", action="store_true", help="list every check id with what it checks, and exit")
    target(check)



def _reporting_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
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

    manifest = command("manifest", "write Kubernetes objects for a profile: ConfigMap, Deployment, Service",
                       "Write a ConfigMap with the profile, a Deployment with the guard as its entrypoint (GPUs from "
                       "the layout, /dev/shm, probes on the guard's status endpoint whose start-up budget covers the "
                       "ladder's, the grace period from the stop) and a Service (docs/kubernetes.md).")
    manifest.add_argument("profile", metavar="PROFILE", help="a profile file (*.toml)")
    manifest.add_argument("--machine", metavar="FILE",
                          help="the machine snapshot of a node: its vLLM's option table, and the preflight against it "
                          "(exit 4 when it fails; the objects are written anyway)")
    manifest.add_argument("-o", "--output", metavar="FILE", help="write the YAML to FILE (default: stdout)")
    manifest.add_argument("--force", action="store_true", help="overwrite an existing FILE")

    checks = command("checks", "list every preflight check id with what it checks")
    checks.add_argument("--json", action="store_true", help="print the list as JSON")

    models = command("models", "list the models whose facts are bundled (used offline, without the Hub)")
    models.add_argument("--json", action="store_true", help="print the list as JSON")

    completion = command("completion", "print a shell completion script (bash, zsh or fish)")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL",
                            help="bash, zsh or fish")


@dataclass(frozen=True)
class GuardOption:
    """One guard option of `serve` or `check`: whether it takes a value, and whether it may follow TARGET."""

    takes_value: bool
    after_target: bool = field(default=True, kw_only=True)


# Guard options, by command. Before TARGET they are always the guard's. After it, one is the guard's only
# where vLLM's option table (of the vLLM that will run) has no option of that spelling and none it
# abbreviates (argparse allow_abbrev); tests check this. --gpus goes before TARGET only.
GUARD_OPTIONS: dict[str, dict[str, GuardOption]] = {
    "serve": {"--dry-run": GuardOption(False), "--force": GuardOption(False), "--exec": GuardOption(False),
              "--machine": GuardOption(True), "--debug": GuardOption(False), "--json": GuardOption(False),
              "--gpus": GuardOption(True, after_target=False),
              "--status-address": GuardOption(True, after_target=False)},
    "check": {"--json": GuardOption(False), "--machine": GuardOption(True), "--debug": GuardOption(False),
              "--list": GuardOption(False), "--gpus": GuardOption(True, after_target=False)},
}
# argparse's own, accepted before TARGET too.
HELP_OPTIONS = ("-h", "--help", "-V", "--version")


def before_target() -> dict[str, bool]:
    """Every option that may stand between `serve`/`check` and TARGET, with whether it takes a value."""
    out = {name: option.takes_value for options in GUARD_OPTIONS.values() for name, option in options.items()}
    return {**out, **dict.fromkeys(HELP_OPTIONS, False)}


def split_at_target(argv: list[str]) -> tuple[list[str], list[str]]:
    """For `serve` and `check`: the guard's options, and from the first other word on, the
    `vllm serve` command line (TARGET and vLLM options, in any order vLLM accepts).

    Guard options before TARGET are spelled out in full (no abbreviations), so a vLLM option
    placed before the model (`serve --max-model-len 4096 MODEL`) is never mistaken for one.
    """
    options = before_target()
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 1  # the top-level --debug / --version / --help
    if i >= len(argv) or argv[i] not in ("serve", "check"):
        return argv, []
    j = i + 1
    while j < len(argv):
        name, eq, _ = argv[j].partition("=")
        if name not in options:
            break
        j += 1 if eq or not options[name] else 2
    return argv[:j], argv[j:]
