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
    from vllm_guard.report.endpoint import StatusEndpoint
    from vllm_guard.report.guardstate import GuardState


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
    # guard.termination-log once the profile is read; before, only its environment variable.
    where: dict[str, str | None] = {"termination-log": env.get("VLLMGUARD_TERMINATION_LOG") or None}
    try:
        return _serve(args, env=env, stdout=stdout, stderr=stderr, where=where)
    except GuardError as e:
        if not args.dry_run:  # a usage or profile error, a missing vLLM: the pod's termination message says so
            from vllm_guard.report import termination

            _terminate(termination.summary(int(e.exit_code), e.message, [e.hint] if e.hint else []),
                       where["termination-log"], stderr)
        raise


def _terminate(text: str | None, configured: str | None, stderr: TextIO) -> None:
    """The termination message (report/termination.py); a file that cannot be written is a note."""
    from vllm_guard.report import termination

    note = termination.write(text, configured) if text is not None else None
    if note is not None:
        stderr.write(f"vllm-guard: note: {note}\n")


def _serve(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
           where: dict[str, str | None]) -> int:
    with _open(args, env, keep_connection=not args.dry_run) as site:
        where["termination-log"] = site.pre.profile.setting("termination-log")
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


def _supervisor(site: Site, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
                state: GuardState | None) -> Supervisor:
    from vllm_guard.launch.phases import Status
    from vllm_guard.launch.supervisor import Supervisor
    from vllm_guard.report.guardstate import ObservedStatus
    from vllm_guard.report.live import LaunchStatus

    pre = site.pre
    hooks = site.launch_hooks()
    status: Status = LaunchStatus(stdout, stderr)
    observed = ObservedStatus(status, state) if state is not None else None
    return Supervisor(pre, site.facts, environ=env, status=observed or status, forced=pre.verdict == "fail",
                      gpu_probe=hooks.gpu_probe, launch_locks=hooks.launch_locks, gpu_label=hooks.gpu_label,
                      observer=observed)


def _status_endpoint(site: Site, args: argparse.Namespace, stderr: TextIO) -> StatusEndpoint | None:
    """guard.status-address: the endpoint, bound now (or exit 2), before the first start."""
    address = site.pre.profile.setting("status-address")
    if not address:
        return None
    if _exec_mode(site, args):
        stderr.write("vllm-guard: note: guard.status-address is not served in exec mode: the guard becomes vLLM\n")
        return None
    from vllm_guard.profile.settings import parse_address
    from vllm_guard.report.endpoint import StatusEndpoint
    from vllm_guard.report.guardstate import GuardState

    host, port = parse_address(address)
    return StatusEndpoint(GuardState(of=int(site.pre.profile.ladder_setting("max-attempts"))), host, port)


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
    endpoint = _status_endpoint(site, args, stderr)
    try:
        return _launch_served(site, plan, args, env, stdout, stderr, endpoint)
    finally:
        if endpoint is not None:
            endpoint.close()


def _launch_served(site: Site, plan: LaunchPlan, args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO,
                   stderr: TextIO, endpoint: StatusEndpoint | None) -> int:
    from vllm_guard.launch.lock import sharing_note
    from vllm_guard.report import termination

    pre = site.pre
    configured = pre.profile.setting("termination-log")
    # vLLM writes its log to stdout; the guard's report goes to stderr, next to vLLM's own errors.
    site.print_report(stderr, with_fix=False)
    for note in (*plan.notes, sharing_note(pre.profile.setting("lock-dir"), env)):
        if note:
            stderr.write(f"vllm-guard: note: {note}\n")
    if pre.verdict == "fail" and not args.force:
        stderr.write("vllm-guard: preflight failed: vLLM was not started (the fixes are above; --force starts it "
                     "anyway)\n")
        _terminate(termination.for_preflight(pre.findings), configured, stderr)
        return ExitCode.PREFLIGHT_FAILED
    _require_executable(str(pre.profile.setting("vllm")), env)
    if site.facts.live:
        _download(site, env, stderr)
    if _exec_mode(site, args):
        from vllm_guard.launch.supervisor import run_exec

        stderr.write(f"vllm-guard: exec {plan.command_line()}\n")
        stderr.flush()
        run_exec(plan, env)
    supervisor = _supervisor(site, env, stdout, stderr, endpoint.state if endpoint is not None else None)
    code = supervisor.run()
    _terminate(termination.for_launch(code, supervisor.journal.history), configured, stderr)
    return code


def _download(site: Site, env: Mapping[str, str], stderr: TextIO) -> None:
    """guard.download: fetch a Hub model missing from the cache now, where its progress can be seen; a failure
    is a note, and vLLM then tries (and names the failure) itself."""
    from vllm_guard.probes import download, hf_cache_dir
    from vllm_guard.probes.model import download_snapshot, looks_like_path

    profile, facts = site.pre.profile, site.facts.model
    decision = download.decide(facts, bool(profile.setting("download")), env,
                               local_path=looks_like_path(profile.model))
    if not decision.fetch:
        return
    stderr.write(f"vllm-guard: {decision.reason}\n")
    stderr.flush()
    cache_dir = profile.value("download_dir") or hf_cache_dir(env)
    terminal = bool(getattr(stderr, "isatty", lambda: False)())

    def fetch() -> str:
        return download_snapshot(profile.model, profile.value("revision") or profile.revision, cache_dir, env,
                                 allow=download.ALLOW_PATTERNS, ignore=download.IGNORE_PATTERNS, bars=terminal)

    def write(line: str) -> None:
        stderr.write(line + "\n")
        stderr.flush()

    try:
        if terminal:  # huggingface_hub's own bars render there
            fetch()
        else:
            import time

            from vllm_guard.launch.notify import Notifier
            from vllm_guard.launch.phases import EXTEND_S

            # Under Type=notify the start timeout runs while the guard downloads: push it on while bytes
            # arrive (sd_notify(3) EXTEND_TIMEOUT_USEC), never for a download that stopped.
            notifier = Notifier(env)
            lines = download.ProgressLines(profile.model, facts.weights_bytes,
                                           download.blobs_bytes(profile.model, cache_dir), time.monotonic())
            download.fetch_with_lines(fetch, lambda: download.blobs_bytes(profile.model, cache_dir), write, lines,
                                      moved=lambda _: notifier.extend_timeout(EXTEND_S))
    except GuardError as e:
        write(f"vllm-guard: note: {e.message}; vLLM will try the download itself")


def _require_executable(name: str, env: Mapping[str, str]) -> None:
    from vllm_guard.probes.host import find_executable

    if find_executable(name, env.get("PATH")) is None:
        raise GuardError(f"the vLLM executable {name!r} was not found",
                         hint="pip install vllm, or set guard.vllm (or VLLMGUARD_VLLM_BIN) to its path",
                         exit_code=ExitCode.PREFLIGHT_FAILED)
