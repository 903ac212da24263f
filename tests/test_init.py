"""`vllm-guard init` writes a profile that passes `check` on the same machine, or refuses clearly."""

from __future__ import annotations

import json
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


def test_a_shared_gpu_gets_the_profile_checks_fix_describes_said_loudly(tmp_path: Path) -> None:
    """Issue 23: init refused ("the safe corridor is 0.85-0.92") where check's own fix (0.50) passes."""
    shared = str(MACHINES / "h100-80gb-shared.json")
    out = tmp_path / "p.toml"
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", shared, "-o", str(out))
    assert r.code == 0, r.err
    assert "warning: shared GPU" in r.err and "0.50" in r.err
    text = out.read_text()
    assert text.startswith("# WARNING: shared GPU") and "gpu-memory-utilization = 0.5\n" in text
    checked = run_cli("check", str(out), "--machine", shared)
    assert checked.code == 0, checked.out + checked.err


def test_refuses_a_gpu_others_fill(tmp_path: Path) -> None:
    m = json.loads((MACHINES / "h100-80gb-shared.json").read_text())
    m["gpus"][0]["memory_free_bytes"] = 2 * 2**30
    machine = tmp_path / "full.json"
    machine.write_text(json.dumps(m))
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", str(machine))
    assert r.code == 4 and "leave only 0.0" in r.err, r.err


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


A100X2 = MACHINES / "a100-80gb-x2.json"


def _busy_gpu0(tmp_path: Path, free_gib: float = 9.0) -> str:
    import json
    from dataclasses import replace

    from vllm_guard.facts.machine import GpuProcess
    from vllm_guard.probes import load_machine

    m = load_machine(A100X2)
    g = m.gpus[0]
    used = (g.memory_total_bytes or 0) - int(free_gib * 2**30)
    busy = replace(g, memory_free_bytes=int(free_gib * 2**30), memory_used_bytes=used,
                   processes=(GpuProcess(pid=999, name="python3", user="someone", used_memory_bytes=used),))
    path = tmp_path / "busy0.json"
    path.write_text(json.dumps(replace(m, gpus=(busy, *m.gpus[1:])).to_dict()))
    return str(path)


# (case, model, machine: None for the idle A100 pair or a free GiB on GPU 0, expected tp, guard.gpus)
TP_CASES = [
    ("one GPU is enough: tp stays 1", "meta-llama/Llama-3.1-8B-Instruct", None, None, None),
    ("70B needs both GPUs", "meta-llama/Llama-3.1-70B-Instruct", None, 2, None),
    ("GPU 0 busy: the idle GPU 1 alone", "meta-llama/Llama-3.1-8B-Instruct", 9.0, None, [1]),
]


@pytest.mark.parametrize(("case", "model", "gpu0_free_gib", "tp", "guard_gpus"), TP_CASES, ids=[c[0] for c in TP_CASES])
def test_init_uses_the_free_gpus(tmp_path: Path, case: str, model: str, gpu0_free_gib: float | None,
                                 tp: int | None, guard_gpus: list[int] | None) -> None:
    snapshot = str(A100X2) if gpu0_free_gib is None else _busy_gpu0(tmp_path, gpu0_free_gib)
    out = tmp_path / "fitted.toml"
    r = run_cli("init", model, "--machine", snapshot, "-o", str(out))
    assert r.code == 0, r.err
    doc = tomllib.loads(out.read_text())
    assert doc["vllm"].get("tensor-parallel-size") == tp
    assert doc.get("guard", {}).get("gpus") == guard_gpus
    if tp or guard_gpus:
        assert "free" in out.read_text().split("[model]")[0]  # the header says what it chose and why
    assert run_cli("check", "--machine", snapshot, str(out)).code == 0


def test_init_says_which_layouts_it_tried(tmp_path: Path) -> None:
    """70B with GPU 0 busy: one GPU is not enough and tp 2 has only one free GPU: refused, saying so."""
    r = run_cli("init", "meta-llama/Llama-3.1-70B-Instruct", "--machine", _busy_gpu0(tmp_path))
    assert r.code == 4 and "leave no room for a KV cache" in r.err and "Traceback" not in r.err
    r = run_cli("init", "meta-llama/Llama-3.1-70B-Instruct", "--machine", str(A100X2), "-tp", "1")
    assert r.code == 4, "an explicit -tp is kept"


def test_tp_sizes_that_split_the_heads() -> None:
    from dataclasses import replace

    from vllm_guard.preflight.generate import tp_splits
    from vllm_guard.probes.model import probe_model

    model = probe_model("meta-llama/Llama-2-13b-hf", revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir=None)
    assert [t for t in (2, 3, 4, 8) if tp_splits(model, t)] == [2, 4, 8]  # 40 heads, no GQA
    gqa = replace(model, num_attention_heads=28, num_kv_heads=4)
    assert [t for t in (2, 3, 4, 8) if tp_splits(gqa, t)] == [2, 4]


def test_refuses_users_below_the_ladder_floor_and_says_how_many_fit() -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--users", "1000")
    assert r.code == 4 and "max-model-len = " not in r.out
    assert "1,000 requests at once fit only below max-model-len 1,024" in r.err
    assert "users that fit here (with the KV relaxations init may use): 82 at 1,024 tokens" in r.err


def test_many_users_that_fit_at_a_useful_length_are_written() -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--users", "30")
    assert r.code == 0 and tomllib.loads(r.out)["vllm"]["max-model-len"] >= 1024


def test_context_beyond_the_models_maximum_names_the_limit() -> None:
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--context", "256K")
    assert r.code == 2
    assert "beyond meta-llama/Llama-3.1-8B-Instruct's own maximum of 131,072 tokens" in r.err


def test_no_gpu_says_to_plan_against_a_snapshot(tmp_path: Path) -> None:
    import json

    snap = json.loads(Path(L4).read_text())
    snap["gpus"] = []
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(snap))
    r = run_cli("init", "Qwen/Qwen3-0.6B", "--machine", str(path))
    assert r.code == 4 and "no GPU" in r.err and "--machine" in r.err


def test_a_profile_that_fails_a_host_check_says_so_and_exits_4(tmp_path: Path) -> None:
    import json

    snap = json.loads(Path(L4).read_text())
    snap["host"]["memory_available_bytes"] = 8 * 2**30  # below the weights: host.ram fails
    machine = tmp_path / "small-ram.json"
    machine.write_text(json.dumps(snap))
    out = tmp_path / "fitted.toml"
    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", str(machine), "-o", str(out))
    assert r.code == 4 and "fails host.ram here" in r.err
    text = out.read_text()
    assert text.startswith("# WARNING: this profile does not pass `vllm-guard check` here: host.ram:")
    check = run_cli("check", "--json", "--machine", str(machine), str(out))
    assert check.code == 4 and [c["id"] for c in json.loads(check.out)["checks"] if c["status"] == "fail"] == [
        "host.ram"]


def test_init_json_says_what_was_chosen_and_why(tmp_path: Path) -> None:
    import json

    r = run_cli("init", "meta-llama/Llama-3.1-8B-Instruct", "--machine", L4, "--json")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["schema"] == "vllm-guard.init/1" and doc["check"]["verdict"] == "pass"
    assert doc["values"]["vllm"] == tomllib.loads(doc["profile"])["vllm"]
    assert any(reason.startswith("max-model-len") for reason in doc["reasons"])
