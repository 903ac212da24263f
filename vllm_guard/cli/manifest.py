"""`vllm-guard manifest PROFILE [--machine FILE] [-o FILE]`: Kubernetes objects for a profile (docs/kubernetes.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from vllm_guard.errors import ProfileError, UsageError
from vllm_guard.exit_codes import ExitCode

if TYPE_CHECKING:
    from vllm_guard.profile.model import Profile


def manifest(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from vllm_guard.cli.output import refuse_existing, write_file
    from vllm_guard.profile.load import load_profile
    from vllm_guard.profile.vllm_config import dump_documents
    from vllm_guard.report.manifest import objects
    from vllm_guard.safefile import PROFILE_MAX_BYTES, FileProblem, read_limited

    path = Path(args.profile)
    if path.suffix != ".toml":
        raise UsageError(f"{args.profile}: manifest takes a profile file (*.toml): the pod reads it from a ConfigMap",
                         hint="write one with `vllm-guard init MODEL -o NAME.toml`")
    refuse_existing(args.output, args.force)
    try:
        text = read_limited(path, PROFILE_MAX_BYTES).decode()
    except FileNotFoundError:
        raise ProfileError(f"{args.profile}: no such profile") from None
    except (FileProblem, UnicodeDecodeError) as e:
        raise ProfileError(f"{args.profile}: {e}") from None
    # The profile as the pod reads it: its own file, not this shell's VLLMGUARD_* variables.
    if args.machine:
        from vllm_guard.probes.vllm_build import pick_table

        profile = load_profile(path, environ={}, pick_table=lambda exe: pick_table(exe, {}, args.machine))
    else:
        profile = load_profile(path, environ={})
    _refuse_unservable(profile)
    out = dump_documents(objects(profile, text))
    if args.output:
        write_file(args.output, out)
        stderr.write(f"vllm-guard: Kubernetes objects for {path.name} written to {args.output} "
                     f"(`kubectl apply -f {args.output}`)\n")
    else:
        stdout.write(out)
    if args.machine:
        return _preflight_note(profile, args.machine, env, stderr)
    return ExitCode.OK


def _refuse_unservable(profile: Profile) -> None:
    from vllm_guard.redact import SECRET_OPTION_DESTS, is_secret_name

    if profile.value("uds"):
        raise UsageError("the profile serves on a Unix socket (uds): a Service needs a TCP port",
                         hint="drop uds from the profile; set port instead")
    secrets = [f"--{d.replace('_', '-')}" for d in sorted(SECRET_OPTION_DESTS) if profile.is_set(d)]
    secrets += [f"[env] {k}" for k in profile.env if is_secret_name(k)]
    if secrets:
        raise UsageError(f"the profile holds a secret ({', '.join(secrets)}): a ConfigMap is not the place for it",
                         hint="take it out of the profile and give the container VLLM_API_KEY / HF_TOKEN from a "
                         "Kubernetes Secret (env valueFrom secretKeyRef; docs/kubernetes.md)")


def _preflight_note(profile: Profile, machine: str, env: Mapping[str, str], stderr: TextIO) -> int:
    """With --machine: the preflight against that snapshot, so a pod that would exit 4 is said now."""
    from vllm_guard.sites import open_site

    with open_site(profile, env, machine, keep_connection=False, target=str(profile.path)) as site:
        failed = [f.id for f in site.pre.findings if f.status == "fail"]
    if failed:
        stderr.write(f"vllm-guard: note: on {machine} the preflight fails ({', '.join(failed)}): the pod would exit "
                     f"4; `vllm-guard check --machine {machine} {profile.path}` shows the fixes\n")
        return ExitCode.PREFLIGHT_FAILED
    return ExitCode.OK
