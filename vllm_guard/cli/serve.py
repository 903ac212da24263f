"""`serve` and `check`: the target where it runs (sites), its preflight, then a dry run, exec, or the supervisor."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from vllm_guard.cli.target import machine_file, target_profile
from vllm_guard.errors import GuardError, UsageError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.sites import Site, open_site

if TYPE_CHECKING:
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.launch.supervisor import Supervisor


def check(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    if args.list:
        from vllm_guard.cli.listings import list_checks

        return list_checks(args, env=env, stdout=stdout, stderr=stderr)
    with _open(args, env, keep_connection=False) as site:
        if args.json:
            stdout.write(site.check_json() + "\n")
        else:
            site.print_report(stdout, with_fix=True)
        return ExitCode.PREFLIGHT_FAILED if site.pre.verdict == "fail" else ExitCode.OK


def serve(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    with _open(args, env, keep_connection=not args.dry_run) as site:
        if args.json and not args.dry_run:  # after the target is read: --json may also follow TARGET
            raise UsageError("--json goes with --dry-run: a running vLLM's output is its own log",
                             hint="vllm-guard serve --dry-run --json TARGET ...")
        from vllm_guard.launch.plan import build_plan

        profile, remembered, note = site.pre.profile, dict[str, Any](), None
        if args.dry_run and not _exec_mode(site, args):
            # The command line the first attempt really starts: remembered relaxations applied, decided as
            # `serve` decides it (launch/remembered.py), without importing the supervisor.
            from vllm_guard.launch import remembered as kept
            from vllm_guard.profile.model import world_size

            build = site.facts.vllm_build
            start = kept.first_start(site.pre.profile, site.pre.estimate,
                                     site.facts.gpus[: world_size(site.pre.profile)],
                                     build.version if build else None, env)
            for ignored in start.ignored:
                stderr.write(f"vllm-guard: note: {ignored}\n")
            profile, remembered, note = start.profile, start.values, start.note
        plan = site.plan(build_plan(profile, environ=env, cuda_visible_devices=site.facts.cuda_visible_devices))
        if args.dry_run:
            return _dry_run(site, plan, args, stdout, remembered, note)
        return _launch(site, plan, args, env, stdout, stderr)


def _exec_mode(site: Site, args: argparse.Namespace) -> bool:
    return bool(args.exec or site.pre.profile.setting("mode") == "exec")


def _supervisor(site: Site, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> Supervisor:
    from vllm_guard.launch.supervisor import Supervisor
    from vllm_guard.report.live import LaunchStatus

    pre = site.pre
    hooks = site.launch_hooks()
    return Supervisor(pre, site.facts, environ=env, status=LaunchStatus(stdout, stderr), forced=pre.verdict == "fail",
                      gpu_probe=hooks.gpu_probe, launch_locks=hooks.launch_locks, gpu_label=hooks.gpu_label)


def _open(args: argparse.Namespace, env: Mapping[str, str], *, keep_connection: bool) -> Site:
    profile = target_profile(args, env)
    if (getattr(args, "exec", False) or profile.setting("mode") == "exec") and env.get("NOTIFY_SOCKET"):
        # exec replaces the guard with vLLM, which does not speak sd_notify (vLLM 0.33 has no READY=1):
        # under Type=notify systemd would wait for READY until TimeoutStartSec, kill it, and restart it.
        raise UsageError("exec mode under systemd's notify socket: vLLM never sends READY=1, so a Type=notify "
                         "unit kills it after TimeoutStartSec",
                         hint="use the default supervise mode (it sends READY=1 once vLLM answers), or run "
                         "exec mode from a Type=exec or Type=simple unit")
    target = str(profile.path) if profile.path is not None else profile.model
    return open_site(profile, env, machine_file(args, env), keep_connection=keep_connection, target=target)


def _dry_run(site: Site, plan: LaunchPlan, args: argparse.Namespace, stdout: TextIO, remembered: dict[str, Any],
             note: str | None) -> int:
    from vllm_guard.report.check import print_plan

    failed = site.pre.verdict == "fail"
    if args.json:
        stdout.write(site.dry_run_json(plan, forced=args.force, remembered=remembered) + "\n")
        return ExitCode.PREFLIGHT_FAILED if failed and not args.force else ExitCode.OK
    site.print_report(stdout, with_fix=True)
    if note is not None:
        stdout.write(f"{note}\n")
    print_plan(plan, stdout)
    if failed and args.force:
        stdout.write("preflight failed; --force: a launch would go ahead anyway\n")
        return ExitCode.OK
    return ExitCode.PREFLIGHT_FAILED if failed else ExitCode.OK


def _launch(site: Site, plan: LaunchPlan, args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO,
            stderr: TextIO) -> int:
    from vllm_guard.launch.lock import sharing_note

    pre = site.pre
    # vLLM writes its log to stdout; the guard's report goes to stderr, next to vLLM's own errors.
    site.print_report(stderr, with_fix=False)
    for note in (*plan.notes, sharing_note(pre.profile.setting("lock-dir"), env)):
        if note:
            stderr.write(f"vllm-guard: note: {note}\n")
    if pre.verdict == "fail" and not args.force:
        stderr.write("vllm-guard: preflight failed: vLLM was not started (the fixes are above; --force starts it "
                     "anyway)\n")
        return ExitCode.PREFLIGHT_FAILED
    _require_executable(str(pre.profile.setting("vllm")), env)
    if _exec_mode(site, args):
        from vllm_guard.launch.supervisor import run_exec

        stderr.write(f"vllm-guard: exec {plan.command_line()}\n")
        stderr.flush()
        run_exec(plan, env)
    return _supervisor(site, env, stdout, stderr).run()


def _require_executable(name: str, env: Mapping[str, str]) -> None:
    from vllm_guard.probes.host import find_executable

    if find_executable(name, env.get("PATH")) is None:
        raise GuardError(f"the vLLM executable {name!r} was not found",
                         hint="pip install vllm, or set guard.vllm (or VLLMGUARD_VLLM_BIN) to its path",
                         exit_code=ExitCode.PREFLIGHT_FAILED)
