"""Option values: human numbers (32k, 1Gi), the types and ranges vLLM accepts, rendering as vLLM reads them."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from vllm_guard.options.table import OptionSpec, one_edit_apart

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
            except (json.JSONDecodeError, RecursionError) as e:  # nested past Python's limit: no JSON either
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
        except (json.JSONDecodeError, RecursionError) as e:  # nested past Python's limit: no JSON either
            raise ValueProblem(f"expected JSON, got {text!r} ({e})") from e
    if kind == "json_or_str":
        # vLLM's union_dict_and_str: JSON only when it looks like an object, else the string itself.
        if not _JSON_OBJECT.match(text):
            return text
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as e:  # nested past Python's limit: no JSON either
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
