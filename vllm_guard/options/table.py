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
import re
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
