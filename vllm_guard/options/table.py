"""vLLM's `serve` options: spelling, values, parsing and rendering, per vLLM release.

Each table in ``vllm_guard/data/vllm-<version>-serve-options.json`` was read from that
release's own argparse parser (``scripts/gen_vllm_options.py``; the 0.33.0 table is the
shared reference copy). The installed vLLM picks the table (``choose_table``). This
module is the single place that knows how vLLM spells an option on the command line.
It follows vLLM's pre-processing (``FlexibleArgumentParser.parse_args``, the same in
0.32 and 0.33): dashes and underscores are interchangeable before the first ``.``,
unambiguous prefixes of long options are accepted (argparse ``allow_abbrev``),
``-O<n>`` means ``--optimization-level <n>``, JSON options take dotted keys (merged and
applied after every other option), ``--model X`` is moved to the positional model,
``--config FILE`` inlines a YAML file right after the model, and human integers read
``32k`` as 32000 and ``32K`` as 32768.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

TABLE_NAME = re.compile(r"^vllm-(\d+(?:\.\d+)*)-serve-options\.json$")


@dataclass(frozen=True)
class OptionSpec:
    """One `vllm serve` option as vLLM's parser defines it."""

    name: str  # canonical key: first long option without dashes, e.g. "max-model-len"
    dest: str
    strings: tuple[str, ...]
    kind: str  # bool | flag | choice | int | float | str | json | json_or_str | csv_list | help
    type: str | None
    nargs: int | str | None
    choices: tuple[Any, ...] | None
    default: Any
    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()
    optional_value: bool = False
    nullable: bool = False
    deprecated: bool = False
    suggested: tuple[Any, ...] | None = None  # values vLLM checks after parsing (not argparse choices)
    action: str = "_StoreAction"

    @property
    def takes_value(self) -> bool:
        return self.kind not in ("bool", "flag", "help")

    @property
    def multiple(self) -> bool:
        return self.nargs == "+"

    @property
    def appends(self) -> bool:
        """Given twice, the values add up (argparse ``append``) instead of the last one winning."""
        return self.action == "_AppendAction"

    @property
    def human_int(self) -> bool:
        return self.type is not None and "human_readable_int" in self.type

    @property
    def accepts_auto(self) -> bool:
        return self.type is not None and self.type.endswith("human_readable_int_or_auto")


@dataclass(frozen=True)
class OptionTable:
    vllm_version: str
    options: tuple[OptionSpec, ...] = field(repr=False)
    by_string: dict[str, OptionSpec] = field(repr=False)
    by_dest: dict[str, OptionSpec] = field(repr=False)

    @property
    def file_name(self) -> str:
        return f"vllm-{self.vllm_version}-serve-options.json"

    def resolve(self, option: str) -> tuple[OptionSpec, str] | None:
        """Find the option for a command-line string (`--max_model_len`, `-tp`, `--max-model`).

        Returns the option and the full option string it stands for.
        """
        option = normalize_option_string(option)
        spec = self.by_string.get(option)
        if spec is not None:
            return spec, option
        if not option.startswith("--"):
            return None
        # argparse allow_abbrev: a prefix that matches the strings of exactly one option.
        matches = [(s, string) for string, s in self.by_string.items() if string.startswith(option)]
        if len({s.dest for s, _ in matches}) != 1:
            return None
        # A prefix of both `--enforce-eager` and `--no-...` cannot happen: they differ at once.
        return matches[0]

    def claims(self, option: str) -> bool:
        """Whether vLLM's parser would take this string as (a prefix of) one of its own options."""
        option = normalize_option_string(option)
        return any(string.startswith(option) for string in self.by_string)

    def lookup_key(self, key: str) -> tuple[OptionSpec, bool] | None:
        """Find the option for a profile key; the bool says whether the key is a negative form.

        Profile keys are long option strings without the dashes (``max-model-len``,
        ``disable-log-stats``); abbreviations are not accepted in files.
        """
        string = "--" + key.replace("_", "-")
        spec = self.by_string.get(string)
        if spec is None:
            return None
        return spec, string in spec.negative

    def suggest(self, key: str) -> str | None:
        names = sorted({s[2:] for s in self.by_string if s.startswith("--")})
        close = difflib.get_close_matches(key.replace("_", "-"), names, n=1, cutoff=0.7)
        return close[0] if close else None

    def near_miss(self, key: str) -> str | None:
        """A known option one edit (a letter added, dropped, changed or two swapped) away from ``key``."""
        key = key.replace("_", "-")
        names = {s[2:] for s in self.by_string if s.startswith("--")}
        return next((n for n in sorted(names) if one_edit_apart(key, n)), None)


def one_edit_apart(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def normalize_option_string(option: str) -> str:
    """vLLM turns underscores into dashes in `--` options, before the first dot."""
    if not option.startswith("--"):
        return option
    head, dot, tail = option.partition(".")
    return head.replace("_", "-") + dot + tail


def version_key(version: str) -> tuple[int, ...]:
    """(0, 32, 1) for "0.32.1", "0.32.1rc2", "0.32.1.dev3+g1234" or "0.32.1+cpu"."""
    parts = []
    for piece in version.split("+", maxsplit=1)[0].split("."):
        m = re.match(r"\d+", piece)
        if m is None:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


@cache
def table_versions() -> tuple[str, ...]:
    """The vLLM releases the guard has an option table for, oldest first."""
    files = resources.files("vllm_guard").joinpath("data").iterdir()
    found = [m.group(1) for f in files if (m := TABLE_NAME.match(f.name))]
    return tuple(sorted(found, key=version_key))


@dataclass(frozen=True)
class TableChoice:
    """Which option table applies, and why."""

    table: OptionTable = field(repr=False)
    vllm_version: str | None  # the installed (or recorded) vLLM; None: unknown
    source: str  # where the version was read: "package metadata", a snapshot file, or "none found"
    newer: bool = False  # vLLM is newer than every table: options the table lacks pass, with a note
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"vllm_version": self.vllm_version, "version_source": self.source,
                "option_table": self.table.file_name, "table_version": self.table.vllm_version,
                "newer_than_table": self.newer, "warning": self.warning}


def choose_table(version: str | None, source: str) -> TableChoice:
    """The table for an installed vLLM: the newest table not newer than it.

    No version known: the newest table. Newer than every table: the newest, with a warning,
    and options that table lacks pass through with a note. Older than every table: the
    oldest, with a warning.
    """
    versions = table_versions()
    newest = versions[-1]
    if version is None or not version_key(version):
        return TableChoice(load_table(newest), version, source)
    key = version_key(version)
    fitting = [v for v in versions if version_key(v)[:2] <= key[:2]]
    if not fitting:
        return TableChoice(load_table(versions[0]), version, source, warning=(
            f"vLLM {version} is older than every option table the guard has ({', '.join(versions)}); "
            f"validating against {versions[0]}'s"))
    chosen = fitting[-1]
    if key[:2] > version_key(newest)[:2]:
        return TableChoice(load_table(newest), version, source, newer=True, warning=(
            f"vLLM {version} is newer than the guard's newest option table ({newest}): options that table does "
            "not know are passed on unchecked"))
    return TableChoice(load_table(chosen), version, source)


@cache
def load_table(version: str | None = None) -> OptionTable:
    """The option table of one vLLM release; the newest when ``version`` is None."""
    version = version or table_versions()[-1]
    name = f"vllm-{version}-serve-options.json"
    raw = json.loads(resources.files("vllm_guard").joinpath("data").joinpath(name).read_text("utf-8"))
    specs = []
    for o in raw["options"]:
        specs.append(
            OptionSpec(
                name=o["long_options"][0][2:] if o["long_options"] else o["option_strings"][0].lstrip("-"),
                dest=o["dest"],
                strings=tuple(o["option_strings"]),
                kind=o["value_kind"],
                type=o["type"],
                nargs=o["nargs"],
                choices=tuple(o["choices"]) if o["choices"] is not None else None,
                default=o["default"],
                positive=tuple(o.get("positive_option_strings") or ()),
                negative=tuple(o.get("negative_option_strings") or ()),
                visible=tuple(o["visible_option_strings"]),
                optional_value=bool(o["optional_value"]),
                nullable=bool(o["nullable"]),
                deprecated=bool(o["deprecated"]),
                suggested=tuple(o["suggested_values"]) if o.get("suggested_values") else None,
                action=o.get("action") or "_StoreAction",
            )
        )
    by_string = {s: spec for spec in specs for s in spec.strings}
    return OptionTable(
        vllm_version=raw["vllm_version"],
        options=tuple(specs),
        by_string=by_string,
        by_dest={s.dest: s for s in specs},
    )


# --- values -----------------------------------------------------------------

_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kmgtKMGT]?)$")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class ValueProblem(ValueError):
    """A value that vLLM's parser would reject; the message says what was expected."""


def parse_human_int(text: str, *, allow_auto: bool = False) -> int:
    """Read vLLM's human-readable integers: ``32k`` = 32000, ``32K`` = 32768, ``auto`` = -1.

    Decimals only with lower-case suffixes (``25.6k``), as in vLLM 0.33
    ``utils/argparse_utils.py:30-94``.
    """
    text = text.strip()
    if allow_auto and text in ("auto", "-1"):
        return -1
    m = _HUMAN_INT.match(text)
    if m is None:
        raise ValueProblem(f"expected an integer such as 4096, 32k (32000) or 32K (32768), got {text!r}")
    number, suffix = m.groups()
    if len(number) > 30:  # far beyond any length or count; Python refuses to convert 4,300 digits and more
        raise ValueProblem(f"{text[:40]}... is too large a number")
    if suffix in _BINARY:
        if "." in number:
            raise ValueProblem(f"decimals are allowed only with lower-case suffixes, got {text!r}")
        return int(number) * _BINARY[suffix]
    scaled = float(number) * _DECIMAL.get(suffix, 1) if "." in number else int(number) * _DECIMAL.get(suffix, 1)
    if scaled != int(scaled):
        raise ValueProblem(f"{text!r} is not a whole number")
    return int(scaled)


def expected_type(spec: OptionSpec) -> str:
    kind = spec.kind
    if kind in ("bool", "flag"):
        return "true or false"
    if kind == "int":
        base = "an integer"
        if spec.human_int:
            base += " (or a string like \"32k\")"
        if spec.accepts_auto:
            base += ' or "auto"'
        return base + (" or a list of them" if spec.multiple else "")
    if kind == "float":
        return "a number"
    if kind == "choice":
        return "one of " + ", ".join(str(c) for c in spec.choices or ())
    if kind == "json":
        return "a table, an array, or a JSON string"
    if kind == "csv_list":
        return "a list or a comma-separated string"
    if spec.optional_value:
        return "a string, or true for the bare flag"
    return "a string" + (" or a list of strings" if spec.multiple else "")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_known_value(spec: OptionSpec, value: Any) -> Any:
    """A value vLLM will refuse: outside argparse's choices, or a near miss of the values vLLM
    checks after parsing (``suggested``: plugins may add others, so only a near miss is refused).

    Raises:
        ValueProblem: with the value it probably meant.
    """
    if spec.choices is not None:
        if value in spec.choices and not isinstance(value, bool):
            return value
        raise ValueProblem(f"{value!r} is not one of vLLM's choices: "
                           + ", ".join(str(c) for c in spec.choices) + _did_you_mean(value, spec.choices))
    if spec.suggested and isinstance(value, str) and value not in spec.suggested:
        close = [str(c) for c in spec.suggested if isinstance(c, str) and one_edit_apart(value.lower(), c.lower())]
        if close:
            raise ValueProblem(f"{value!r} is not a value vLLM knows for --{spec.name}; did you mean {close[0]!r}?")
    return value


def _did_you_mean(value: Any, choices: Iterable[Any]) -> str:
    names = [str(c) for c in choices if c is not None]
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def not_a_bool(value: Any, expected: str = "true or false") -> ValueProblem:
    """The problem with a non-boolean where TOML wants true or false; a quoted "true" says how to mend it."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return ValueProblem(f"expected {expected}, got the string {value!r}: drop the quotes "
                            f"({value.strip().lower()} is TOML's boolean)")
    return ValueProblem(f"expected {expected}, got {value!r}")


def coerce_profile_value(spec: OptionSpec, value: Any) -> Any:
    """Validate a TOML (or YAML) value for an option and return the value the guard works with.

    Raises:
        ValueProblem: when vLLM would reject the value; the message names what is expected.
    """
    kind = spec.kind
    if kind in ("bool", "flag"):
        if not isinstance(value, bool):
            raise not_a_bool(value, expected_type(spec))
        return value
    if spec.optional_value and value is True:
        return True
    if spec.multiple or spec.appends:
        # nargs '+' options hold a list, as vLLM's parser gives them; a scalar is a list of one.
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ValueProblem("expected at least one value, got an empty list")
        return [_coerce_scalar(spec, v) for v in items]
    if kind == "json":
        if isinstance(value, (dict, list)):
            return value
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as e:
                raise ValueProblem(f"expected {expected_type(spec)}; the string is not valid JSON ({e})") from e
        raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
    if kind == "json_or_str":
        if isinstance(value, (dict, list, str)):
            return value
        raise ValueProblem(f"expected a table or a string, got {value!r}")
    if kind == "csv_list":
        if isinstance(value, list) and all(_is_int(v) or isinstance(v, str) for v in value):
            return value
        if isinstance(value, str) or _is_int(value):
            return [v.strip() for v in str(value).split(",") if v.strip()]
        raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
    return _coerce_scalar(spec, value)


# Values vLLM's parser takes but that cannot run, or that turn a limit off: (lowest, highest), inclusive.
# -1 is vLLM's "auto" for max-model-len and passes; gpu-memory-utilization is in (0, 1] (below).
RANGES: dict[str, tuple[float, float | None]] = {
    "port": (1, 65535), "tensor_parallel_size": (1, None), "pipeline_parallel_size": (1, None),
    "data_parallel_size": (1, None), "max_model_len": (1, None), "max_num_seqs": (1, None),
    "max_num_batched_tokens": (1, None), "cpu_offload_gb": (0, None),
    "swap_space": (0, None), "block_size": (1, None), "gpu_memory_utilization": (0, 1),
}


def check_number(spec: OptionSpec, value: float) -> float:
    """A number vLLM can run with: finite (NaN and infinity are not), and within RANGES.

    Raises:
        ValueProblem: naming the range.
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueProblem(f"expected a finite number, got {value!r}")
    if spec.dest == "max_model_len" and value == -1:
        return value
    if spec.dest == "gpu_memory_utilization":
        if not 0 < value <= 1:
            raise ValueProblem(f"must be in (0, 1], a fraction of the GPU's total memory such as 0.9, got {value!r}")
        return value
    low, high = RANGES.get(spec.dest, (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        where = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise ValueProblem(f"must be {where}, got {value!r}")
    return value


def _coerce_scalar(spec: OptionSpec, value: Any) -> Any:
    kind = spec.kind
    if value is None and spec.nullable:
        return None
    if kind == "int":
        if _is_int(value):
            return check_number(spec, value)
        if isinstance(value, str) and (spec.human_int or spec.accepts_auto):
            return check_number(spec, parse_human_int(value, allow_auto=spec.accepts_auto))
        raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
    if kind == "float":
        if _is_int(value) or isinstance(value, float):
            return check_number(spec, float(value))
        raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
    if kind == "choice":
        return check_known_value(spec, value)
    if isinstance(value, str):
        return check_known_value(spec, value)
    raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")


_JSON_OBJECT = re.compile(r"(?s)^\s*{.*}\s*$")


def convert_cli_values(spec: OptionSpec, values: Sequence[str]) -> Any:
    """Turn command-line strings into the value vLLM's parser stores (for the checks and comparisons).

    Raises:
        ValueProblem: when vLLM's parser (or its config, for a near-miss value) would refuse it.
    """
    converted = [_convert_one(spec, text) for text in values]
    if spec.multiple or spec.appends:
        return converted
    return converted[0]


def _convert_one(spec: OptionSpec, text: str) -> Any:
    kind = spec.kind
    if spec.nullable and text in ("", "None"):
        return check_known_value(spec, None) if spec.choices is not None else None
    inner = (spec.type or "str").removeprefix("optional[").removesuffix("]")
    if kind == "choice" or inner in ("int", "float") or spec.human_int:
        value: Any = text
        if spec.human_int or spec.accepts_auto:
            value = parse_human_int(text, allow_auto=spec.accepts_auto)
        elif inner == "int":
            try:
                value = int(text)
            except ValueError as e:
                raise ValueProblem(f"expected an integer, got {text!r}") from e
        elif inner == "float":
            try:
                value = float(text)
            except ValueError as e:
                raise ValueProblem(f"expected a number, got {text!r}") from e
        elif spec.type == "str_lowercased_dash_to_underscore":
            value = text.lower().replace("-", "_")
        if kind == "choice":
            return check_known_value(spec, value)
        return check_number(spec, value)
    if kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueProblem(f"expected JSON, got {text!r} ({e})") from e
    if kind == "json_or_str":
        # vLLM's union_dict_and_str: JSON only when it looks like an object, else the string itself.
        if not _JSON_OBJECT.match(text):
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueProblem(f"expected a JSON object, got {text!r} ({e})") from e
    if kind == "csv_list":
        return [v.strip() for v in text.split(",") if v.strip()]
    if spec.type == "parse_reasoning_parser" and text.lower() == "none":
        return ""
    return check_known_value(spec, text)


def render(spec: OptionSpec, value: Any) -> list[str]:
    """The command-line tokens vLLM expects for a value. Inverse of parsing."""
    kind = spec.kind
    if kind == "bool":
        if value:
            return [spec.positive[0]]
        negatives = [s for s in spec.negative if s in spec.visible] or list(spec.negative)
        return [negatives[0]]
    if kind == "flag":
        # store_true options have no negative form: false is vLLM's default, so nothing to say.
        return ["--" + spec.name] if value else []
    flag = "--" + spec.name
    if spec.optional_value and value is True:
        return [flag]
    if spec.accepts_auto and value == -1:
        return [flag, "auto"]
    if kind in ("json", "json_or_str") and isinstance(value, (dict, list)):
        return [flag, json.dumps(value, separators=(",", ":"))]
    if kind == "csv_list" and isinstance(value, list):
        return [flag, ",".join(str(v) for v in value)]
    if spec.appends and isinstance(value, list):
        return [t for v in value for t in (flag, _scalar_text(v))]
    if isinstance(value, list):
        return [flag, *(_scalar_text(v) for v in value)]
    return [flag, _scalar_text(value)]


def _scalar_text(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --- command lines ----------------------------------------------------------

COMMAND_LINE = "command line"
PROFILE = "profile"
GUARD = "guard"  # a value the guard chose (max-model-len-cap, a ladder rung)


@dataclass(frozen=True)
class VllmArg:
    """One option as the guard holds it: which option, its value, and how it was written.

    ``tokens`` are the exact command-line tokens when the user typed them (drop-in
    mode passes them through untouched); ``None`` means render from ``value``.
    ``subkey`` is set for dotted JSON keys (``--limit-mm-per-prompt.image 2``).
    ``spec`` is None for an unknown option passed through under
    ``guard.allow-unknown-vllm-options``. ``origin`` says where the value came from:
    the command line, a profile, or a ``--config`` YAML file (whose options reach vLLM
    through ``--config FILE`` itself, so they have no tokens of their own to hand on).
    """

    key: str
    value: Any
    spec: OptionSpec | None = None
    tokens: tuple[str, ...] | None = None
    subkey: str | None = None
    origin: str = COMMAND_LINE

    @property
    def identity(self) -> str:
        base = self.spec.dest if self.spec is not None else self.key
        return f"{base}.{self.subkey}" if self.subkey else base

    @property
    def from_config_file(self) -> bool:
        return self.origin not in (COMMAND_LINE, PROFILE, GUARD)

    def argv(self) -> list[str]:
        if self.from_config_file:
            return []
        if self.tokens is not None:
            return list(self.tokens)
        assert self.spec is not None, "an unknown option always keeps its tokens"
        return render(self.spec, self.value)


class ArgvProblem(ValueError):
    """A command line vLLM would refuse. ``origin`` names a --config file when the problem is in it."""

    def __init__(self, message: str, *, option: str | None = None, suggestion: str | None = None,
                 origin: str = COMMAND_LINE) -> None:
        super().__init__(message)
        self.option = option
        self.suggestion = suggestion
        self.origin = origin


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _looks_like_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


@dataclass(frozen=True)
class CommandLine:
    """A `vllm serve` command line as vLLM reads it."""

    model: str | None
    args: tuple[VllmArg, ...]
    config_file: str | None = None  # `--config FILE`: read by vLLM and by the guard
    model_origin: str = COMMAND_LINE
    notes: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        """What the guard hands vLLM after `serve`: the model first, ``--config FILE`` as given
        (vLLM reads the file again), then the command line's own tokens, untouched."""
        head = [self.model] if self.model is not None and self.model_origin == COMMAND_LINE else []
        config = ["--config", self.config_file] if self.config_file is not None else []
        return head + config + [t for arg in self.args for t in arg.argv()]


ConfigReader = Callable[[str], list[tuple[str, Any]]]
_MODEL_OPTION = re.compile(r"^--model(=.+|$)")


def parse_command_line(
    tokens: Sequence[str],
    table: OptionTable,
    *,
    read_config: ConfigReader | None = None,
    allow_unknown: bool = False,
) -> CommandLine:
    """Parse what follows `vllm serve` exactly as vLLM's FlexibleArgumentParser does.

    The model may come first, after some options, as ``--model X`` (moved to the front,
    as vLLM does) or from the ``--config`` file. ``--config FILE`` (two tokens) is read
    with ``read_config`` and its options are inserted right after the model, so the
    command line wins; ``--config=FILE`` is stored but not read, by vLLM too.

    Raises:
        ArgvProblem: for what vLLM would refuse (with a suggestion where one is close).
    """
    tokens = list(tokens)
    notes: list[str] = []
    model_first = bool(tokens) and not tokens[0].startswith("-")
    moved = next((i for i, t in enumerate(tokens) if _MODEL_OPTION.match(t)), None)
    if moved is not None:
        if tokens[moved] == "--model":
            if moved + 1 >= len(tokens):
                raise ArgvProblem("--model expects a value", option="--model")
            tokens = [tokens[moved + 1], *tokens[:moved], *tokens[moved + 2:]]
        else:
            tokens = [tokens[moved].removeprefix("--model="), *tokens[:moved], *tokens[moved + 1:]]
        model_first = True
        notes.append("--model is deprecated in vLLM: the model goes first (`vllm serve MODEL ...`); "
                     "vLLM moves it there, and so does the guard")
    if (tokens and tokens[0].startswith("-") and "--config" not in tokens
            and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", t) for t in tokens)):
        raise ArgvProblem("with --served-model-name, vLLM wants the model as the first argument",
                          option="--served-model-name")
    origins = [COMMAND_LINE] * len(tokens)
    config_file = None
    if "--config" in tokens:
        if tokens.count("--config") > 1:
            raise ArgvProblem("more than one --config file given; vLLM reads one", option="--config")
        at = tokens.index("--config")
        if at + 1 >= len(tokens):
            raise ArgvProblem("--config expects a YAML file", option="--config")
        config_file = tokens[at + 1]
        if read_config is None:
            raise ArgvProblem("--config is not read here", option="--config")
        config_tokens = config_to_tokens(read_config(config_file), table)
        rest = tokens[:at] + tokens[at + 2:]
        model_in_config = "--model" in config_tokens
        if not model_first and not model_in_config:
            raise ArgvProblem("no model: give it first (`vllm serve MODEL --config FILE`) or as `model:` in "
                              f"{config_file}", option="--config")
        head = 1 if model_first else 0
        tokens = rest[:head] + config_tokens + rest[head:]
        origins = [COMMAND_LINE] * head + [config_file] * len(config_tokens) + [COMMAND_LINE] * (len(rest) - head)
    return _parse_tokens(tokens, origins, table, allow_unknown=allow_unknown, config_file=config_file,
                         notes=notes)


def config_to_tokens(items: Sequence[tuple[str, Any]], table: OptionTable) -> list[str]:
    """A YAML mapping as vLLM's ``load_config_file`` turns it into arguments."""
    out: list[str] = []
    for key, value in items:
        if isinstance(value, bool):
            if value:
                out.append("--" + key)
            elif f"--no-{key}" in table.by_string:
                out.append(f"--no-{key}")
        elif isinstance(value, list):
            if value:
                out += ["--" + key, *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += ["--" + key, json.dumps(value)]
        else:
            out += ["--" + key, str(value)]
    return out


def parse_argv(tokens: Sequence[str], table: OptionTable, *, allow_unknown: bool = False) -> list[VllmArg]:
    """Parse `vllm serve` options (no model among them) the way vLLM's parser reads them.

    Raises:
        ArgvProblem: for an unknown option (with a suggestion), a missing value,
            or a value vLLM would reject.
    """
    parsed = _parse_tokens(list(tokens), [COMMAND_LINE] * len(tokens), table, allow_unknown=allow_unknown,
                           config_file=None, notes=[], positional_allowed=False)
    return list(parsed.args)


def _parse_tokens(tokens: list[str], origins: list[str], table: OptionTable, *, allow_unknown: bool,
                  config_file: str | None, notes: list[str], positional_allowed: bool = True) -> CommandLine:
    args: list[VllmArg] = []
    model: str | None = None
    model_origin = COMMAND_LINE
    it = _Tokens(tokens, origins)
    for token in it:
        origin = it.origin
        if not _looks_like_option(token):
            if model is None and positional_allowed:
                model = token
                continue
            flag_before = _flag_before(it, table)
            if flag_before is not None and token.lower() in _BOOL_WORDS:
                # `--enforce-eager false` would be read by vLLM as a second model, not as false.
                raise ArgvProblem(f"{flag_before} takes no value, got {token!r} after it: write {flag_before} "
                                  f"for true, --no-{flag_before.lstrip('-')} for false", option=flag_before,
                                  origin=origin)
            raise ArgvProblem(
                f"unexpected argument {token!r}: `vllm serve` takes one model"
                + (f" ({model!r} is the model)" if model else ", given before the options"),
                option=token, origin=origin,
            )
        written, eq, inline = token.partition("=")
        if token.startswith("-O") and token != "-O":
            # -O3, -O=3, -Odecode mean --optimization-level <n> (vLLM's pre-processing).
            level = token[3:] if token[2:3] == "=" else token[2:]
            spec = table.by_dest["optimization_level"]
            args.append(VllmArg(spec.name, _value(spec, [level], written, origin), spec, (token,), origin=origin))
            continue
        if token == "-O" and it.peek() in ("0", "1", "2", "3"):
            level = it.take()
            spec = table.by_dest["optimization_level"]
            args.append(VllmArg(spec.name, _value(spec, [level], written, origin), spec, (token, level),
                                origin=origin))
            continue
        normalized = normalize_option_string(written)
        base, dot, subkey = normalized.partition(".")
        found = table.resolve(base)
        if found is None:
            if not allow_unknown:
                suggestion = table.suggest(base.lstrip("-"))
                raise ArgvProblem(f"unknown vLLM option {written!r} (vLLM {table.vllm_version})", option=written,
                                  suggestion=suggestion, origin=origin)
            values = [inline] if eq else it.take_values()
            near = table.near_miss(base.lstrip("-")) or table.suggest(base.lstrip("-"))
            if near:
                notes.append(f"{written} is not a vLLM {table.vllm_version} option but close to --{near}: "
                             "passed on unchecked (a typo?)")
            args.append(VllmArg(base.lstrip("-"), values, None, (token, *([] if eq else values)), origin=origin))
            continue
        spec, full = found
        if spec.dest == "config" and origin == COMMAND_LINE:
            value = inline if eq else it.take_required(written)
            notes.append(f"{token if eq else written + ' ' + value}: vLLM stores this path but reads no YAML from "
                         "it; write `--config FILE` (two words) for the file to count")
            args.append(VllmArg(spec.name, value, spec, (token,) if eq else (token, value), origin=origin))
            continue
        if dot:
            if spec.kind != "json":
                raise ArgvProblem(f"{base} does not take dotted keys (it is not a JSON option)", option=written,
                                  origin=origin)
            value = inline if eq else it.take_required(written)
            args.append(VllmArg(spec.name, _dotted_value(subkey, value), spec, (token,) if eq else (token, value),
                                subkey=subkey.removesuffix("+"), origin=origin))
            continue
        if not spec.takes_value:
            if eq:
                raise ArgvProblem(f"{written} takes no value", option=written, origin=origin)
            positive = spec.kind == "flag" or full in spec.positive
            args.append(VllmArg(spec.name, positive, spec, (token,), origin=origin))
            continue
        raw: tuple[str, ...]
        if eq:
            values = [inline]
            raw = (token,)
        elif spec.optional_value:
            values = [it.take()] if it.peek_value() else []
            raw = (token, *values)
            if not values:
                args.append(VllmArg(spec.name, True, spec, raw, origin=origin))
                continue
        elif spec.multiple:
            values = it.take_values()
            if not values:
                raise ArgvProblem(f"{written} expects at least one value", option=written, origin=origin)
            raw = (token, *values)
        else:
            values = [it.take_required(written)]
            raw = (token, *values)
        args.append(VllmArg(spec.name, _value(spec, values, written, origin), spec, raw, origin=origin))
    if model is None and positional_allowed:
        model_arg = next((a for a in reversed(args) if a.spec is not None and a.spec.dest == "model"), None)
        if model_arg is not None:
            model, model_origin = model_arg.value, model_arg.origin
    args = [a for a in args if a.spec is None or a.spec.dest != "model"]
    return CommandLine(model, tuple(args), config_file, model_origin, tuple(notes))


def _value(spec: OptionSpec, values: list[str], written: str, origin: str) -> Any:
    try:
        return convert_cli_values(spec, values)
    except ValueProblem as e:
        raise ArgvProblem(f"{written}: {e}", option=written, origin=origin) from e


def _dotted_value(subkey: str, text: str) -> Any:
    """A dotted key's value as vLLM reads it: JSON, else a human-readable int, else the string;
    ``key+`` takes a comma-separated list."""
    if subkey.endswith("+"):
        return text.split(",")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return parse_human_int(text)
        except ValueProblem:
            return text


def namespace(command: CommandLine) -> dict[str, Any]:
    """The options the command line sets, as vLLM's namespace holds them (dest -> value).

    Dotted JSON keys are merged into one object and applied after all other options,
    as vLLM's pre-processing appends them at the end. The model is under "model".
    """
    ns: dict[str, Any] = {}
    dotted: dict[str, dict[str, Any]] = {}
    for arg in command.args:
        dest = arg.spec.dest if arg.spec is not None else arg.key
        if arg.subkey:
            *path, last = arg.subkey.split(".")
            node = dotted.setdefault(dest, {})
            for part in path:
                node = node.setdefault(part, {})
            if isinstance(arg.value, list) and isinstance(node.get(last), list):
                node[last] = node[last] + arg.value
            else:
                node[last] = arg.value
        elif arg.spec is not None and arg.spec.appends:
            ns[dest] = [*ns.get(dest, []), *arg.value]
        else:
            ns[dest] = arg.value
    ns.update(dotted)
    if command.model is not None:
        ns["model"] = command.model
    return ns


_BOOL_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


def _flag_before(it: _Tokens, table: OptionTable) -> str | None:
    """The on/off option just before the current token, as written (``--enforce-eager``), if it is one."""
    before = it.previous()
    if before is None or "=" in before or not _looks_like_option(before):
        return None
    found = table.resolve(before)
    if found is None or found[0].kind not in ("bool", "flag"):
        return None
    return "--" + found[1].removeprefix("--").removeprefix("no-")


class _Tokens:
    def __init__(self, tokens: Iterable[str], origins: Sequence[str] | None = None) -> None:
        self._tokens = list(tokens)
        self._origins = list(origins) if origins is not None else [COMMAND_LINE] * len(self._tokens)
        self._i = 0

    @property
    def origin(self) -> str:
        return self._origins[max(self._i - 1, 0)] if self._origins else COMMAND_LINE

    def __iter__(self) -> Iterator[str]:
        while self._i < len(self._tokens):
            token = self._tokens[self._i]
            self._i += 1
            yield token

    def peek(self) -> str | None:
        return self._tokens[self._i] if self._i < len(self._tokens) else None

    def previous(self) -> str | None:
        """The token before the one last taken."""
        return self._tokens[self._i - 2] if self._i >= 2 else None

    def peek_value(self) -> bool:
        return self._i < len(self._tokens) and not _looks_like_option(self._tokens[self._i])

    def take(self) -> str:
        token = self._tokens[self._i]
        self._i += 1
        return token

    def take_required(self, option: str) -> str:
        if not self.peek_value():
            raise ArgvProblem(f"{option} expects a value", option=option, origin=self.origin)
        return self.take()

    def take_values(self) -> list[str]:
        values = []
        while self.peek_value():
            values.append(self.take())
        return values
