"""`init`: a profile fitted to this machine (or a snapshot), checked as `check` would before it is written."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from vllm_guard.cli.output import refuse_existing, write_file
from vllm_guard.cli.target import with_gpus
from vllm_guard.errors import UsageError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.probes.vllm_build import pick_table
from vllm_guard.profile.load import drop_in_profile, load_profile
from vllm_guard.suggest import toml_document


def init(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from datetime import date

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
    body = toml_document(doc)
    # What init writes must pass `check` on the machine it was fitted to, host RAM and /dev/shm included:
    # the fit judges the GPU only. When a check fails, the profile says so at the top and the exit is 4.
    failed = [f for f in _check_fitted(body, env, machine_file).findings if f.status == "fail"]
    for warning in reversed(fitted.warnings):
        header.insert(0, f"WARNING: {warning}")
    if failed:
        header.insert(0, "WARNING: this profile does not pass `vllm-guard check` here: "
                      + "; ".join(f"{f.id}: {f.message.splitlines()[0]}" for f in failed))
    text = "".join(f"# {line}\n" for line in header) + "\n" + body
    if args.output:
        write_file(args.output, text)
    if args.json:
        import json

        from vllm_guard import schemas

        stdout.write(json.dumps({
            "schema": schemas.INIT, "model": args.model, "machine": facts.machine_origin,
            "values": doc, "reasons": fitted.reasons, "warnings": list(fitted.warnings), "output": args.output,
            "profile": text,
            "check": {"verdict": "fail" if failed else "pass", "failed": [f.to_dict() for f in failed]},
        }, indent=2) + "\n")
    elif args.output:
        stdout.write(f"wrote {args.output}\n")
        stdout.write("".join(f"  {line}\n" for line in fitted.reasons))
    else:
        stdout.write(text)
    for warning in fitted.warnings:
        stderr.write(f"vllm-guard: warning: {warning}\n")
    for f in failed:
        stderr.write(f"vllm-guard: the profile fails {f.id} here: {f.message.splitlines()[0]}"
                     + (f" (fix: {f.fix})" if f.fix else "") + "\n")
    return ExitCode.PREFLIGHT_FAILED if failed else ExitCode.OK


def _check_fitted(body: str, env: Mapping[str, str], machine_file: str | None) -> Any:
    """The preflight of the profile init is about to write, on the machine it was fitted to."""
    import tempfile

    from vllm_guard import probes
    from vllm_guard.preflight.fix import checked

    with tempfile.TemporaryDirectory(prefix="vllm-guard-init-") as tmp:
        path = Path(tmp) / "fitted.toml"
        path.write_text(body)
        profile = load_profile(path, environ=env, pick_table=lambda exe: pick_table(exe, env, machine_file))
    facts = probes.gather(profile, environ=env, machine_file=machine_file)
    return checked(profile, facts)
