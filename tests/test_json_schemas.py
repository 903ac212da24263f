"""Every --json document carries its schema, and matches the schema docs/json.md writes down for it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, L4, ROOT, run_cli
from vllm_guard import schemas
from vllm_guard.state import attempts

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
TYPES: dict[str, Any] = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float),
                         "boolean": bool, "null": type(None)}


def documented() -> dict[str, dict[str, Any]]:
    text = (ROOT / "docs" / "json.md").read_text()
    return {name: json.loads(body) for name, body in re.findall(r"```json schema=(\S+)\n(.*?)```", text, re.S)}


def problems(doc: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The subset of JSON Schema docs/json.md uses: type, const, enum, required, properties, items."""
    found = []
    if "const" in schema and doc != schema["const"]:
        found.append(f"{where}: {doc!r} is not {schema['const']!r}")
    if "enum" in schema and doc not in schema["enum"]:
        found.append(f"{where}: {doc!r} not in {schema['enum']}")
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(isinstance(doc, TYPES[k]) and not (k in ("integer", "number") and isinstance(doc, bool))
                 for k in kinds)
        if not ok:
            return [*found, f"{where}: {type(doc).__name__} is not {kinds}"]
    if isinstance(doc, dict):
        found += [f"{where}: no key {key!r}" for key in schema.get("required", []) if key not in doc]
        for key, sub in schema.get("properties", {}).items():
            if key in doc:
                found += problems(doc[key], sub, f"{where}.{key}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            found += problems(item, schema["items"], f"{where}[{i}]")
    return found


def test_every_schema_is_documented() -> None:
    assert set(documented()) == set(schemas.ALL)


def test_the_validator_catches_what_it_should() -> None:
    schema = documented()[schemas.ERROR]
    assert problems({"schema": schemas.ERROR, "error": "x", "hint": None, "exit": 3}, schema) == []
    assert problems({"schema": "other/1", "error": 1, "exit": True}, schema) == [
        "$: no key 'hint'", "$.schema: 'other/1' is not 'vllm-guard.error/1'", "$.error: int is not ['string']",
        "$.exit: bool is not ['integer']"]


def _attempt_log(tmp_path: Path) -> Path:
    log = tmp_path / "p.jsonl"
    attempts.append(log, {"profile": None, "model": MODEL, "attempt": 1, "started_at": "2026-11-30T10:00:00+00:00",
                          "duration_s": 3.5, "argv": ["vllm", "serve", MODEL], "changed": {}, "preflight": "forced",
                          "outcome": "ready", "failure": None, "exit": None, "next": None,
                          "reported": {"time_to_ready_s": 3.5}})
    return log


def cases(tmp_path: Path) -> list[tuple[str, list[str]]]:
    log = str(DATA / "logs" / "oom_cudagraph_after_kv_sizing.log")
    return [
        (schemas.CHECK, ["check", "--json", "--machine", L4, MODEL]),
        (schemas.DRY_RUN, ["serve", "--dry-run", "--json", "--machine", L4, MODEL, "--max-model-len", "4096"]),
        (schemas.EXPLAIN, ["explain", "--json", log]),
        (schemas.EXPLAIN, ["explain", "--json", "--all", log]),
        (schemas.INIT, ["init", "--json", "--machine", L4, MODEL]),
        (schemas.ATTEMPTS, ["attempts", "--json", str(_attempt_log(tmp_path))]),
        (schemas.CHECKS, ["checks", "--json"]),
        (schemas.MODELS, ["models", "--json"]),
        (schemas.PS, ["ps", "--json"]),
        (schemas.ERROR, ["check", "--json", "--machine", str(tmp_path), MODEL]),
        (schemas.ERROR, ["init", "--json", "--machine", L4, MODEL, "--context", "256K"]),
        (schemas.MACHINE, ["snapshot", "--json"]),
    ]


@pytest.mark.parametrize("index", range(12))
def test_documents_match_their_schema(index: int, tmp_path: Path) -> None:
    name, argv = cases(tmp_path)[index]
    r = run_cli(*argv, env={"HOME": str(tmp_path)})
    doc = json.loads(r.out)
    for one in doc if isinstance(doc, list) else [doc]:
        assert one["schema"] == name
        assert problems(one, documented()[name]) == [], argv
    if name == schemas.ATTEMPTS:
        assert doc["records"] and all(problems(rec, documented()[schemas.ATTEMPT]) == [] for rec in doc["records"])
    if name == schemas.ERROR:
        assert r.code == doc["exit"] != 0 and doc["error"] in r.err


def test_a_registry_entry_matches_its_schema(tmp_path: Path) -> None:
    from vllm_guard.state import registry

    entry = registry.Entry(guard_pid=4242, guard_started=1.5, profile="/p.toml", model=MODEL, state="relaxed",
                           since="2026-11-30T10:00:00+00:00", attempt=2, gpus=(1,), port=8000, keeper_pid=4243,
                           vllm_pid=4244)
    path = registry.path_for(tmp_path, 4242)
    assert registry.write_entry(path, entry) is None
    doc = json.loads(path.read_text())
    assert problems(doc, documented()[schemas.INSTANCE]) == []
    assert registry.read_entries(tmp_path)[0][0].vllm_pid == 4244
