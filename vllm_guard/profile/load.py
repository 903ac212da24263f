"""A profile: TOML file (or a `vllm serve` command line) -> a frozen, validated Profile.

Precedence, highest first: the command line (vLLM options after TARGET, guard
options before it), the guard's own ``VLLMGUARD_*`` environment variables, the
profile file, then defaults. The format is documented in ``docs/profile.md``.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from vllm_guard.checkids import ALL_CHECK_IDS
from vllm_guard.errors import ProfileError, UsageError
from vllm_guard.options.argv import (
    COMMAND_LINE,
    PROFILE,
    ArgvProblem,
    ConfigReader,
    VllmArg,
    parse_argv,
    parse_command_line,
)
from vllm_guard.options.table import OptionTable, TableChoice, choose_table
from vllm_guard.options.values import ValueProblem, coerce_profile_value, not_a_bool, parse_human_int
from vllm_guard.profile.model import Profile, TablePicker, config_file_args, newest_table
from vllm_guard.profile.settings import (
    CHECK_SETTINGS,
    DURATION_MAX_S,
    ENV_PREFIX,
    GUARD_SETTINGS,
    LADDER_SETTINGS,
    SUBTABLES,
    Setting,
    parse_address,
    parse_duration,
    parse_gpus,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib
# No path (PATH_MAX) and no Hugging Face id is longer: a longer "model" is a mistake, and the file system
# would answer it with ENAMETOOLONG deep inside a probe.
MODEL_ID_MAX_CHARS = 4096
TOP_LEVEL_TABLES = ("model", "vllm", "env", "guard")


def load_profile(path: Path, *, environ: Mapping[str, str] | None = None,
                 pick_table: TablePicker = newest_table) -> Profile:
    """Read and validate a profile file against the option table of the vLLM it will run.

    Raises:
        ProfileError: with the file, the line, the key, what was expected and a hint.
    """
    from vllm_guard.safefile import PROFILE_MAX_BYTES, FileProblem, read_limited

    try:
        raw_bytes = read_limited(path, PROFILE_MAX_BYTES)
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile", hint="check the path, or give a model id") from None
    except FileProblem as e:  # a FIFO, /dev/zero, a directory, a file of gigabytes
        raise ProfileError(f"cannot read the profile: {e}",
                           hint=f"a profile is a regular TOML file of at most {PROFILE_MAX_BYTES // 2**20} MiB "
                           "(docs/profile.md)") from None
    try:
        text = raw_bytes.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(
            f"{path}: invalid TOML: {e}",
            hint="see docs/profile.md for the format; strings need quotes, tables need [brackets]",
        ) from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit integer, arrays nested thousands deep
        raise ProfileError(f"{path}: a value the guard will not read: {str(e)[:200] or type(e).__name__}") from None
    env_bin = (environ or {}).get(GUARD_SETTINGS["vllm"].env or "")
    profile = _from_data(data, _Locator(path, text), lambda guard: pick_table(env_bin or guard.get("vllm") or "vllm"))
    profile = replace(profile, path=path, sha256=hashlib.sha256(raw_bytes).hexdigest())
    return apply_environment(profile, environ)


def drop_in_profile(model: str, *, environ: Mapping[str, str] | None = None) -> Profile:
    """The profile of a plain `vllm serve MODEL ...` command line: only defaults."""
    if not model.strip():
        raise UsageError("the model id is empty", hint="give a Hugging Face id or a local path")
    if len(model) > MODEL_ID_MAX_CHARS:
        raise UsageError(f"the model id is {len(model):,} characters long, more than any path or Hugging Face id "
                         f"({MODEL_ID_MAX_CHARS:,} at most)", hint="give a Hugging Face id or a local path")
    return apply_environment(Profile(model=model), environ)


def apply_environment(profile: Profile, environ: Mapping[str, str] | None) -> Profile:
    """Apply the guard's own environment variables over the profile's [guard] values."""
    if not environ:
        return profile
    guard = dict(profile.guard)
    overridden = list(profile.overridden)
    for key, setting in GUARD_SETTINGS.items():
        if setting.env and environ.get(setting.env):
            guard[key] = environ[setting.env] if setting.kind != "gpus" else _env_gpus(setting.env, environ)
            overridden.append(f"guard.{key} (from {setting.env})")
    return replace(profile, guard=guard, overridden=tuple(overridden))


def _env_gpus(name: str, environ: Mapping[str, str]) -> tuple[int | str, ...] | str:
    try:
        return parse_gpus(environ[name])
    except ValueProblem as e:
        raise UsageError(f"{name}: {e}", hint='for example "auto" or "0,1"') from None


def drop_in_command_line(tokens: Sequence[str], *, environ: Mapping[str, str] | None = None,
                         choice: TableChoice | None = None, read_config: ConfigReader | None = None) -> Profile:
    """The profile of a whole `vllm serve ...` command line, read as vLLM reads it.

    Raises:
        UsageError: what vLLM would refuse on the command line (exit 2).
        ProfileError: what vLLM would refuse in the --config file (exit 3), naming the file.
    """
    choice = choice or choose_table(None, "none consulted")
    base = apply_environment(Profile(model="", table_choice=choice), environ)
    allow_unknown = bool(base.setting("allow-unknown-vllm-options")) or choice.newer
    try:
        command = parse_command_line(tokens, choice.table, read_config=read_config, allow_unknown=allow_unknown)
    except ArgvProblem as e:
        raise _argv_error(e, choice.table) from None
    if command.model is None:
        raise UsageError("no model given", hint="vllm-guard serve [GUARD OPTIONS] MODEL [VLLM OPTIONS], "
                         "or a profile (*.toml), or `model:` in the --config file")
    checked = drop_in_profile(command.model, environ=environ)
    config_given = tuple(f"--{a.key} (from {a.origin})" for a in config_file_args(command.args))
    return replace(base, model=checked.model, args=command.args, config_file=command.config_file,
                   model_origin=command.model_origin, notes=command.notes, overridden=base.overridden + config_given)


def _argv_error(e: ArgvProblem, table: OptionTable) -> UsageError | ProfileError:
    hint = (f"did you mean --{e.suggestion}?" if e.suggestion
            else f"see `vllm serve --help=all` (vLLM {table.vllm_version})")
    if e.origin != COMMAND_LINE:
        return ProfileError(f"{e.origin}: {e}", hint=f"{hint}; vLLM reads this file for `--config {e.origin}`")
    return UsageError(str(e), hint=hint)


def apply_cli(profile: Profile, tokens: Sequence[str]) -> Profile:
    """Apply vLLM options given after a profile; each replaces the profile's value for it.

    Raises:
        UsageError: for an unknown option or a value vLLM would reject.
    """
    if not tokens:
        return profile
    table = profile.options
    if "--config" in tokens or any(t.startswith("--config=") for t in tokens):
        raise UsageError("--config FILE.yaml cannot follow a profile: the profile is the configuration",
                         hint="move the YAML's options into the profile's [vllm], or run it without a profile: "
                         "vllm-guard serve MODEL --config FILE.yaml")
    choice = profile.table_choice
    try:
        allow_unknown = bool(profile.setting("allow-unknown-vllm-options")) or bool(choice and choice.newer)
        cli_args = parse_argv(tokens, table, allow_unknown=allow_unknown)
    except ArgvProblem as e:
        raise _argv_error(e, table) from None
    for arg in cli_args:
        if arg.spec is not None and arg.spec.dest == "model":
            raise UsageError("--model cannot follow a profile: the profile names the model in [model] id",
                             hint="vllm-guard serve PROFILE.toml [vLLM options]")
    given = {arg.identity for arg in cli_args}
    kept = tuple(arg for arg in profile.args if arg.identity not in given)
    overridden = profile.overridden + tuple(f"--{arg.key} (command line)" for arg in cli_args)
    return replace(profile, args=kept + tuple(cli_args), overridden=overridden)


class _Locator:
    """Finds the line of a key in the TOML text, for error messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line(self, table: str, key: str | None = None) -> int | None:
        current = ""
        header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
        for number, line in enumerate(self.lines, start=1):
            m = header.match(line)
            if m:
                current = m.group(1).replace('"', "").replace(" ", "")
                if key is None and current == table:
                    return number
                continue
            if key is not None and current == table:
                m = re.match(r'^\s*"?([A-Za-z0-9_.-]+)"?\s*=', line)
                if m and m.group(1) == key:
                    return number
        return None

    def error(self, table: str, key: str | None, message: str, hint: str | None = None) -> ProfileError:
        line = self.line(table, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        name = f"[{table}] {key}" if key is not None else f"[{table}]"
        return ProfileError(f"{where}: {name}: {message}", hint=hint)


def _from_data(data: Mapping[str, Any], loc: _Locator,
               pick: Callable[[Mapping[str, Any]], TableChoice]) -> Profile:
    for table in data:
        if table not in TOP_LEVEL_TABLES:
            close = difflib.get_close_matches(table, TOP_LEVEL_TABLES, n=1)
            hint = f"did you mean [{close[0]}]?" if close else f"the tables are {', '.join(TOP_LEVEL_TABLES)}"
            raise loc.error(table, None, "unknown table", hint)
        if not isinstance(data[table], dict):
            raise loc.error(table, None, "expected a table", f"write it as [{table}] with keys below it")
    model, revision = _read_model(data.get("model"), loc)
    guard, checks = _read_guard(data.get("guard", {}), loc)
    ladder = _read_settings(data.get("guard", {}).get("ladder", {}), LADDER_SETTINGS, "guard.ladder", loc)
    low = ladder.get("min-gpu-memory-utilization", LADDER_SETTINGS["min-gpu-memory-utilization"].default)
    high = ladder.get("max-gpu-memory-utilization", LADDER_SETTINGS["max-gpu-memory-utilization"].default)
    if low > high:
        raise loc.error("guard.ladder", "min-gpu-memory-utilization", f"{low:g} is above max-gpu-memory-utilization "
                        f"{high:g}", "the ladder moves utilization between the two: min <= max")
    choice = pick(guard)
    notes: list[str] = []
    args = _read_vllm(data.get("vllm", {}), loc, choice.table,
                      allow_unknown=bool(guard.get("allow-unknown-vllm-options")) or choice.newer, notes=notes)
    env = _read_env(data.get("env", {}), loc)
    return Profile(model=model, revision=revision, args=args, env=env, guard=guard, checks=checks, ladder=ladder,
                   table_choice=choice, model_origin=PROFILE, notes=tuple(notes))


def _read_model(table: Mapping[str, Any] | None, loc: _Locator) -> tuple[str, str | None]:
    if table is None:
        raise ProfileError(
            f"{loc.path}: the [model] table is missing",
            hint='add\n  [model]\n  id = "meta-llama/Llama-3.1-8B-Instruct"   # or a local path',
        )
    for key in table:
        if key not in ("id", "revision"):
            close = difflib.get_close_matches(key, ("id", "revision"), n=1)
            raise loc.error("model", key, "unknown key", f"did you mean `{close[0]}`?" if close else
                            "[model] takes id and revision; vLLM options go in [vllm]")
    model = table.get("id")
    if not isinstance(model, str) or not model.strip():
        raise loc.error("model", "id" if "id" in table else None,
                        "expected `id`, a Hugging Face repo id or a local path (a non-empty string)",
                        'id = "Qwen/Qwen3-0.6B"')
    if len(model) > MODEL_ID_MAX_CHARS:
        raise loc.error("model", "id", f"{len(model):,} characters, more than any path or Hugging Face id "
                        f"({MODEL_ID_MAX_CHARS:,} at most)", 'id = "Qwen/Qwen3-0.6B"')
    revision = table.get("revision")
    if revision is not None and not isinstance(revision, str):
        raise loc.error("model", "revision", f"expected a string (branch, tag or commit), got {revision!r}")
    return model, revision


def _read_vllm(table: Mapping[str, Any], loc: _Locator, opts: OptionTable, *, allow_unknown: bool,
               notes: list[str]) -> tuple[VllmArg, ...]:
    args: dict[str, VllmArg] = {}
    for key, value in table.items():
        found = opts.lookup_key(key)
        if found is None:
            if allow_unknown:
                near = opts.near_miss(key) or opts.suggest(key)
                if near:
                    notes.append(f"{loc.path}: [vllm] {key} is not a vLLM {opts.vllm_version} option but close to "
                                 f"`{near}`: passed on unchecked (a typo?)")
                tokens = ("--" + key, *([] if value is True else [str(value)]))
                args[key] = VllmArg(key, value, None, tokens, origin=PROFILE)
                continue
            suggestion = opts.suggest(key)
            hint = f"did you mean `{suggestion}`?" if suggestion else "see `vllm serve --help=all`"
            hint += " (for options of a newer vLLM, set guard.allow-unknown-vllm-options = true)"
            raise loc.error("vllm", key, f"not a vLLM {opts.vllm_version} option", hint)
        spec, negative = found
        if spec.dest == "model":
            raise loc.error("vllm", key, "the model goes in [model] id, not in [vllm]", '[model]\nid = "..."')
        if spec.dest == "config":
            raise loc.error("vllm", key, "a profile cannot point to a vLLM --config YAML file: the profile is the "
                            "configuration", "move the YAML's options into [vllm], or run the YAML without a profile: "
                            "vllm-guard serve MODEL --config FILE.yaml")
        if spec.dest in args:
            raise loc.error("vllm", key, f"sets the same option as `{args[spec.dest].key}`",
                            "keep one of the two keys")
        try:
            coerced = coerce_profile_value(spec, value)
        except ValueProblem as e:
            raise loc.error("vllm", key, str(e), f"see `vllm serve --help={spec.name}`") from None
        if negative:
            coerced = not coerced  # `disable-log-stats = true` is `enable-...` false
        if spec.dest == "gpu_memory_utilization" and not 0 < coerced <= 1:
            raise loc.error("vllm", key, f"must be in (0, 1], got {value!r}",
                            "it is a fraction of the GPU's total memory, e.g. 0.9")
        if spec.dest == "max_model_len" and coerced != -1 and coerced <= 0:
            raise loc.error("vllm", key, f"must be positive or \"auto\", got {value!r}")
        args[spec.dest] = VllmArg(spec.name, coerced, spec, origin=PROFILE)
    return tuple(args.values())


def _read_env(table: Mapping[str, Any], loc: _Locator) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise loc.error("env", key, f"expected a string, got {value!r}", f'{key} = "..."')
        if key.startswith(ENV_PREFIX):
            raise loc.error("env", key, "the guard's own variables are not passed to vLLM",
                            "set it in the guard's environment, or use the [guard] key")
        env[key] = str(value)
    return env


def _read_guard(table: Mapping[str, Any], loc: _Locator) -> tuple[dict[str, Any], dict[str, Any]]:
    guard = _read_settings(table, GUARD_SETTINGS, "guard", loc, subtables=SUBTABLES)
    checks = _read_settings(table.get("checks", {}), CHECK_SETTINGS, "guard.checks", loc)
    for key in ("skip", "warn-only"):
        for check_id in checks.get(key, ()):
            if check_id not in ALL_CHECK_IDS:
                close = difflib.get_close_matches(check_id, ALL_CHECK_IDS, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"check ids: {', '.join(ALL_CHECK_IDS)}"
                raise loc.error("guard.checks", key, f"{check_id!r} is not a check id", hint)
    return guard, checks


def _read_settings(
    table: Any,
    settings: Mapping[str, Setting],
    name: str,
    loc: _Locator,
    *,
    subtables: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise loc.error(name, None, "expected a table")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if subtables and key in subtables:
            continue
        setting = settings.get(key)
        if setting is None:
            known = [*settings, *(subtables or {})]
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean `{close[0]}`?" if close else f"[{name}] keys: {', '.join(known)}"
            raise loc.error(name, key, "unknown key", hint)
        try:
            out[key] = _coerce_setting(setting, value)
        except ValueProblem as e:
            raise loc.error(name, key, str(e), setting.help) from None
    return out


def _coerce_setting(setting: Setting, value: Any) -> Any:
    kind = setting.kind
    if kind == "bool":
        if not isinstance(value, bool):
            raise not_a_bool(value)
        return value
    if kind == "str":
        if not isinstance(value, str) or not value:
            raise ValueProblem(f"expected a non-empty string, got {value!r}")
        return value
    if kind == "choice":
        if value not in setting.choices:
            raise ValueProblem(f"expected one of {', '.join(setting.choices)}, got {value!r}")
        return value
    if kind == "duration" and isinstance(value, str):
        value = parse_duration(value)
    if kind == "str_list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueProblem(f"expected a list of strings, got {value!r}")
        return tuple(value)
    if kind == "gpus":
        return parse_gpus(value)
    if kind == "address":
        parse_address(value)
        return value
    number: float
    if kind == "len" and isinstance(value, str):
        number = parse_human_int(value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or (
        kind in ("int", "len") and not isinstance(value, int)
    ):
        expected = "a number" if kind in ("float", "duration") else "an integer"
        raise ValueProblem(f"expected {expected}, got {value!r}")
    else:
        number = value
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueProblem(f"expected a finite number, got {value!r}")  # NaN or inf would turn a limit off
    if setting.minimum is not None and number < setting.minimum:
        raise ValueProblem(f"must be at least {setting.minimum:g}, got {value!r}")
    upper = setting.upper
    if upper is not None and number > upper:
        shown = f"{value:.3g}" if isinstance(value, float) else (str(value)[:20] + "..." if len(str(value)) > 23
                                                                 else repr(value))
        week = " (7 days)" if kind == "duration" and upper == DURATION_MAX_S else ""
        raise ValueProblem(f"must be at most {upper:g}{week}, got {shown}")
    return float(number) if kind in ("float", "duration") else int(number)
