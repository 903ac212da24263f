"""vLLM's `serve` options: spelling, values, parsing and rendering.

The option table is a copy of ``shared/data/vllm-0.33.0-serve-options.json``,
read from vLLM 0.33.0's own argparse parser (see ``docs/profile.md`` for how to
regenerate it). This module is the single place that knows how vLLM spells an
option on the command line. It follows vLLM 0.33's pre-processing rules
(``utils/argparse_utils.py``): dashes and underscores are interchangeable before
the first ``.``, unambiguous prefixes of long options are accepted (argparse
``allow_abbrev``), ``-O<n>`` means ``--optimization-level <n>``, JSON options take
dotted keys, and human integers read ``32k`` as 32000 and ``32K`` as 32768.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

OPTIONS_FILE = "vllm-0.33.0-serve-options.json"


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

    @property
    def takes_value(self) -> bool:
        return self.kind not in ("bool", "flag", "help")

    @property
    def multiple(self) -> bool:
        return self.nargs == "+"

    @property
    def human_int(self) -> bool:
        return self.type is not None and "human_readable_int" in self.type

    @property
    def accepts_auto(self) -> bool:
        return self.type is not None and self.type.endswith("human_readable_int_or_auto")


@dataclass(frozen=True)
class OptionTable:
    vllm_version: str
    options: tuple[OptionSpec, ...]
    by_string: dict[str, OptionSpec] = field(repr=False)
    by_dest: dict[str, OptionSpec] = field(repr=False)

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
        import difflib

        names = sorted({s[2:] for s in self.by_string if s.startswith("--")})
        close = difflib.get_close_matches(key.replace("_", "-"), names, n=1, cutoff=0.7)
        return close[0] if close else None


def normalize_option_string(option: str) -> str:
    """vLLM turns underscores into dashes in `--` options, before the first dot."""
    if not option.startswith("--"):
        return option
    head, dot, tail = option.partition(".")
    return head.replace("_", "-") + dot + tail


@cache
def load_table() -> OptionTable:
    raw = json.loads(resources.files("vllm_guard").joinpath("data").joinpath(OPTIONS_FILE).read_text("utf-8"))
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


def coerce_profile_value(spec: OptionSpec, value: Any) -> Any:
    """Validate a TOML value for an option and return the value the guard works with.

    Raises:
        ValueProblem: when vLLM would reject the value; the message names what is expected.
    """
    kind = spec.kind
    if kind in ("bool", "flag"):
        if not isinstance(value, bool):
            raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
        return value
    if spec.optional_value and value is True:
        return True
    if spec.multiple:
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
# -1 is vLLM's "auto" for max-model-len and passes; gpu-memory-utilization has its own check (0, 1].
RANGES: dict[str, tuple[float, float | None]] = {
    "port": (1, 65535), "tensor_parallel_size": (1, None), "pipeline_parallel_size": (1, None),
    "data_parallel_size": (1, None), "max_model_len": (1, None), "max_num_seqs": (1, None),
    "max_num_batched_tokens": (1, None), "cpu_offload_gb": (0, None),
    "swap_space": (0, None), "block_size": (1, None),
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
    low, high = RANGES.get(spec.dest, (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        where = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise ValueProblem(f"must be {where}, got {value!r}")
    return value


def _coerce_scalar(spec: OptionSpec, value: Any) -> Any:
    kind = spec.kind
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
        choices = spec.choices or ()
        if value in choices and not isinstance(value, bool):
            return value
        raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")
    if isinstance(value, str):
        return value
    raise ValueProblem(f"expected {expected_type(spec)}, got {value!r}")


def convert_cli_values(spec: OptionSpec, values: Sequence[str]) -> Any:
    """Turn command-line strings into the value the guard works with (for its checks)."""
    kind = spec.kind
    if kind in ("int", "float", "choice") or (kind == "str" and spec.type == "str"):
        converted: list[Any] = []
        for text in values:
            if kind == "int":
                if spec.human_int or spec.accepts_auto:
                    converted.append(parse_human_int(text, allow_auto=spec.accepts_auto))
                else:
                    try:
                        converted.append(int(text))
                    except ValueError as e:
                        raise ValueProblem(f"expected an integer, got {text!r}") from e
            elif kind == "float":
                try:
                    converted.append(float(text))
                except ValueError as e:
                    raise ValueProblem(f"expected a number, got {text!r}") from e
            elif kind == "choice":
                choice: Any = text
                if spec.choices and all(_is_int(c) for c in spec.choices if c is not None):
                    try:
                        choice = int(text)
                    except ValueError as e:
                        raise ValueProblem(f"expected {expected_type(spec)}, got {text!r}") from e
                if spec.choices is not None and choice not in spec.choices:
                    raise ValueProblem(f"expected {expected_type(spec)}, got {text!r}")
                converted.append(choice)
            else:
                converted.append(text)
        if kind in ("int", "float"):
            converted = [check_number(spec, v) for v in converted]
        return converted if spec.multiple else converted[0]
    if kind == "json" and len(values) == 1:
        try:
            return json.loads(values[0])
        except json.JSONDecodeError as e:
            raise ValueProblem(f"expected JSON, got {values[0]!r} ({e})") from e
    if kind == "json_or_str" and len(values) == 1:
        try:
            return json.loads(values[0])
        except json.JSONDecodeError:
            return values[0]
    if kind == "csv_list":
        return [v.strip() for v in values[0].split(",") if v.strip()]
    return list(values) if spec.multiple else values[0]


def render(spec: OptionSpec, value: Any) -> list[str]:
    """The command-line tokens vLLM 0.33 expects for a value. Inverse of parsing."""
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
    if kind in ("json", "json_or_str") and isinstance(value, (dict, list)):
        return [flag, json.dumps(value, separators=(",", ":"))]
    if kind == "csv_list" and isinstance(value, list):
        return [flag, ",".join(str(v) for v in value)]
    if isinstance(value, list):
        return [flag, *(_scalar_text(v) for v in value)]
    return [flag, _scalar_text(value)]


def _scalar_text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --- command lines ----------------------------------------------------------


@dataclass(frozen=True)
class VllmArg:
    """One option as the guard holds it: which option, its value, and how it was written.

    ``tokens`` are the exact command-line tokens when the user typed them (drop-in
    mode passes them through untouched); ``None`` means render from ``value``.
    ``subkey`` is set for dotted JSON keys (``--limit-mm-per-prompt.image 2``).
    ``spec`` is None for an unknown option passed through under
    ``guard.allow-unknown-vllm-options``.
    """

    key: str
    value: Any
    spec: OptionSpec | None = None
    tokens: tuple[str, ...] | None = None
    subkey: str | None = None

    @property
    def identity(self) -> str:
        base = self.spec.dest if self.spec is not None else self.key
        return f"{base}.{self.subkey}" if self.subkey else base

    def argv(self) -> list[str]:
        if self.tokens is not None:
            return list(self.tokens)
        assert self.spec is not None, "an unknown option always keeps its tokens"
        return render(self.spec, self.value)


class ArgvProblem(ValueError):
    def __init__(self, message: str, *, option: str | None = None, suggestion: str | None = None) -> None:
        super().__init__(message)
        self.option = option
        self.suggestion = suggestion


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _looks_like_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def parse_argv(tokens: Sequence[str], table: OptionTable, *, allow_unknown: bool = False) -> list[VllmArg]:
    """Parse `vllm serve` options the way vLLM 0.33's parser reads them.

    Raises:
        ArgvProblem: for an unknown option (with a suggestion), a missing value,
            or a value vLLM would reject.
    """
    args: list[VllmArg] = []
    it = _Tokens(tokens)
    for token in it:
        if not _looks_like_option(token):
            raise ArgvProblem(
                f"unexpected argument {token!r}: `vllm serve` takes one model, given before the options",
                option=token,
            )
        written, eq, inline = token.partition("=")
        if re.fullmatch(r"-O\d?", written) or re.fullmatch(r"-O\d", token):
            # -O3, -O=3, -O 3 all mean --optimization-level 3 (vLLM 0.33 pre-processing).
            level = token[2:].lstrip("=") or (it.take() if it.peek_value() else "")
            if not level:
                raise ArgvProblem("-O needs a level 0-3", option=token)
            spec = table.by_dest["optimization_level"]
            args.append(VllmArg(spec.name, level, spec, (token,) if token[2:] else (token, level)))
            continue
        normalized = normalize_option_string(written)
        base, dot, subkey = normalized.partition(".")
        found = table.resolve(base)
        if found is None:
            if not allow_unknown:
                suggestion = table.suggest(base.lstrip("-"))
                raise ArgvProblem(f"unknown vLLM option {written!r}", option=written, suggestion=suggestion)
            values = [inline] if eq else it.take_values()
            args.append(VllmArg(base.lstrip("-"), values, None, (token, *([] if eq else values))))
            continue
        spec, full = found
        if dot:
            if spec.kind != "json":
                raise ArgvProblem(f"{base} does not take dotted keys (it is not a JSON option)", option=written)
            value = inline if eq else it.take_required(written)
            args.append(VllmArg(spec.name, value, spec, (token,) if eq else (token, value), subkey=subkey))
            continue
        if not spec.takes_value:
            if eq:
                raise ArgvProblem(f"{written} takes no value", option=written)
            positive = spec.kind == "flag" or full in spec.positive
            args.append(VllmArg(spec.name, positive, spec, (token,)))
            continue
        raw: tuple[str, ...]
        if eq:
            values = [inline]
            raw = (token,)
        elif spec.optional_value:
            values = [it.take()] if it.peek_value() else []
            raw = (token, *values)
            if not values:
                args.append(VllmArg(spec.name, spec.default if spec.default is not None else True, spec, raw))
                continue
        elif spec.multiple:
            values = it.take_values()
            if not values:
                raise ArgvProblem(f"{written} expects at least one value", option=written)
            raw = (token, *values)
        else:
            values = [it.take_required(written)]
            raw = (token, *values)
        try:
            value = convert_cli_values(spec, values)
        except ValueProblem as e:
            raise ArgvProblem(f"{written}: {e}", option=written) from e
        args.append(VllmArg(spec.name, value, spec, raw))
    return args


class _Tokens:
    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = list(tokens)
        self._i = 0

    def __iter__(self) -> Iterator[str]:
        while self._i < len(self._tokens):
            token = self._tokens[self._i]
            self._i += 1
            yield token

    def peek_value(self) -> bool:
        return self._i < len(self._tokens) and not _looks_like_option(self._tokens[self._i])

    def take(self) -> str:
        token = self._tokens[self._i]
        self._i += 1
        return token

    def take_required(self, option: str) -> str:
        if not self.peek_value():
            raise ArgvProblem(f"{option} expects a value", option=option)
        return self.take()

    def take_values(self) -> list[str]:
        values = []
        while self.peek_value():
            values.append(self.take())
        return values
