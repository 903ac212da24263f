"""One function per subcommand: the flow profile -> facts -> checks -> plan -> output.

Each returns an exit code; errors are raised as GuardError and printed by cli.main().
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from vllm_guard.cli import listings
from vllm_guard.errors import GuardError, UsageError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.options.table import OptionTable, TableChoice
from vllm_guard.profile.load import apply_cli, drop_in_command_line, drop_in_profile, load_profile
from vllm_guard.profile.model import Profile
from vllm_guard.profile.settings import GUARD_SETTINGS


def dispatch(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
             stdin: TextIO | None = None) -> int:
    if args.command == "explain":
        return explain(args, env=env, stdout=stdout, stderr=stderr, stdin=stdin)
    handlers: dict[str, Callable[..., int]] = {
        "serve": serve,
        "check": check,
        "snapshot": snapshot,
        "explain": explain,
        "init": init,
        "attempts": attempts,
        "ps": ps,
        "checks": listings.list_checks,
        "completion": listings.completion,
        "models": listings.models,
    }
    return handlers[args.command](args, env=env, stdout=stdout, stderr=stderr)


def resolve_target(target: str | None, vllm_args: list[str], env: Mapping[str, str],
                   *, args: argparse.Namespace | None = None, machine_file: str | None = None) -> Profile:
    """What to run: a profile (a first word ending in .toml) plus vLLM options, or a whole
    `vllm serve` command line (the model before or after options, --model, --config FILE).

    The option table is the one of the vLLM the guard will run (``pick_table``). Guard
    options found among the vLLM options (``take_trailing_guard_options``) are set on ``args``.
    """
    from vllm_guard.profile.vllm_config import read_config

    tokens = ([target] if target is not None else []) + list(vllm_args)
    if not tokens or (tokens[0].startswith("-") and not _names_model(tokens)):
        profile_env = env.get("VLLMGUARD_PROFILE") or None
        if profile_env is None and not tokens:
            raise UsageError("no TARGET given", hint="give a profile (*.toml) or a model id, "
                             "or set VLLMGUARD_PROFILE")
        if profile_env is not None:
            tokens = [profile_env, *tokens]

    def pick(executable: str) -> TableChoice:
        return pick_table(executable, env, machine_file)

    if is_profile_path(tokens[0]):
        profile = load_profile(Path(tokens[0]), environ=env, pick_table=pick)
        rest = take_trailing_guard_options(args, tokens[1:], profile.options)
        return apply_cli(profile, rest)
    choice = pick(env.get("VLLMGUARD_VLLM_BIN") or str(GUARD_SETTINGS["vllm"].default))
    rest = take_trailing_guard_options(args, tokens, choice.table)
    return drop_in_command_line(rest, environ=env, choice=choice, read_config=read_config)


def is_profile_path(token: str) -> bool:
    """A profile is a file (``ok.TOML``, ``vllm-profile`` with no suffix); a model is an id or a directory.
    A name ending in .toml that does not exist is still meant as a profile (load_profile says it is missing)."""
    if token.startswith("-"):
        return False
    if token.lower().endswith(".toml"):
        return True
    # vLLM also serves a single GGUF file (`vllm serve ./model.gguf`): that file is a model, not a profile.
    return Path(token).is_file() and not token.lower().endswith(".gguf") and not _starts_with(Path(token), b"GGUF")


def _names_model(tokens: list[str]) -> bool:
    """Whether a command line starting with an option names a model (`--model X`, a positional, --config)."""
    return any(t == "--model" or t.startswith("--model=") or t == "--config" for t in tokens) or any(
        not t.startswith("-") for t in tokens[1:])


def pick_table(executable: str, env: Mapping[str, str], machine_file: str | None) -> TableChoice:
    """The option table for the vLLM that will run: read from its package metadata (fast, no import);
    under --machine, the version the snapshot recorded; otherwise the newest table."""
    from vllm_guard.options.table import choose_table

    if machine_file:
        recorded = _snapshot_vllm_version(machine_file)
        return choose_table(recorded, f"snapshot {machine_file}" if recorded else "none recorded in the snapshot")
    from vllm_guard.probes.host import find_executable
    from vllm_guard.probes.vllm_build import probe_vllm_build

    path = find_executable(executable, env.get("PATH"))
    build = probe_vllm_build(path, env) if path else None
    if build is None or build.version is None:
        return choose_table(None, "no vLLM found" if path is None else "version not readable")
    return choose_table(build.version, f"package metadata of {path}")


def _snapshot_vllm_version(machine_file: str) -> str | None:
    import json

    from vllm_guard.safefile import SNAPSHOT_MAX_BYTES, FileProblem, read_limited

    try:
        data = json.loads(read_limited(Path(machine_file), SNAPSHOT_MAX_BYTES))
    except (OSError, FileProblem, ValueError, RecursionError):
        return None  # load_machine reports an unreadable snapshot with its own message
    version = data.get("vllm_version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


# Guard options, by command, with whether they take a value. Before TARGET they are always the
# guard's. After it, one is the guard's only where vLLM's option table (of the vLLM that will run)
# has no option of that spelling and none it abbreviates (argparse allow_abbrev); tests check this.
GUARD_OPTIONS: dict[str, dict[str, bool]] = {
    "serve": {"--dry-run": False, "--force": False, "--exec": False, "--machine": True, "--debug": False,
              "--json": False},
    "check": {"--json": False, "--machine": True, "--debug": False, "--list": False},
}


def take_trailing_guard_options(args: argparse.Namespace | None, tokens: list[str], table: OptionTable) -> list[str]:
    """Take the guard's own options out of the vLLM options; return the rest.

    Raises:
        UsageError: a guard option vLLM also claims, or one of another command, saying where it goes.
    """
    command = getattr(args, "command", None)
    if args is None or command not in GUARD_OPTIONS:
        return tokens
    ours = GUARD_OPTIONS[command]
    every = {name for options in GUARD_OPTIONS.values() for name in options}
    rest: list[str] = []
    it = iter(tokens)
    for token in it:
        name, eq, value = token.partition("=")
        if name not in every:
            rest.append(token)
            continue
        if table.claims(name):
            rest.append(token)  # vLLM's own option (or an abbreviation of one): it goes to vLLM
            continue
        if name not in ours:
            raise UsageError(f"{name} is not an option of `vllm-guard {command}`",
                             hint=f"vllm-guard {command} --help lists them")
        if ours[name]:
            value = value if eq else next(it, "")
            if not value:
                raise UsageError(f"{name} needs a value", hint=f"vllm-guard {command} {name} FILE TARGET ...")
            setattr(args, name[2:].replace("-", "_"), value)
        else:
            setattr(args, name[2:].replace("-", "_"), True)
    return rest


def _preflight(args: argparse.Namespace, env: Mapping[str, str], *, keep_connection: bool = False
               ) -> tuple[Any, Any, str, Any]:
    """facts, preflight, the target's name, and the Ray cluster's preflight (None on one machine). With
    ``keep_connection`` a live cluster's connection stays open (the caller closes it): serve holds locks with it."""
    from vllm_guard import probes
    from vllm_guard.cluster import rayapi
    from vllm_guard.cluster.preflight import read_cluster_snapshot, run_cluster_preflight
    from vllm_guard.cluster.target import ray_target
    from vllm_guard.preflight.run import preflight

    profile = resolve_target(args.target, args.vllm_args, env, args=args,
                             machine_file=args.machine or env.get("VLLMGUARD_MACHINE") or None)
    if getattr(args, "gpus", None):
        profile = with_gpus(profile, args.gpus)
    machine_file = args.machine or env.get("VLLMGUARD_MACHINE") or None  # --machine may follow TARGET
    target = str(profile.path) if profile.path is not None else profile.model
    cluster_file = read_cluster_snapshot(machine_file)
    local_cluster = rayapi.local_cluster_address(env)
    ray = None
    if machine_file is None:  # a machine snapshot plans one machine; a cluster snapshot, the cluster
        ray = ray_target(profile, env, local_gpus=None, local_cluster=local_cluster)
    facts = None
    if ray is None and cluster_file is None:
        facts = probes.gather(profile, environ=env, machine_file=machine_file)
        if not machine_file:
            ray = ray_target(profile, env, local_gpus=len(facts.gpus), local_cluster=local_cluster)
    if ray is None and cluster_file is None and facts is not None:
        pre = preflight(profile, facts)
        return facts, replace(pre, notes=(*table_notes(profile), *profile.notes, *pre.notes)), target, None
    cp = run_cluster_preflight(profile, env, ray, machine_file, cluster_file, keep_connection=keep_connection)
    pre = replace(cp.pre, notes=(*table_notes(profile), *profile.notes, *cp.pre.notes))
    return cp.facts, pre, target, replace(cp, pre=pre)


def with_gpus(profile: Profile, spec: str) -> Profile:
    """--gpus before TARGET: guard.gpus, over the profile and VLLMGUARD_GPUS."""
    from vllm_guard.options.values import ValueProblem
    from vllm_guard.profile.settings import parse_gpus

    try:
        gpus = parse_gpus(spec)
    except ValueProblem as e:
        raise UsageError(f"--gpus: {e}", hint='for example --gpus auto or --gpus 0,1') from None
    return replace(profile, guard={**profile.guard, "gpus": gpus}, overridden=(*profile.overridden, "guard.gpus"))


def table_notes(profile: Profile) -> list[str]:
    """Which vLLM will run and which option table checked the command line: said in every report."""
    choice = profile.table_choice
    if choice is None:
        return []
    who = f"vLLM {choice.vllm_version}" if choice.vllm_version else "no vLLM version"
    who += f" ({choice.source})"
    notes = [f"{who}: options checked against {choice.table.file_name}"]
    if choice.warning:
        notes.append(f"warning: {choice.warning}")
    notes += [f"{a.key} = {a.value!r} from {a.origin}" for a in profile.args if a.from_config_file]
    return notes


def serve(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    facts, pre, target, cp = _preflight(args, env, keep_connection=not args.dry_run)
    try:
        return _serve(args, env, stdout, stderr, facts, pre, target, cp)
    finally:
        if cp is not None and cp.connection is not None:
            cp.connection.close()


def _serve(args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO, stderr: TextIO, facts: Any, pre: Any,
           target: str, cp: Any) -> int:
    from vllm_guard.launch import plan as plan_mod
    from vllm_guard.report.check import print_check, print_cluster_check, print_plan
    from vllm_guard.report.docs import dry_run_json
    from vllm_guard.report.live import LaunchStatus

    plan = plan_mod.build_plan(pre.profile, environ=env, cuda_visible_devices=facts.cuda_visible_devices)
    if args.json and not args.dry_run:  # after _preflight: --json may also follow TARGET
        raise UsageError("--json goes with --dry-run: a running vLLM's output is its own log",
                         hint="vllm-guard serve --dry-run --json TARGET ...")
    if cp is not None:
        plan = _ray_plan(plan, cp)
    if args.dry_run:
        if cp is not None:
            print_cluster_check(cp, target, stdout)
        else:
            from vllm_guard.preflight.fix import find_fix

            fix = find_fix(pre.profile, facts, pre)
            if args.json:
                stdout.write(dry_run_json(pre, facts, target, fix, plan, forced=args.force) + "\n")
                return ExitCode.PREFLIGHT_FAILED if pre.verdict == "fail" and not args.force else ExitCode.OK
            print_check(pre, facts, target, stdout, fix)
        print_plan(plan, stdout)
        if pre.verdict == "fail":
            if args.force:
                stdout.write("preflight failed; --force: a launch would go ahead anyway\n")
                return ExitCode.OK
            return ExitCode.PREFLIGHT_FAILED
        return ExitCode.OK
    # vLLM writes its log to stdout; the guard's report goes to stderr, next to vLLM's own errors.
    if cp is not None:
        print_cluster_check(cp, target, stderr)
    else:
        print_check(pre, facts, target, stderr)
    from vllm_guard.launch.lock import sharing_note

    for note in (*plan.notes, sharing_note(pre.profile.setting("lock-dir"), env)):
        if note:
            stderr.write(f"vllm-guard: note: {note}\n")
    if pre.verdict == "fail" and not args.force:
        stderr.write("vllm-guard: preflight failed: vLLM was not started (the fixes are above; --force starts it "
                     "anyway)\n")
        return ExitCode.PREFLIGHT_FAILED
    _require_executable(str(pre.profile.setting("vllm")), env)
    if args.exec or pre.profile.setting("mode") == "exec":
        from vllm_guard.launch.supervisor import run_exec

        stderr.write(f"vllm-guard: exec {plan.command_line()}\n")
        stderr.flush()
        run_exec(plan, env)
    from vllm_guard.launch.supervisor import Supervisor

    gpu_probe = None
    if facts.live is not False and not (args.machine or env.get("VLLMGUARD_MACHINE")):
        from vllm_guard.probes.gpu import probe_gpus

        def gpu_probe() -> Any:
            return probe_gpus().gpus

    if cp is not None:
        return _supervise_on_ray(pre, facts, env, LaunchStatus(stdout, stderr), cp)
    supervisor = Supervisor(pre, facts, environ=env, status=LaunchStatus(stdout, stderr),
                            forced=pre.verdict == "fail", gpu_probe=gpu_probe)
    return supervisor.run()


def _ray_plan(plan: Any, cp: Any) -> Any:
    """vLLM on Ray: the same command line, with RAY_ADDRESS when the guard was told the address (vLLM's
    ray.init reads RAY_ADDRESS, else the cluster started on its machine)."""
    if cp.target.address == "auto" or cp.target.origin == "RAY_ADDRESS":
        return plan
    why = f"the cluster the guard checked ({cp.target.origin})"
    return replace(plan, env_set={**plan.env_set, "RAY_ADDRESS": cp.target.address},
                   env_reasons={**plan.env_reasons, "RAY_ADDRESS": why})


def _supervise_on_ray(pre: Any, facts: Any, env: Mapping[str, str], status: Any, cp: Any) -> int:
    """Supervise vLLM on the head as on one machine; the launch locks are taken on every node of the placement."""
    import socket

    from vllm_guard.cluster.gather import gpu_prober
    from vllm_guard.cluster.locks import ClusterLocks, per_node_gpus
    from vllm_guard.launch.supervisor import Supervisor

    if cp.connection is None:
        raise UsageError("a cluster snapshot plans a Ray start but cannot launch one: the launch locks are taken on "
                         "the live cluster's nodes", hint="serve --dry-run --machine CLUSTER.json, or serve on the "
                         "head node without --machine")
    names = {n.node_id: n.name for n in cp.cluster.nodes}
    holder = {"profile": str(pre.profile.path or pre.profile.model), "host": socket.gethostname()}
    locks = ClusterLocks(cp.connection, per_node_gpus(cp.placement, names), pre.profile.setting("lock-dir"), holder)
    # The re-check under the lock (and the waits for memory) look at the placement's nodes again, by Ray tasks;
    # GPU UUIDs are unique across machines, so the supervisor matches them as on one machine.
    nodes = cp.placement.nodes_used() or [n.node_id for n in cp.cluster.nodes if n.answered]  # forced, no placement
    probe = gpu_prober(cp.connection, nodes, float(pre.profile.setting("ray-node-timeout")))
    where = {r.gpu.uuid: r.node for r in cp.placement.ranks}
    try:
        return Supervisor(pre, facts, environ=env, status=status, forced=pre.verdict == "fail", gpu_probe=probe,
                          launch_locks=lambda _profile: locks,
                          gpu_label=lambda g: f"node {where.get(g.uuid, '?')} GPU {g.index}").run()
    finally:
        locks.close()


def _require_executable(name: str, env: Mapping[str, str]) -> None:
    from vllm_guard.probes.host import find_executable

    if find_executable(name, env.get("PATH")) is None:
        raise GuardError(f"the vLLM executable {name!r} was not found",
                         hint="pip install vllm, or set guard.vllm (or VLLMGUARD_VLLM_BIN) to its path",
                         exit_code=ExitCode.PREFLIGHT_FAILED)


def check(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from vllm_guard.preflight.fix import find_fix
    from vllm_guard.report.check import print_check, print_cluster_check
    from vllm_guard.report.docs import check_json, cluster_check_json

    if args.list:
        return listings.list_checks(args, env=env, stdout=stdout, stderr=stderr)
    facts, pre, target, cp = _preflight(args, env)
    if cp is not None:
        if args.json:
            stdout.write(cluster_check_json(cp, target) + "\n")
        else:
            print_cluster_check(cp, target, stdout)
        return ExitCode.PREFLIGHT_FAILED if pre.verdict == "fail" else ExitCode.OK
    fix = find_fix(pre.profile, facts, pre)
    if args.json:
        stdout.write(check_json(pre, facts, target, fix) + "\n")
    else:
        print_check(pre, facts, target, stdout, fix)
    return ExitCode.PREFLIGHT_FAILED if pre.verdict == "fail" else ExitCode.OK


def refuse_existing(output: str | None, force: bool) -> None:
    """One rule for every command that writes a file (init, snapshot): an existing file needs --force."""
    if output and Path(output).exists() and not force:
        raise UsageError(f"{output} exists", hint="use --force to overwrite it")


def snapshot(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:

    from vllm_guard import probes
    from vllm_guard.report.tables import print_machine

    refuse_existing(args.output, args.force)
    if args.cluster:
        return _snapshot_cluster(args, env, stdout)
    machine = probes.probe_machine(environ=env)
    doc = machine.to_dict()
    # The vLLM installed here, so that planning elsewhere (--machine) uses its option table.
    doc["vllm_version"] = pick_table(env.get("VLLMGUARD_VLLM_BIN") or "vllm", env, None).vllm_version
    return _write_snapshot(args, doc, stdout, lambda: print_machine(machine, stdout), "snapshot")


def _write_snapshot(args: argparse.Namespace, doc: dict[str, Any], stdout: TextIO, show: Callable[[], None],
                    what: str) -> int:
    """-o FILE and --json for a machine or a cluster snapshot; otherwise ``show`` prints it for a person."""
    import json

    text = json.dumps(doc, indent=2) + "\n"
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    if args.json:
        stdout.write(text)
    else:
        show()
        if args.output:
            stdout.write(f"{what} written to {args.output}; plan against it with --machine {args.output}\n")
    return ExitCode.OK


def _snapshot_cluster(args: argparse.Namespace, env: Mapping[str, str], stdout: TextIO) -> int:

    from vllm_guard.cluster import rayapi
    from vllm_guard.cluster.gather import gather_cluster
    from vllm_guard.report.cluster import print_cluster

    address = args.address or env.get("RAY_ADDRESS") or "auto"
    if address == "auto" and rayapi.local_cluster_address(env) is None:
        raise rayapi.RayUnreachable("no Ray cluster address: none given, RAY_ADDRESS is not set, and no cluster "
                                    "was started on this machine", hint="vllm-guard snapshot --cluster --address "
                                    "HEAD:6379, or run it on the head node (docs/ray.md)")
    with rayapi.Connection(address, local_cluster=rayapi.local_cluster_address(env)) as conn:
        cluster = gather_cluster(conn, model=args.model or "", revision=None, env_names=(),
                                 timeout_s=max(args.timeout, 0.1))
    doc = cluster.to_dict()
    head = cluster.head
    # The head's vLLM picks the option table when planning against this file elsewhere (--machine).
    doc["vllm_version"] = head.versions.get("vllm") if head is not None else None
    return _write_snapshot(args, doc, stdout, lambda: print_cluster(cluster, stdout), "cluster snapshot")


def explain(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO,
            stdin: TextIO | None = None) -> int:
    import json

    from vllm_guard.diagnose import ladder
    from vllm_guard.diagnose.classify import last_failed
    from vllm_guard.diagnose.classify import starts as split_starts
    from vllm_guard.diagnose.knowledge import STAGE_NAMES
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
    docs = []
    for start in found:
        step = ladder.next_step(start.diagnosis, ladder.settings_from_log(start.diagnosis))
        doc = json.loads(explain_json(start.diagnosis, step))
        doc.update({"start": start.number, "starts": len(found), "lines": [start.first_line, start.last_line],
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
                change = (f"next: {toml_line(step.param, step.value)}" if isinstance(step, ladder.Step) and step.param
                          else "next: no change" if isinstance(step, ladder.Step) else "next: none")
                mark = "  <- diagnosed below" if start is chosen else ""
                stdout.write(f"start {start.number}/{len(found)} (lines {start.first_line}-{start.last_line}): "
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


def init(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from datetime import date

    import tomli_w

    from vllm_guard import __version__, probes
    from vllm_guard.options.values import ValueProblem, parse_human_int
    from vllm_guard.preflight import generate

    refuse_existing(args.output, args.force)
    for name in ("tensor_parallel_size", "users"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    try:
        context = parse_human_int(args.context) if args.context else None
    except ValueProblem as e:
        raise UsageError(f"--context: {e}") from None
    profile = drop_in_profile(args.model, environ=env)
    if (args.tensor_parallel_size or 1) > 1:
        profile = profile.with_value("tensor_parallel_size", args.tensor_parallel_size)
    if getattr(args, "gpus", None):
        profile = with_gpus(profile, args.gpus)
    machine_file = args.machine or env.get("VLLMGUARD_MACHINE") or None
    facts = probes.gather(profile, environ=env, machine_file=machine_file)
    users = args.users or 1
    fitted = generate.fit_machine(facts, tensor_parallel=args.tensor_parallel_size, users=users, context=context)
    gpu = fitted.gpus[0] if fitted.gpus else facts.gpus[0]
    header = [
        f"vLLM profile for {args.model}, written by vllm-guard {__version__} init on {date.today().isoformat()}",
        f"for {facts.machine.hostname or 'this machine'} ("
        f"{str(len(fitted.gpus)) + ' x ' if len(fitted.gpus) > 1 else ''}{gpu.name}, "
        f"{(gpu.memory_total_bytes or 0) / 2**30:.2f} GiB) from {facts.machine_origin}; "
        f"model facts from {facts.model.source}",
        *fitted.reasons,
        f"check it: vllm-guard check {args.output or 'PROFILE.toml'}"
        + (f" --machine {machine_file}" if machine_file else ""),
    ]
    doc: dict[str, Any] = {"model": {"id": args.model}, "vllm": fitted.vllm}
    if fitted.guard_gpus is not None:
        doc["guard"] = {"gpus": fitted.guard_gpus}
    if args.users:
        doc.setdefault("guard", {})["checks"] = {"min-concurrency": args.users}
    body = tomli_w.dumps(doc)
    # What init writes must pass `check` on the machine it was fitted to, host RAM and /dev/shm included:
    # the fit judges the GPU only. When a check fails, the profile says so at the top and the exit is 4.
    failed = [f for f in _check_fitted(body, env, machine_file).findings if f.status == "fail"]
    if failed:
        header.insert(0, "WARNING: this profile does not pass `vllm-guard check` here: "
                      + "; ".join(f"{f.id}: {f.message.splitlines()[0]}" for f in failed))
    text = "".join(f"# {line}\n" for line in header) + "\n" + body
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    if args.json:
        import json

        from vllm_guard import schemas

        stdout.write(json.dumps({
            "schema": schemas.INIT, "model": args.model, "machine": facts.machine_origin,
            "values": doc, "reasons": fitted.reasons, "output": args.output, "profile": text,
            "check": {"verdict": "fail" if failed else "pass", "failed": [f.to_dict() for f in failed]},
        }, indent=2) + "\n")
    elif args.output:
        stdout.write(f"wrote {args.output}\n")
        stdout.write("".join(f"  {line}\n" for line in fitted.reasons))
    else:
        stdout.write(text)
    for f in failed:
        stderr.write(f"vllm-guard: the profile fails {f.id} here: {f.message.splitlines()[0]}"
                     + (f" (fix: {f.fix})" if f.fix else "") + "\n")
    return ExitCode.PREFLIGHT_FAILED if failed else ExitCode.OK


def _check_fitted(body: str, env: Mapping[str, str], machine_file: str | None) -> Any:
    """The preflight of the profile init is about to write, on the machine it was fitted to."""
    import tempfile

    from vllm_guard import probes
    from vllm_guard.preflight.run import preflight

    with tempfile.TemporaryDirectory(prefix="vllm-guard-init-") as tmp:
        path = Path(tmp) / "fitted.toml"
        path.write_text(body)
        profile = load_profile(path, environ=env, pick_table=lambda exe: pick_table(exe, env, machine_file))
    facts = probes.gather(profile, environ=env, machine_file=machine_file)
    return preflight(profile, facts)


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def _starts_like_json(path: Path) -> bool:
    """Whether a file's first non-blank byte opens a JSON object (an attempt log), not a TOML profile."""
    try:
        with path.open("rb") as f:
            return f.read(4096).lstrip()[:1] == b"{"
    except OSError:
        return False


def attempts(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from vllm_guard.report.tables import print_attempts
    from vllm_guard.safefile import FileProblem
    from vllm_guard.state import attempts as attempt_log

    source = args.source or env.get("VLLMGUARD_PROFILE")
    if not source:
        raise UsageError("give a profile, a profile name or an attempt log", hint="vllm-guard attempts PROFILE.toml")
    path = Path(source)
    if args.forget:
        from vllm_guard.state import remember

        name = load_profile(path, environ=env).name if is_profile_path(source) else source
        where = remember.path_for(name, env)
        dropped = remember.forget(where)
        stdout.write(f"vllm-guard: {'forgot the relaxations remembered' if dropped else 'nothing remembered'} "
                     f"for {name} ({where})\n")
        return ExitCode.OK
    if path.suffix.lower() == ".toml" or (path.is_file() and not _starts_like_json(path)):
        profile = load_profile(path, environ=env)
        log = attempt_log.log_path(profile.setting("attempt-log"), profile.name, env)
    elif path.exists() and not path.is_dir():
        log = path
    else:
        log = attempt_log.log_path(env.get("VLLMGUARD_ATTEMPT_LOG"), source, env)
    try:
        records, warnings = attempt_log.read(log)
    except FileNotFoundError:
        raise UsageError(f"no attempt log at {log}",
                         hint="the guard writes it when `vllm-guard serve` starts vLLM") from None
    except FileProblem as e:
        raise UsageError(f"cannot read the attempt log: {e}") from None
    if not records and warnings:
        # Not one attempt record: a different file, not a damaged log; one line says so, not a warning per line.
        raise UsageError(f"{log} is not an attempt log: none of its lines is an attempt record "
                         f"(schema {attempt_log.ATTEMPT_SCHEMA})",
                         hint="give a profile, a profile name, or the log `vllm-guard serve` writes "
                         "(guard.attempt-log, VLLMGUARD_ATTEMPT_LOG)")
    for warning in warnings:
        stderr.write(f"vllm-guard: warning: {warning}\n")
    if args.json:
        import json

        from vllm_guard import schemas

        stdout.write(json.dumps({"schema": schemas.ATTEMPTS, "log": str(log), "records": records,
                                 "warnings": warnings}, indent=2, default=str) + "\n")
        return ExitCode.OK
    print_attempts(records, str(log), stdout)
    return ExitCode.OK


def ps(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    """Every vLLM on this host: the guards' registry, the process table and NVML's process lists."""
    from vllm_guard import probes
    from vllm_guard.launch import lock
    from vllm_guard.report.docs import ps_json
    from vllm_guard.report.tables import print_ps
    from vllm_guard.state import instances, registry

    machine_file = args.machine or env.get("VLLMGUARD_MACHINE") or None
    notes: list[str] = []
    if machine_file:
        machine = probes.load_machine(Path(machine_file))
        found = instances.from_snapshot(machine)
        source = f"the snapshot {machine_file}, taken {machine.taken_at}: its GPUs' processes only"
    else:
        from vllm_guard.probes.gpu import probe_gpus
        from vllm_guard.probes.host import process_table

        gpus = probe_gpus().gpus  # only the GPUs and their processes: ps needs no host, disk or cgroup facts
        directory = Path(args.lock_dir) if args.lock_dir else lock.lock_dir(None, env)
        procs = process_table()
        entries, notes = registry.read_entries(directory, live_pids={p.pid for p in procs})
        result = instances.find_instances(procs, entries, instances.gpu_processes_of(gpus))
        for guard_pid in result.stale:
            registry.remove_stale(directory, guard_pid)  # a dead guard's entry, its vLLM gone too
        found = result.instances
        source = f"this host; guards registered in {directory}"
        if directory != lock.SHARED_LOCK_DIR and not env.get("VLLMGUARD_LOCK_DIR") and not args.lock_dir:
            notes.append(f"{lock.SHARED_LOCK_DIR} does not exist: only this user's guards register where `ps` "
                         "looks (docs/security.md)")
        if not gpus:
            notes.append("no GPU visible here: GPU memory per process is not known")
    if args.json:
        stdout.write(ps_json(found, source, notes) + "\n")
    else:
        print_ps(found, source, notes, stdout)
    return ExitCode.OK
