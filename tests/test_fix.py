"""One fix that fits as a whole: applying the fix `check` suggests makes `check` pass, or it says none exists.

Property over every example profile x example machine, and over generated shared machines (other processes
holding random amounts of each GPU); plus the shared-GPU cases of issue 14 as a table.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.conftest import MACHINES, ROOT, run_cli
from vllm_guard.facts.machine import GpuProcess, Machine
from vllm_guard.preflight.findings import FAIL
from vllm_guard.preflight.fix import Fix, checked, find_fix
from vllm_guard.preflight.memory import GIB
from vllm_guard.preflight.run import Preflight
from vllm_guard.probes import gather, load_machine
from vllm_guard.profile.load import load_profile

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENV = {"HF_HUB_OFFLINE": "1", "HOME": "/nonexistent-home"}
PROFILES = sorted((ROOT / "profiles").glob("*.toml"))
MACHINE_FILES = sorted(MACHINES.glob("*.json"))


TRIED: list[int] = []  # alternatives tried by the property, so that it is seen not to be vacuous


def write_machine(tmp_path: Path, m: Machine, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(m.to_dict()))
    return path


def shared(m: Machine, free_gib: dict[int, float]) -> Machine:
    """The machine with other processes holding all but ``free_gib`` of the named GPUs."""
    gpus = []
    for g in m.gpus:
        if g.index not in free_gib:
            gpus.append(g)
            continue
        free = int(free_gib[g.index] * GIB)
        used = (g.memory_total_bytes or 0) - free
        gpus.append(replace(g, memory_free_bytes=free, memory_used_bytes=used,
                            processes=(GpuProcess(pid=4242 + g.index, name="python3", user="someone",
                                                  used_memory_bytes=used),)))
    return replace(m, gpus=tuple(gpus))


def preflight_of(profile_path: Path, machine_path: Path) -> tuple[Preflight, Fix | None]:
    profile = load_profile(profile_path)
    facts = gather(profile, environ=ENV, machine_file=str(machine_path))
    pre = checked(profile, facts)
    return pre, find_fix(pre.profile, facts, pre)


def apply(profile_path: Path, fix: Fix, tmp_path: Path) -> Path:
    doc: dict[str, Any] = tomllib.loads(profile_path.read_text())
    doc.setdefault("vllm", {}).update(fix.vllm or {})
    if fix.guard:
        doc.setdefault("guard", {}).update(fix.guard)
    out = tmp_path / f"fixed-{profile_path.stem}.toml"
    out.write_text(tomli_w.dumps(doc))
    return out


def assert_alternatives_hold(pre: Preflight, profile_path: Path, machine_path: Path, tmp_path: Path) -> int:
    """Issue 23: each alternative a failed check prints mends it when applied alone; where it is the only
    failure, the profile then passes `check`. Returns how many alternatives were tried."""
    failing = [f for f in pre.findings if f.status == FAIL]
    tried = 0
    for finding in failing:
        for values, _ in finding.options:
            spelled = {dest.replace("_", "-"): v for dest, v in values.items()}
            after, _ = preflight_of(apply(profile_path, Fix(spelled), tmp_path), machine_path)
            still = {f.id for f in after.findings if f.status == FAIL}
            assert finding.id not in still, (finding.id, values, still)
            assert still <= {f.id for f in failing}, (values, still)
            if len(failing) == 1:
                assert after.verdict != FAIL, (values, still)
            tried += 1
    return tried


def assert_fix_holds(profile_path: Path, machine_path: Path, tmp_path: Path) -> Fix | None:
    pre, fix = preflight_of(profile_path, machine_path)
    if pre.verdict != FAIL:
        assert fix is None
        return None
    TRIED.append(assert_alternatives_hold(pre, profile_path, machine_path, tmp_path))
    assert fix is not None and fix.reason, "a failed check always says what fixes it, or why nothing does"
    if fix.exists:
        fixed, fixed_fix = preflight_of(apply(profile_path, fix, tmp_path), machine_path)
        failing = [(f.id, f.message) for f in fixed.findings if f.status == FAIL]
        assert fixed.verdict != FAIL, (fix, failing)
        assert fixed_fix is None
    else:
        assert "does not fit" in fix.reason or "no values" in fix.reason
    return fix


@pytest.mark.parametrize("machine_path", MACHINE_FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize("profile_path", PROFILES, ids=lambda p: p.stem)
def test_example_matrix(tmp_path: Path, profile_path: Path, machine_path: Path) -> None:
    assert_fix_holds(profile_path, machine_path, tmp_path)


@pytest.mark.parametrize("seed", range(64))
def test_generated_shared_scenarios(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    m = load_machine(rnd.choice(MACHINE_FILES))
    # Each GPU is idle, partly held, or nearly full.
    free = {g.index: rnd.choice([(g.memory_total_bytes or 0) / GIB * 0.98, rnd.uniform(1.0, 60.0), 0.5])
            for g in m.gpus}
    free = {i: min(f, (m.gpus[i].memory_total_bytes or 0) / GIB * 0.98) for i, f in free.items()}
    machine_path = write_machine(tmp_path, shared(m, free))
    assert_fix_holds(rnd.choice(PROFILES), machine_path, tmp_path)


def test_generated_scenarios_find_fixes_and_refusals(tmp_path: Path) -> None:
    """The property is not vacuous: the generated set has both fixes that exist and refusals."""
    kinds = set()
    for seed in range(64):
        rnd = random.Random(seed)
        m = load_machine(rnd.choice(MACHINE_FILES))
        free = {g.index: rnd.choice([(g.memory_total_bytes or 0) / GIB * 0.98, rnd.uniform(1.0, 60.0), 0.5])
                for g in m.gpus}
        free = {i: min(f, (m.gpus[i].memory_total_bytes or 0) / GIB * 0.98) for i, f in free.items()}
        fix = preflight_of(rnd.choice(PROFILES), write_machine(tmp_path, shared(m, free)))[1]
        kinds.add("none" if fix is None else "fix" if fix.exists else "refused")
    assert kinds == {"none", "fix", "refused"}
    assert sum(TRIED) > 0, "no verdict offered an alternative: the alternatives property would be vacuous"


def test_tensor_parallel_2_on_one_gpu_gets_a_fix_that_passes(tmp_path: Path) -> None:
    """Issue 23: it said "no values the guard can set mend gpu.count" though -tp 1 passes."""
    profile = tmp_path / "tp2.toml"
    profile.write_text(L4_PROFILE.read_text().replace("[vllm]", "[vllm]\ntensor-parallel-size = 2", 1))
    fix = assert_fix_holds(profile, MACHINES / "l4-24gb.json", tmp_path)
    assert fix is not None and fix.exists and (fix.vllm or {}).get("tensor-parallel-size") == 1


def test_two_gpus_of_a_box_that_sees_one_are_offered(tmp_path: Path) -> None:
    """Issue 23: on a two-GPU box with one GPU chosen, tensor parallel 2 is mended by choosing both."""
    profile = tmp_path / "tp2.toml"
    assert "[guard]" not in L4_PROFILE.read_text()
    profile.write_text(L4_PROFILE.read_text().replace("[vllm]", "[vllm]\ntensor-parallel-size = 2", 1)
                       + "\n[guard]\ngpus = [0]\n")
    fix = assert_fix_holds(profile, MACHINES / "a100-80gb-x2.json", tmp_path)
    assert fix is not None and fix.exists and fix.guard == {"gpus": [0, 1]}, fix


L4_PROFILE = ROOT / "profiles" / "llama-3.1-8b-l4.toml"


def test_shared_h100_gets_utilization_and_length_together(tmp_path: Path) -> None:
    """Issue 14: H100 80 GB with 18 GiB free. 0.21 alone fails the KV check; the fix carries both values."""
    h100 = load_machine(MACHINES / "h100-80gb-shared.json")
    machine_path = write_machine(tmp_path, shared(h100, {0: 18.0}))
    pre, _ = preflight_of(L4_PROFILE, machine_path)
    kv = next(f for f in pre.findings if f.id == "model.kv_fit")
    assert kv.status == FAIL  # judged at what is free, not at 0.92 x 80 GiB
    assert any("utilization 0.21" in n for n in pre.notes)
    fix = assert_fix_holds(L4_PROFILE, machine_path, tmp_path)
    assert fix is not None and fix.vllm is not None
    assert fix.vllm["gpu-memory-utilization"] == 0.21
    assert 3000 < fix.vllm["max-model-len"] < 16384
    r = run_cli("check", "--json", "--machine", str(machine_path), str(L4_PROFILE))
    assert r.code == 4
    doc = json.loads(r.out)
    assert doc["fix"] == {"vllm": fix.vllm, "guard": {}} and doc["fix_reason"]
    text = run_cli("check", "--machine", str(machine_path), str(L4_PROFILE)).out
    assert "one fix that passes every check" in " ".join(text.split())


def test_busy_gpu0_idle_gpu1_moves_to_gpu1(tmp_path: Path) -> None:
    """Issue 14: two A100s, GPU 0 busy, GPU 1 idle: the fix names GPU 1, not a utilization of 0.11."""
    a100 = load_machine(MACHINES / "a100-80gb-x2.json")
    machine_path = write_machine(tmp_path, shared(a100, {0: 9.0}))
    fix = assert_fix_holds(L4_PROFILE, machine_path, tmp_path)
    assert fix is not None and fix.guard == {"gpus": [1]} and fix.vllm == {}
    assert "GPU(s) 1 have the memory free" in fix.reason


def test_no_fix_says_what_would_be_needed(tmp_path: Path) -> None:
    """A full GPU: nothing fits now; the verdict says it would fit on an idle GPU, and how much memory."""
    l4 = load_machine(MACHINES / "l4-24gb.json")
    machine_path = write_machine(tmp_path, shared(l4, {0: 2.0}))
    fix = assert_fix_holds(L4_PROFILE, machine_path, tmp_path)
    assert fix is not None and not fix.exists
    assert "would fit on an idle GPU" in fix.reason and "GiB are free" in fix.reason
    r = run_cli("check", "--json", "--machine", str(machine_path), str(L4_PROFILE))
    doc = json.loads(r.out)
    assert r.code == 4 and doc["fix"] is None and "does not fit in what is free now" in doc["fix_reason"]


def test_a_failure_the_guard_cannot_mend_gets_no_values(tmp_path: Path) -> None:
    """Docker's 64 MiB /dev/shm: only the container's options mend it, never a value of the profile."""
    pre, fix = preflight_of(ROOT / "profiles" / "qwen2.5-32b-awq-tp2.toml", MACHINES / "docker-2x4090-64m-shm.json")
    assert pre.verdict == FAIL and fix is not None and not fix.exists and "host.shm" in fix.reason


def test_passing_check_has_no_fix() -> None:
    r = run_cli("check", "--json", "--machine", str(MACHINES / "l4-24gb.json"), str(L4_PROFILE))
    doc = json.loads(r.out)
    assert r.code == 0 and doc["fix"] is None and doc["fix_reason"] is None
