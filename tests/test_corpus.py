"""Real `vllm serve` command lines (tests/data/corpus/commands.json, each with its source): the guard
reads each exactly as vLLM's own parser does, and hands vLLM a command line it reads the same way.

The expected namespaces of vLLM 0.32 were written by scripts/gen_corpus_expected.py with vLLM 0.32's
real parser (which also checked that the guard's handed command line parses to the same namespace).
There is no vLLM 0.33 install to ask: against the 0.33 table the test can only hold the guard to its
own round trip and to the 0.32 answer wherever both releases know every option used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from vllm_guard.errors import GuardError
from vllm_guard.options.argv import ArgvProblem, CommandLine, namespace, parse_command_line
from vllm_guard.options.table import OptionTable, load_table
from vllm_guard.profile.vllm_config import read_config

CORPUS = Path(__file__).parent / "data" / "corpus"
ENTRIES = json.loads((CORPUS / "commands.json").read_text())["entries"]
EXPECTED_032 = json.loads((CORPUS / "expected-0.32.0.json").read_text())["expected"]
# vLLM validates the JSON of json[ConfigClass] options against its config classes while parsing;
# the guard checks that it is JSON, not each class's fields.
KNOWN_GAPS = {"pd-consumer-underscores": "KVTransferConfig has no kv_producers_size (an old vLLM's field)"}


def test_corpus_is_real_and_big_enough() -> None:
    assert len(ENTRIES) >= 40
    assert all(e["source"] for e in ENTRIES)
    assert sum(1 for e in ENTRIES if e.get("configs")) >= 5
    assert set(EXPECTED_032) == {e["id"] for e in ENTRIES}


def parse(entry: dict[str, Any], table: OptionTable, tmp_path: Path, argv: list[str] | None = None) -> CommandLine:
    for name, text in entry.get("configs", {}).items():
        (tmp_path / name).write_text(text)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # vLLM reads --config relative to its working directory; so does the guard
    try:
        return parse_command_line(argv if argv is not None else entry["argv"], table, read_config=read_config)
    finally:
        os.chdir(cwd)


def same_value(guard: Any, vllm: Any) -> bool:
    if isinstance(guard, dict) and isinstance(vllm, dict):
        # json[ConfigClass]: vLLM holds the whole config object, the guard what was asked of it.
        return all(k in vllm and same_value(v, vllm[k]) for k, v in guard.items())
    if isinstance(vllm, bool) and isinstance(guard, str):
        return guard.lower() == str(vllm).lower()  # pydantic reads a dotted key's "True" as true
    return bool(guard == vllm)


def assert_same_namespace(guard: dict[str, Any], vllm: dict[str, Any], table: OptionTable) -> None:
    for dest in set(guard) | set(vllm):
        default = table.by_dest[dest].default if dest in table.by_dest else None
        g, v = guard.get(dest, default), vllm.get(dest, default)
        assert same_value(g, v), f"{dest}: guard {g!r}, vLLM {v!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_guard_reads_what_vllm_032_reads(entry: dict[str, Any], tmp_path: Path) -> None:
    table = load_table("0.32.0")
    expected = EXPECTED_032[entry["id"]]
    if entry["id"] in KNOWN_GAPS:
        pytest.xfail(KNOWN_GAPS[entry["id"]])
    if "error" in expected:
        with pytest.raises((ArgvProblem, GuardError)):
            parse(entry, table, tmp_path)
        return
    command = parse(entry, table, tmp_path)
    assert_same_namespace(namespace(command), expected["namespace"], table)
    # The command line the guard hands vLLM: vLLM 0.32 parsed this very list to the same namespace.
    assert command.argv() == expected["handed_argv"] and expected["handed_parses_same"]


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_handed_command_line_reads_the_same(entry: dict[str, Any], version: str, tmp_path: Path) -> None:
    table = load_table(version)
    try:
        command = parse(entry, table, tmp_path)
    except ArgvProblem as e:
        # Refused only for an option or a choice this release does not have (or vLLM 0.32 refused it too).
        assert ("unknown vLLM option" in str(e) or "not one of vLLM's choices" in str(e)
                or "error" in EXPECTED_032[entry["id"]]), e
        return
    again = parse(entry, table, tmp_path, command.argv())
    assert namespace(again) == namespace(command)
    expected = EXPECTED_032[entry["id"]]
    if "namespace" in expected and entry["id"] not in KNOWN_GAPS:
        # Both releases know every option used here: vLLM 0.32's answer holds for 0.33's table too.
        assert_same_namespace(namespace(command), expected["namespace"], table)
