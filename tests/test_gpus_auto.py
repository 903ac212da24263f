"""guard.gpus = "auto": the idlest GPUs the layout needs, chosen under the launch locks (issue 14).

Real guards, the fake vLLM and machine snapshots for the GPU facts; the race between two
guards is settled by real flocks in a shared lock directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import MACHINES
from tests.test_serve import Rig, no_leftovers  # noqa: F401 (the fixture checks for leftover processes)
from vllm_guard.errors import UsageError
from vllm_guard.facts.machine import GpuProcess
from vllm_guard.launch.lock import GpuLocks
from vllm_guard.probes import load_machine
from vllm_guard.probes.select import select_gpus
from vllm_guard.profile.load import apply_environment, load_profile
from vllm_guard.profile.settings import AUTO_GPUS, parse_gpus

GIB = 2**30
A100X2 = MACHINES / "a100-80gb-x2.json"


def two_a100(tmp: Path, *, busy: tuple[int, ...] = (), name: str = "m.json") -> Path:
    """The two-A100 snapshot with 60 GiB held by another process on each GPU in ``busy``."""
    doc = json.loads(A100X2.read_text())
    for g in doc["gpus"]:
        if g["index"] in busy:
            g["processes"] = [{"pid": 4242 + g["index"], "name": "python3", "user": "alice",
                               "used_memory_bytes": 60 * GIB}]
            g["memory_used_bytes"] += 60 * GIB
            g["memory_free_bytes"] -= 60 * GIB
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


# --- the choice itself: pure -------------------------------------------------------------------------


def test_auto_takes_the_idle_gpu_and_says_why(tmp_path: Path) -> None:
    gpus = load_machine(two_a100(tmp_path, busy=(0,))).gpus
    chosen, visible, notes = select_gpus(gpus, AUTO_GPUS, None, 1)
    assert [g.index for g in chosen] == [1] and visible == "1"
    assert "takes GPU 1 (no processes" in notes[0] and "passed over: GPU 0 (1 process" in notes[0]


def test_auto_prefers_no_processes_over_more_free_memory(tmp_path: Path) -> None:
    from dataclasses import replace

    g0, g1 = load_machine(two_a100(tmp_path)).gpus
    # GPU 0: a small process but more free memory; GPU 1: no process, a little less free.
    g0 = replace(g0, processes=(GpuProcess(1, "python3", "bob", GIB),))
    g1 = replace(g1, memory_free_bytes=(g1.memory_free_bytes or 0) - 4 * GIB)
    assert [g.index for g in select_gpus((g0, g1), AUTO_GPUS, None, 1)[0]] == [1]
    # Two needed: both, in CUDA's (index) order.
    assert [g.index for g in select_gpus((g0, g1), AUTO_GPUS, None, 2)[0]] == [0, 1]


def test_auto_chooses_among_the_inherited_cuda_visible_devices(tmp_path: Path) -> None:
    gpus = load_machine(two_a100(tmp_path, busy=(1,))).gpus
    chosen, visible, _ = select_gpus(gpus, AUTO_GPUS, "1", 1)
    assert [g.index for g in chosen] == [1] and visible == "1"  # GPU 0 is idle, but not ours to take


@pytest.mark.parametrize(("value", "expected"), [
    ("auto", AUTO_GPUS), ("AUTO", AUTO_GPUS), ("0,1", (0, 1)), ("1", (1,)), ([0, 1], (0, 1)),
    ("GPU-abc,GPU-def", ("GPU-abc", "GPU-def")), (2, (2,)),
])
def test_gpus_spellings(value: object, expected: object) -> None:
    assert parse_gpus(value) == expected


def test_gpus_from_profile_and_environment(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text('[model]\nid = "meta-llama/Llama-3.1-8B-Instruct"\n[guard]\ngpus = "auto"\n')
    assert load_profile(p).setting("gpus") == AUTO_GPUS
    p.write_text('[model]\nid = "meta-llama/Llama-3.1-8B-Instruct"\n[guard]\ngpus = "0,1"\n')
    assert load_profile(p).setting("gpus") == (0, 1)
    assert load_profile(p, environ={"VLLMGUARD_GPUS": "auto"}).setting("gpus") == AUTO_GPUS
    with pytest.raises(UsageError, match="VLLMGUARD_GPUS"):
        apply_environment(load_profile(p), {"VLLMGUARD_GPUS": ",,"})


# --- the locks: two processes choosing at once ------------------------------------------------------------


CHOOSER = """
import json, sys, time
from pathlib import Path
from vllm_guard.launch.lock import GpuLocks
locks = GpuLocks.idlest(Path(sys.argv[1]), lambda: ["GPU-a", "GPU-b"], 1, on_wait=lambda why: None)
print(json.dumps(locks.uuids), flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_two_choosers_at_once_take_one_gpu_each(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", CHOOSER, str(tmp_path), "2"], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    taken = sorted(json.loads(p.stdout.readline())[0] for p in procs if p.stdout is not None)
    for p in procs:
        p.wait(10)
    assert taken == ["GPU-a", "GPU-b"]


def test_a_third_chooser_waits_and_takes_the_first_lock_let_go(tmp_path: Path) -> None:
    held = [GpuLocks(tmp_path, [u]) for u in ("GPU-a", "GPU-b")]
    for locks in held:
        assert locks.acquire(on_wait=lambda *_: None)
    told: list[str] = []
    rounds = iter(range(100))

    def release_b_later() -> bool:
        if next(rounds) == 2:
            held[1].release()
        return False

    got = GpuLocks.idlest(tmp_path, lambda: ["GPU-a", "GPU-b"], 1, on_wait=told.append, poll_s=0.01,
                          should_stop=release_b_later)
    assert got is not None and got.uuids == ["GPU-b"]
    assert len(told) == 1 and "locks of the others are held" in told[0]
    got.release()
    held[0].release()
    assert GpuLocks.idlest(tmp_path, lambda: ["GPU-a"], 1, on_wait=told.append, should_stop=lambda: True) is not None


# --- serve: the real guard, the fake vLLM -------------------------------------------------------------------


def auto_rig(tmp: Path, busy: tuple[int, ...], load_s: float = 0.1) -> tuple[Rig, Path]:
    rig = Rig(tmp, total_gib=79.15, load_s=load_s)
    return rig, two_a100(tmp, busy=busy)


def test_check_and_dry_run_say_which_gpu_auto_takes(tmp_path: Path) -> None:
    rig, machine = auto_rig(tmp_path, busy=(0,))
    profile = rig.profile("max-model-len = 8192", extra='gpus = "auto"')
    dry = subprocess.run([sys.executable, "-m", "vllm_guard", "serve", "--dry-run", "--machine", str(machine),
                          profile], env=rig.env, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "takes GPU 1" in " ".join(dry.stdout.split())
    assert "CUDA_VISIBLE_DEVICES=1" in dry.stdout
    proc = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--json", "--machine", str(machine),
                           profile], env=rig.env, capture_output=True, text=True, timeout=60)
    doc = json.loads(proc.stdout)
    assert any('"auto" takes GPU 1' in n for n in doc["notes"]), doc["notes"]


def test_serve_auto_starts_on_the_idle_second_gpu(tmp_path: Path) -> None:
    rig, machine = auto_rig(tmp_path, busy=(0,))
    profile = rig.profile("max-model-len = 8192", extra='gpus = "auto"')
    guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", str(machine), profile],
                             env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        rig.wait_ready(guard)
    finally:
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=30)
    ready = [r for r in rig.records() if r.get("outcome") == "ready"]
    assert ready and ready[0]["gpus"] == [1], rig.records()
    assert "takes GPU 1" in ready[0]["gpu_choice"]
    assert "takes GPU 1" in err


def test_two_guards_with_auto_on_two_idle_gpus_take_one_each(tmp_path: Path) -> None:
    rigs, guards = [], []
    shared_locks = tmp_path / "locks"
    for n in range(2):
        d = tmp_path / f"g{n}"
        d.mkdir()
        rig, machine = auto_rig(d, busy=(), load_s=3)
        rig.env["VLLMGUARD_LOCK_DIR"] = str(shared_locks)
        profile = rig.profile("max-model-len = 8192", extra='gpus = "auto"')
        rigs.append(rig)
        guards.append(subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", str(machine),
                                        profile], env=rig.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, cwd=d))
    try:
        for rig, guard in zip(rigs, guards, strict=True):
            rig.wait_ready(guard, timeout=60)
    finally:
        for guard in guards:
            guard.send_signal(signal.SIGTERM)
        for guard in guards:
            guard.wait(30)
    taken = sorted(next(r for r in rig.records() if r.get("outcome") == "ready")["gpus"][0] for rig in rigs)
    assert taken == [0, 1]


def check_json(machine: Path, *args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--json", "--machine", str(machine), *args],
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
                               "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def test_a_fixed_busy_gpu_gets_the_idle_one_as_its_fix_and_the_fix_passes(tmp_path: Path) -> None:
    machine = two_a100(tmp_path, busy=(0,))
    model = ["meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "16384", "--gpu-memory-utilization", "0.9"]
    code, doc = check_json(machine, "--gpus", "0", *model)
    assert code == 4 and doc["fix"] == {"vllm": {}, "guard": {"gpus": [1]}}, doc["fix"]
    assert check_json(machine, "--gpus", "1", *model)[0] == 0
    code, doc = check_json(machine, "--gpus", "auto", *model)
    assert code == 0 and any('"auto" takes GPU 1' in n for n in doc["notes"])


def test_auto_takes_only_gpus_of_the_kind_the_preflight_judged(tmp_path: Path) -> None:
    """A mixed box: an L4 and an A100. The preflight chose the A100; while another guard holds its lock, the
    guard waits for it rather than starting on the L4, which no check was run on."""
    rig, _ = auto_rig(tmp_path, busy=())
    doc = json.loads(A100X2.read_text())
    l4 = json.loads((MACHINES / "l4-24gb.json").read_text())["gpus"][0]
    doc["gpus"][0] = {**l4, "index": 0, "uuid": "GPU-l4-0", "pci_bus_id": "00000000:01:00.0"}
    machine = tmp_path / "mixed.json"
    machine.write_text(json.dumps(doc))
    a100 = doc["gpus"][1]["uuid"]
    other = GpuLocks(tmp_path / "locks", [a100])
    assert other.acquire(on_wait=lambda *_: None)
    profile = rig.profile("max-model-len = 8192", extra='gpus = "auto"')
    guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", str(machine), profile],
                             env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        time.sleep(3)  # long enough to have started on the L4 (a start takes about 1 s here), if it would
        assert guard.poll() is None and not rig.log.exists(), "started before the A100's lock was free"
        other.release()
        rig.wait_ready(guard)
    finally:
        other.release()
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=30)
    ready = [r for r in rig.records() if r.get("outcome") == "ready"]
    assert ready and ready[0]["gpus"] == [1], rig.records()
    assert "waiting for GPUs" in err


def test_with_auto_a_relaxation_is_remembered_for_gpus_of_the_same_kind(tmp_path: Path) -> None:
    """ladder.remember keys on the GPUs; with "auto" the next start may take another GPU of the same kind."""
    rig = Rig(tmp_path, weights_gib=16.6)  # the fake's 22.49 GiB GPU: vLLM needs a shorter length than asked
    env = {**rig.env, "VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    profile = rig.profile("max-model-len = 32768", extra='gpus = "auto"')
    for busy, gpu in (((0,), 1), ((1,), 0)):
        machine = two_a100(tmp_path, busy=busy, name=f"busy{busy[0]}.json")
        before = len(rig.records()) if rig.log.exists() else 0
        guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", str(machine), profile],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            _wait_new_ready(rig, guard, before)
        finally:
            guard.send_signal(signal.SIGTERM)
            guard.communicate(timeout=30)
        run = [r for r in rig.records()[before:] if "phase" not in r]
        assert run[-1]["outcome"] == "ready" and run[-1]["gpus"] == [gpu]
    assert len(run) == 1 and run[0]["remembered"], "the start on the other A100 did not begin from what was learnt"


def _wait_new_ready(rig: Rig, guard: subprocess.Popen[str], before: int) -> None:
    """Until the attempt log has a ready record after its first ``before`` lines."""
    deadline = time.monotonic() + 60
    while not (rig.log.exists() and any(r.get("outcome") == "ready" for r in rig.records()[before:])):
        assert guard.poll() is None and time.monotonic() < deadline, guard.communicate()
        time.sleep(0.1)


def test_fewer_gpus_than_the_layout_needs_takes_them_all_at_once(tmp_path: Path) -> None:
    """A start forced past gpu.count (tensor parallel 4 on two GPUs): vLLM is to say what is missing; the
    guard must not wait forever for GPUs that do not exist."""
    told: list[str] = []
    got = GpuLocks.idlest(tmp_path, lambda: ["GPU-a", "GPU-b"], 4, on_wait=told.append, poll_s=0.01,
                          should_stop=lambda: True)
    assert got is not None and got.uuids == ["GPU-a", "GPU-b"] and told == []
    got.release()


@pytest.mark.parametrize("value", ["auto,0", ["auto"], [0, "AUTO"]])
def test_auto_stands_alone(value: object) -> None:
    from vllm_guard.options.values import ValueProblem

    with pytest.raises(ValueProblem, match="stands alone"):
        parse_gpus(value)
