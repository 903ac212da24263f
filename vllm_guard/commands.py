"""One function per subcommand: the flow profile -> facts -> checks -> plan -> output.

Each returns an exit code; errors are raised as GuardError and printed by cli.main().
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from vllm_guard.errors import NotBuiltError, UsageError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.profile import Profile, apply_cli, drop_in_profile, load_profile


def dispatch(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    handlers: dict[str, Callable[..., int]] = {
        "serve": serve,
        "check": check,
        "snapshot": snapshot,
        "explain": explain,
        "init": init,
        "attempts": attempts,
    }
    return handlers[args.command](args, env=env, stdout=stdout, stderr=stderr)


def resolve_target(target: str | None, vllm_args: list[str], env: Mapping[str, str]) -> Profile:
    """TARGET is a profile when it ends in .toml, else a model id or path as `vllm serve` takes it."""
    if target is None:
        target = env.get("VLLMGUARD_PROFILE") or None
        if target is None:
            raise UsageError("no TARGET given", hint="give a profile (*.toml) or a model id, "
                             "or set VLLMGUARD_PROFILE")
    if target.startswith("-"):
        raise UsageError(f"guard options go before TARGET; {target!r} is not one",
                         hint="vllm-guard serve [GUARD OPTIONS] TARGET [VLLM OPTIONS...]")
    if target.endswith(".toml"):
        profile = load_profile(Path(target), environ=env)
    else:
        profile = drop_in_profile(target, environ=env)
    return apply_cli(profile, vllm_args)


def serve(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    profile = resolve_target(args.target, args.vllm_args, env)
    from vllm_guard import plan as plan_mod
    from vllm_guard import report

    plan = plan_mod.build_plan(profile, environ=env)
    if not args.dry_run:
        raise NotBuiltError(
            "launching and supervising vLLM is not built in this version of vllm-guard",
            hint="`vllm-guard serve --dry-run ...` prints the exact command line; run that yourself for now",
        )
    report.print_plan(plan, stdout)
    return ExitCode.OK


def check(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    resolve_target(args.target, args.vllm_args, env)
    raise NotBuiltError("the preflight checks are not built in this version; the profile itself is valid")


def snapshot(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    raise NotBuiltError("`vllm-guard snapshot` is not built in this version")


def explain(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    raise NotBuiltError("`vllm-guard explain` is not built in this version")


def init(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    raise NotBuiltError("`vllm-guard init` is not built in this version")


def attempts(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    raise NotBuiltError("`vllm-guard attempts` is not built in this version: the attempt log comes with "
                        "supervised `serve`")
