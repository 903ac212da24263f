"""Write the `vllm serve` option table of the vLLM installed beside this Python.

Run it with the target vLLM's own interpreter, so the next release is one command:

    /path/to/vllm-venv/bin/python scripts/gen_vllm_options.py -o vllm_guard/data/

It follows the recipe in the shared reference data (``data/README.md`` beside
``vllm-0.33.0-serve-options.json``) by introspection, not by reading the source:
vLLM's own CLI ``main()`` builds its parser, the final ``parse_args`` call is
intercepted, the ``serve`` sub-parser is taken from it and every action is walked.
Which option strings set a toggle to true or false is read by parsing each string
with that parser. The platform is whatever this vLLM build selects (the CPU build
here; the 0.33 table was read with the CUDA platform class, see ``method``).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("parser captured")
        self.parser = parser


def build_serve_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """vLLM's top-level parser and its `serve` sub-parser, as `vllm <argv>` builds them."""
    sys.argv = ["vllm", *argv]
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    original = FlexibleArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        raise _Captured(self)

    FlexibleArgumentParser.parse_args = capture  # type: ignore[method-assign]
    from vllm.entrypoints.cli.main import main

    try:
        main()
    except _Captured as c:
        top = c.parser
    else:
        raise SystemExit("vLLM's main() returned without parsing its arguments")
    finally:
        FlexibleArgumentParser.parse_args = original  # type: ignore[method-assign]
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return top, sub.choices["serve"]


def jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        # An enum with a plain value by that value (as written on the command line), else by its name.
        return value.value if isinstance(value.value, (str, int, float)) else value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def type_name(t: Any) -> str | None:
    """vLLM's converters by what they do: unwrap optional_type / parse_type closures and parse_dataclass."""
    if t is None:
        return None
    qual = getattr(t, "__qualname__", type(t).__name__)
    cells = [c.cell_contents for c in (getattr(t, "__closure__", None) or ())]
    if qual.startswith("optional_type"):
        return f"optional[{type_name(cells[0])}]"
    if qual.startswith("parse_type"):
        return type_name(cells[0])
    if qual.endswith("parse_dataclass"):
        cls = (t.__defaults__ or (None,))[0]
        return f"json[{getattr(cls, '__name__', 'object')}]"
    if qual == "loads":
        return "json"
    if qual == "union_dict_and_str":
        return "json_or_str"
    if getattr(t, "__module__", None) == "builtins":
        return qual
    return qual.split(".<locals>.")[0].split(".")[-1] if "<lambda>" not in qual else "str"


def value_kind(action: argparse.Action, tname: str | None, toggle: bool) -> str:
    kind = type(action).__name__
    if kind == "_HelpAction":
        return "help"
    if kind in ("_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction"):
        return "flag"
    if toggle:
        return "bool"
    if action.choices is not None:
        return "choice"
    inner = (tname or "str").removeprefix("optional[").removesuffix("]")
    if inner.startswith("json["):
        return "json"
    if inner in ("json", "json_or_str"):
        return inner
    if "comma_separated" in inner:
        return "csv_list"
    if inner in ("int", "human_readable_int", "human_readable_int_or_auto"):
        return "int"
    if inner == "float":
        return "float"
    return "str"


def describe(top: argparse.ArgumentParser, serve: argparse.ArgumentParser) -> list[dict[str, Any]]:
    baseline = vars(top.parse_args(["serve", "m"]))
    titles = {id(a): g.title for g in serve._action_groups for a in g._group_actions}
    out = []
    for action in serve._actions:
        if not action.option_strings:
            continue
        strings = [s for s, a in serve._option_string_actions.items() if a is action]
        strings.sort(key=lambda s: (s not in action.option_strings, action.option_strings.index(s)
                                    if s in action.option_strings else 0))
        visible = [s for s in action.option_strings if action.help != argparse.SUPPRESS]
        tname = type_name(action.type)
        toggle = action.nargs == 0 and type(action).__name__ not in (
            "_HelpAction", "_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction")
        positive: list[str] = []
        negative: list[str] = []
        if toggle:
            for s in strings:
                (positive if vars(top.parse_args(["serve", "m", s]))[action.dest] else negative).append(s)
        default = baseline.get(action.dest, action.default)
        entry: dict[str, Any] = {
            "name": next((s for s in strings if s.startswith("--")), strings[0]),
            "option_strings": strings,
            "visible_option_strings": visible,
            "hidden_option_strings": [s for s in strings if s not in visible],
            "long_options": [s for s in strings if s.startswith("--")],
            "short_options": [s for s in strings if not s.startswith("--")],
            "dest": action.dest,
            "group": titles.get(id(action)),
            "action": type(action).__name__,
            "value_kind": value_kind(action, tname, toggle),
            "type": tname,
            "nullable": bool(tname and tname.startswith("optional[")),
            "takes_value": action.nargs != 0,
            "optional_value": action.nargs == "?",
            "multiple_values": action.nargs in ("+", "*"),
            "nargs": action.nargs,
            "choices": jsonable(list(action.choices)) if action.choices is not None else None,
            "metavar": jsonable(action.metavar),
            "suggested_values": jsonable(list(action.metavar)) if isinstance(action.metavar, (list, tuple)) else None,
            "default": jsonable(default),
            "required": action.required,
            "deprecated": bool(getattr(action, "deprecated", False)) or action.dest == "model",
            "hidden": action.help == argparse.SUPPRESS,
        }
        if toggle:
            entry["positive_option_strings"] = positive
            entry["negative_option_strings"] = negative
        if action.nargs == "?":
            entry["const"] = jsonable(action.const)
        if action.dest == "quantization":
            # vLLM validates --quantization against this registry after parsing (plugins may add to it).
            from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

            entry["suggested_values"] = sorted(QUANTIZATION_METHODS)
        out.append(entry)
    return sorted(out, key=lambda e: e["name"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=".", help="directory for vllm-<version>-serve-options.json")
    args = ap.parse_args()
    version = importlib.metadata.version("vllm").split("+")[0]
    top, serve = build_serve_parser(["serve", "m"])
    from vllm.platforms import current_platform

    options = describe(top, serve)
    doc = {
        "vllm_version": version,
        "generated_by": "scripts/gen_vllm_options.py: vLLM's own CLI main() built the parser (argv `vllm serve m`), "
        "the `serve` sub-parser's actions were walked; toggles were read by parsing each option string.",
        "method": {"python_version": sys.version.split()[0], "platform": current_platform.device_type,
                   "distribution_version": importlib.metadata.version("vllm")},
        "counts": {"actions": len(options), "option_strings_accepted": sum(len(o["option_strings"]) for o in options)},
        "positionals": [{"name": a.dest, "dest": a.dest, "nargs": a.nargs} for a in serve._actions
                        if not a.option_strings],
        "options": options,
    }
    path = Path(args.output) / f"vllm-{version}-serve-options.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}: {len(options)} options, {doc['counts']['option_strings_accepted']} option strings",
          file=sys.stderr)


if __name__ == "__main__":
    main()
