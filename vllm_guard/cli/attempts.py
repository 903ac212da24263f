"""`attempts`: the attempt history of a profile, a profile name or an attempt log; --forget drops relaxations."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from vllm_guard.cli.target import is_profile_path
from vllm_guard.errors import UsageError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.profile.load import load_profile

UNIT_STATE_DIR = Path("/var/lib/vllm-guard")  # the units' StateDirectory=vllm-guard


def _starts_like_json(path: Path) -> bool:
    """Whether a file's first non-blank byte opens a JSON object (an attempt log), not a TOML profile."""
    try:
        with path.open("rb") as f:
            return f.read(4096).lstrip()[:1] == b"{"
    except OSError:
        return False


def _log_named(name: str, env: Mapping[str, str]) -> Path:
    """The attempt log of the profile called ``name``: VLLMGUARD_ATTEMPT_LOG, else the one log of that name in the
    state dir (each profile file has its own: two of one name are told apart by the path's hash)."""
    from vllm_guard.state import attempts as attempt_log

    if env.get("VLLMGUARD_ATTEMPT_LOG"):
        return Path(env["VLLMGUARD_ATTEMPT_LOG"])
    found = attempt_log.logs_named(name, env)
    if len(found) > 1:
        raise UsageError(f"{len(found)} profiles called {name} have attempt logs: "
                         + ", ".join(str(p) for p in found[:5]), hint="give the profile's path, or one of these logs")
    return found[0] if found else attempt_log.state_dir(env) / f"{name}.jsonl"


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

        if is_profile_path(source):
            profile = load_profile(path, environ=env)
            name = profile.name
            places = [remember.path_for(attempt_log.profile_stem(name, profile.path, profile.model), env),
                      remember.legacy_path(name, env)]
        else:
            name = source
            places = [*remember.paths_named(name, env), remember.legacy_path(name, env)]
        dropped = [where for where in places if remember.forget(where)]
        shown = ", ".join(str(w) for w in dropped or places[:1])
        stdout.write(f"vllm-guard: {'forgot the relaxations remembered' if dropped else 'nothing remembered'} "
                     f"for {name} ({shown})\n")
        return ExitCode.OK
    if path.suffix.lower() == ".toml" or (path.is_file() and not _starts_like_json(path)):
        profile = load_profile(path, environ=env)
        stem = attempt_log.profile_stem(profile.name, profile.path, profile.model)
        log = attempt_log.log_path(profile.setting("attempt-log"), stem, env)
    elif path.exists() and not path.is_dir():
        log = path
    else:
        log = _log_named(source, env)
        if not log.exists() and "/" not in source and not env.get("VLLMGUARD_ATTEMPT_LOG"):
            # A name typed in a shell: this user's state dir has none, the systemd units' may
            # (StateDirectory=vllm-guard, systemd/vllm-guard@.service). Read that one, and say so.
            unit_log = _log_named(source, {"VLLMGUARD_STATE_DIR": str(UNIT_STATE_DIR)})
            if unit_log.is_file():
                stderr.write(f"vllm-guard: note: no {log}; reading the systemd unit's {unit_log}\n")
                log = unit_log
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
