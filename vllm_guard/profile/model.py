"""A resolved profile: the model, vLLM's options with where each value came from, the guard's settings."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllm_guard.options.argv import (
    COMMAND_LINE,
    GUARD,
    VllmArg,
)
from vllm_guard.options.table import OptionTable, TableChoice, choose_table, load_table
from vllm_guard.profile.settings import CHECK_SETTINGS, GUARD_SETTINGS, LADDER_SETTINGS, MISSING


@dataclass(frozen=True)
class Profile:
    """Everything the guard needs to know about one model deployment."""

    model: str
    revision: str | None = None
    args: tuple[VllmArg, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    guard: Mapping[str, Any] = field(default_factory=dict)
    checks: Mapping[str, Any] = field(default_factory=dict)
    ladder: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None
    sha256: str | None = None
    overridden: tuple[str, ...] = ()  # keys set by the command line or the environment
    table_choice: TableChoice | None = field(default=None, compare=False, repr=False)
    config_file: str | None = None  # `--config FILE` of a drop-in command line, handed to vLLM as given
    model_origin: str = COMMAND_LINE  # where the model came from: the command line, a profile or a --config file
    notes: tuple[str, ...] = ()

    @property
    def options(self) -> OptionTable:
        """The option table of the vLLM this profile will run (the newest when not chosen)."""
        return self.table_choice.table if self.table_choice is not None else load_table()

    @property
    def name(self) -> str:
        if self.path is not None:
            return self.path.stem
        return self.model.rstrip("/").rsplit("/", 1)[-1]

    def value(self, dest: str, default: Any = MISSING) -> Any:
        """The effective value of a vLLM option: the last one given, else vLLM's default."""
        for arg in reversed(self.args):
            if arg.identity == dest:
                return arg.value
        if default is not MISSING:
            return default
        spec = self.options.by_dest.get(dest)
        return spec.default if spec is not None else None

    def is_set(self, dest: str) -> bool:
        return any(arg.identity == dest for arg in self.args)

    def with_value(self, dest: str, value: Any) -> Profile:
        """A copy with one vLLM option set, keeping the position of the old one."""
        spec = self.options.by_dest[dest]
        new = VllmArg(spec.name, value, spec, origin=GUARD)
        args = list(self.args)
        for i, arg in enumerate(args):
            if arg.identity == dest:
                args[i] = new
                break
        else:
            args.append(new)
        return replace(self, args=tuple(args))

    def setting(self, key: str) -> Any:
        return self.guard.get(key, GUARD_SETTINGS[key].default)

    def check_setting(self, key: str) -> Any:
        return self.checks.get(key, CHECK_SETTINGS[key].default)

    def ladder_setting(self, key: str) -> Any:
        return self.ladder.get(key, LADDER_SETTINGS[key].default)


# --- loading ---------------------------------------------------------------


TablePicker = Callable[[str], TableChoice]  # the vLLM executable -> the option table of the vLLM it runs


def newest_table(executable: str) -> TableChoice:
    """No installed vLLM consulted: the newest table."""
    return choose_table(None, "none consulted")


def model_parallel_size(profile: Profile) -> int:
    """GPUs of one engine replica: tensor x pipeline parallel (what vLLM's Ray executor places on a cluster)."""
    sizes = (profile.value(d) for d in ("tensor_parallel_size", "pipeline_parallel_size"))
    return math.prod(max(int(v or 1), 1) for v in sizes)


DRAIN_MARGIN_S = 5.0  # beyond vLLM's --shutdown-timeout: its last responses written, its processes ended


def stop_grace_s(profile: Profile) -> float:
    """Seconds between the one SIGTERM and the SIGKILL: guard.stop-timeout, or vLLM's --shutdown-timeout (its drain
    of the requests in flight) plus a margin when that is longer, so a drain is never cut short."""
    stop = float(profile.setting("stop-timeout"))
    drain = profile.value("shutdown_timeout")
    if isinstance(drain, (int, float)) and not isinstance(drain, bool) and drain > 0:
        return max(stop, float(drain) + DRAIN_MARGIN_S)
    return stop


def world_size(profile: Profile) -> int:
    """GPUs one vLLM instance uses: tensor x pipeline x data parallel (every replica of a data-parallel launch)."""
    return model_parallel_size(profile) * max(int(profile.value("data_parallel_size") or 1), 1)


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
    notes += [f"{a.key} = {a.value!r} from {a.origin}" for a in config_file_args(profile.args)]
    return notes


def config_file_args(args: Sequence[VllmArg]) -> list[VllmArg]:
    """The --config file's values that still hold: one the command line gives again is not the file's (vLLM:
    the command line wins over --config), so no note may say it came from there."""
    last = {a.identity: a for a in args}
    return [a for a in args if a.from_config_file and last[a.identity] is a]
