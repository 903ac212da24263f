"""TARGET: a profile or a `vllm serve` command line, resolved into one Profile, with the guard's own options.

The guard's options of `serve` and `check` are one table (``parser.GUARD_OPTIONS``): all may come before
TARGET, and those marked so may also follow it where vLLM's option table does not claim the spelling.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from vllm_guard.cli.parser import GUARD_OPTIONS
from vllm_guard.errors import UsageError
from vllm_guard.options.table import OptionTable, TableChoice
from vllm_guard.profile.load import apply_cli, drop_in_command_line, load_profile
from vllm_guard.profile.model import Profile
from vllm_guard.profile.settings import GUARD_SETTINGS


def machine_file(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """--machine (before or after TARGET), else VLLMGUARD_MACHINE; None plans this machine."""
    return getattr(args, "machine", None) or env.get("VLLMGUARD_MACHINE") or None


def target_profile(args: argparse.Namespace, env: Mapping[str, str]) -> Profile:
    """The profile `serve` and `check` run: TARGET resolved, then --gpus over guard.gpus."""
    profile = resolve_target(args.target, args.vllm_args, env, args=args, machine_file=machine_file(args, env))
    if getattr(args, "gpus", None):
        profile = with_gpus(profile, args.gpus)
    if getattr(args, "status_address", None):
        profile = with_status_address(profile, args.status_address)
    return profile


def resolve_target(target: str | None, vllm_args: list[str], env: Mapping[str, str],
                   *, args: argparse.Namespace | None = None, machine_file: str | None = None) -> Profile:
    """What to run: a profile (a first word ending in .toml) plus vLLM options, or a whole
    `vllm serve` command line (the model before or after options, --model, --config FILE).

    The option table is the one of the vLLM the guard will run (``pick_table``). Guard
    options found among the vLLM options (``take_trailing_guard_options``) are set on ``args``.
    """
    from vllm_guard.probes.vllm_build import pick_table
    from vllm_guard.profile.vllm_config import read_config

    tokens = ([target] if target is not None else []) + list(vllm_args)
    # --machine may also follow TARGET (taken out of the vLLM options below, once the table is known); the
    # table must come from the snapshot wherever it stands. vLLM has no option that --machine abbreviates.
    machine_file = machine_file or _machine_among(tokens)

    def pick(executable: str) -> TableChoice:
        return pick_table(executable, env, machine_file)

    default_exe = env.get("VLLMGUARD_VLLM_BIN") or str(GUARD_SETTINGS["vllm"].default)
    if not tokens or (tokens[0].startswith("-") and not _names_model(tokens, pick(default_exe).table)):
        profile_env = env.get("VLLMGUARD_PROFILE") or None
        if profile_env is None and not tokens:
            raise UsageError("no TARGET given", hint="give a profile (*.toml) or a model id, "
                             "or set VLLMGUARD_PROFILE")
        if profile_env is not None:
            tokens = [profile_env, *tokens]

    if is_profile_path(tokens[0]):
        profile = load_profile(Path(tokens[0]), environ=env, pick_table=pick)
        rest = take_trailing_guard_options(args, tokens[1:], profile.options)
        return apply_cli(profile, rest)
    choice = pick(default_exe)
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


def _names_model(tokens: list[str], table: OptionTable) -> bool:
    """Whether a command line starting with an option names a model (`--model X`, a positional, --config).

    An option's value is not a positional: `--max-model-len 4096` alone names no model (the container's
    `docker run IMAGE --max-model-len 4096`, whose profile is VLLMGUARD_PROFILE)."""
    it = iter(tokens)
    for token in it:
        name, eq, _ = token.partition("=")
        if name in ("--model", "--config"):
            return True
        if not token.startswith("-"):
            return True
        found = table.resolve(name)
        if found is not None and found[0].takes_value and not eq:
            next(it, None)
    return False


def _machine_among(tokens: list[str]) -> str | None:
    """The value of a --machine given after TARGET, as take_trailing_guard_options will take it."""
    for i, token in enumerate(tokens):
        if token.startswith("--machine="):
            return token.partition("=")[2] or None
        if token == "--machine" and i + 1 < len(tokens):
            return tokens[i + 1]
    return None


def take_trailing_guard_options(args: argparse.Namespace | None, tokens: list[str], table: OptionTable) -> list[str]:
    """Take the guard's own options out of the vLLM options; return the rest.

    Raises:
        UsageError: a guard option vLLM also claims, or one of another command, saying where it goes.
    """
    command = getattr(args, "command", None)
    if args is None or command not in GUARD_OPTIONS:
        return tokens
    ours = {name: o for name, o in GUARD_OPTIONS[command].items() if o.after_target}
    every = {name for options in GUARD_OPTIONS.values() for name, o in options.items() if o.after_target}
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
        if ours[name].takes_value:
            value = value if eq else next(it, "")
            if not value:
                raise UsageError(f"{name} needs a value", hint=f"vllm-guard {command} {name} FILE TARGET ...")
            setattr(args, name[2:].replace("-", "_"), value)
        else:
            setattr(args, name[2:].replace("-", "_"), True)
    return rest


def with_gpus(profile: Profile, spec: str) -> Profile:
    """--gpus before TARGET: guard.gpus, over the profile and VLLMGUARD_GPUS."""
    from vllm_guard.options.values import ValueProblem
    from vllm_guard.profile.settings import parse_gpus

    try:
        gpus = parse_gpus(spec)
    except ValueProblem as e:
        raise UsageError(f"--gpus: {e}", hint='for example --gpus auto or --gpus 0,1') from None
    return replace(profile, guard={**profile.guard, "gpus": gpus}, overridden=(*profile.overridden, "guard.gpus"))


def with_status_address(profile: Profile, address: str) -> Profile:
    """--status-address before TARGET: guard.status-address, over the profile and VLLMGUARD_STATUS_ADDRESS."""
    from vllm_guard.options.values import ValueProblem
    from vllm_guard.profile.settings import parse_address

    try:
        parse_address(address)
    except ValueProblem as e:
        raise UsageError(f"--status-address: {e}", hint="for example --status-address 0.0.0.0:9090") from None
    return replace(profile, guard={**profile.guard, "status-address": address},
                   overridden=(*profile.overridden, "guard.status-address"))


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False
