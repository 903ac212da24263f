"""`vllm-guard init` writes a profile that passes `check` on the same machine, or refuses clearly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import MACHINES, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

L4 = str(MACHINES / "l4-24gb.json")


@pytest.mark.parametrize(
    ("model", "machine", "extra"),
    [("meta-llama/Llama-3.1-8B-Instruct", "l4-24gb", []),
     ("meta-llama/Llama-3.1-8B-Instruct", "l4-24gb", ["--users", "4"]),
     ("meta-llama/Llama-3.1-8B-Instruct", "l4-24gb", ["--context", "64K"]),
     ("Qwen/Qwen3-0.6B", "t4-16gb", ["--users", "8"]),
     ("Qwen/Qwen2.5-32B-Instruct-AWQ", "a100-80gb-x2", ["-tp", "2"]),
     ("meta-llama/Llama-3.1-70B-Instruct", "a100-80gb-x2", ["-tp", "2", "--users", "2"]),
     ("google/gemma-2-9b-it", "l4-24gb", []),
     ("deepseek-ai/DeepSeek-V2-Lite-Chat", "a100-80gb-x2", [])],
)
def test_init_then_check_passes(tmp_path: Path, model: str, machine: str, extra: list[str]) -> None:
    out = tmp_path / "fitted.toml"
    snapshot = str(MACHINES / f"{machine}.json")
    r = run_cli("init", model, "--machine", snapshot, "-o", str(out), *extra)
    assert r.code == 0, r.err
    text = out.read_text()
    assert text.startswith("# vLLM profile for " + model)
    assert "gpu-memory-utilization" in text.split("[model]")[0]  # the header says how it was chosen
    doc = tomllib.loads(text)
    assert 0.85 <= doc["vllm"]["gpu-memory-utilization"] <= 0.92
    check = run_cli("check", "--json", "--machine", snapshot, str(out))
    assert check.code == 0, check.out
    if "--users" in extra:
        import json

        kv = next(c for c in json.loads(check.out)["checks"] if c["id"] == "model.kv_fit")
        assert kv["status"] == "pass" and kv["measured"]["max_concurrency"] >= int(extra[extra.index("--users") + 1])


def test_fp8_only_where_the_gpu_runs_it(tmp_path: Path) -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--context", "64K")
    assert r.code == 0 and 'kv-cache-dtype = "fp8"' in r.out
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4)
    assert "kv-cache-dtype =" not in r.out and "enforce-eager" not in r.out.split("[vllm]")[1]


def test_refuses_a_context_that_cannot_fit() -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--context", "128K")
    assert r.code == 4 and "131072 tokens need" in r.err and "Traceback" not in r.err


def test_refuses_a_busy_gpu() -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", str(MACHINES / "h100-80gb-shared.json"))
    assert r.code == 4 and "0.85-0.92" in r.err and "0.50" in r.err


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "p.toml"
    out.write_text("keep me")
    r = run_cli("init", "Qwen/Qwen3-0.6B", "--machine", L4, "-o", str(out))
    assert r.code == 2 and out.read_text() == "keep me"
    assert run_cli("init", "Qwen/Qwen3-0.6B", "--machine", L4, "-o", str(out), "--force").code == 0
    assert out.read_text().startswith("#")


def test_unknown_model_and_bad_arguments() -> None:
    assert run_cli("init", "nobody/nothing", "--machine", L4).code == 4
    assert run_cli("init", "Qwen/Qwen3-0.6B", "--machine", L4, "--context", "lots").code == 2
    assert run_cli("init", "Qwen/Qwen3-0.6B", "--machine", L4, "-tp", "0").code == 2
