"""GPU and host facts: a fake NVML namespace at the boundary, real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import MACHINES, run_cli
from tests.fake_nvml import GIB, MIB, NOT_SUPPORTED, Device, FakeNvml, NVMLError_LibraryNotFound, a100, l4
from vllm_guard.facts.machine import Machine
from vllm_guard.probes import load_machine, probe_machine
from vllm_guard.probes.gpu import probe_gpus
from vllm_guard.probes.host import gpu_process_info, is_orphaned_vllm
from vllm_guard.probes.ports import port_free
from vllm_guard.probes.procfs import cgroup_memory
from vllm_guard.probes.smi import parse


def test_one_idle_l4() -> None:
    fake = FakeNvml([l4()])
    m = probe_machine(environ={}, nvml=fake)
    assert m.source == "nvml" and m.driver_version == "580.95.05" and m.cuda_driver_version == "13.0"
    (g,) = m.gpus
    assert (g.name, g.compute_capability, g.mig_enabled, g.processes) == ("NVIDIA L4", (8, 9), False, ())
    assert g.memory_total_bytes == 23034 * MIB and g.memory_free_bytes == (23034 - 396) * MIB
    assert g.pci_bus_id == "00000000:01:00.0"
    assert fake.initialised == 0  # shut down again


def test_two_a100_with_a_foreign_process() -> None:
    me = os.getpid()
    fake = FakeNvml([a100(bus="00000000:07:00.0"), a100(bus="00000000:0F:00.0", procs=[(me, 30 * GIB)])])
    m = probe_machine(environ={}, nvml=fake)
    assert [g.index for g in m.gpus] == [0, 1]
    assert m.gpus[0].processes == ()
    (p,) = m.gpus[1].processes or ()
    assert p.pid == me and p.used_memory_bytes == 30 * GIB and not p.orphaned_vllm
    assert p.name and p.user  # resolved through psutil: this test's own process


def test_h100_with_mig_enabled_and_no_process_listing() -> None:
    fake = FakeNvml([Device("NVIDIA H100 80GB HBM3", 81559 * MIB, 0, (9, 0), mig=(1, 1), procs=NOT_SUPPORTED)])
    (g,) = probe_machine(environ={}, nvml=fake).gpus
    assert g.mig_enabled is True
    assert g.processes is None  # unknown, not "none"


def test_process_listing_not_supported_is_a_note() -> None:
    m = probe_machine(environ={}, nvml=FakeNvml([l4(procs=NOT_SUPPORTED, mig=NOT_SUPPORTED)]))
    assert m.gpus[0].processes is None
    assert m.gpus[0].mig_enabled is False  # a GPU without MIG support answers NotSupported
    assert any("processes" in n and "not supported" in n for n in m.notes)


def test_t4_compute_capability() -> None:
    (g,) = probe_machine(environ={}, nvml=FakeNvml([Device("Tesla T4", 15360 * MIB, 0, (7, 5))])).gpus
    assert g.compute_capability == (7, 5)


def test_nvml_library_missing_is_a_fact() -> None:
    m = probe_machine(environ={}, nvml=FakeNvml([], init_error=NVMLError_LibraryNotFound))
    assert m.source == "none" and m.gpus == ()
    assert m.notes == ("no NVIDIA driver: the NVML library (libnvidia-ml.so.1) was not found",)


def test_unified_memory_gpu() -> None:
    m = probe_machine(environ={}, nvml=FakeNvml([Device("NVIDIA GH200", 0, 0, (9, 0), memory=False)]))
    (g,) = m.gpus
    assert g.unified_memory and g.memory_total_bytes is None


def _orphan(title: str) -> int:
    """Start `sleep` titled like a vLLM engine, whose parent exits at once: a real orphan."""
    out = subprocess.run(
        ["bash", "-c", f"(exec -a {title} sleep 30 >/dev/null 2>&1 & echo $!)"],
        capture_output=True, text=True, check=True,
    )
    return int(out.stdout.strip())


def test_orphaned_engine_core_holding_memory() -> None:
    pid = _orphan("VLLM::EngineCore")
    try:
        time.sleep(0.1)
        m = probe_machine(environ={}, nvml=FakeNvml([l4(procs=[(pid, 15 * GIB)])]))
        (p,) = m.gpus[0].processes or ()
        assert p.name == "VLLM::EngineCore" and p.orphaned_vllm
    finally:
        os.kill(pid, 9)


def test_engine_core_with_live_parent_is_not_orphaned() -> None:
    child = subprocess.Popen(["bash", "-c", "exec -a VLLM::EngineCore sleep 30"])
    try:
        time.sleep(0.1)
        info = gpu_process_info(child.pid)
        assert info["name"] == "VLLM::EngineCore" and info["orphaned_vllm"] is False
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize(
    ("title", "ppid", "parent", "orphaned"),
    [("VLLM::EngineCore", 1, None, True), ("VLLM::EngineCor", 4242, "systemd", True),
     ("VLLM::Worker_TP0", 4242, "VLLM::EngineCor", False), ("VLLM::Worker_TP1", 1, None, True),
     ("VLLM::EngineCore", 4242, "python3", False), ("python3", 1, None, False),
     ("VLLM::EngineCore", 4242, "tini", True)],
)
def test_orphan_rule(title: str, ppid: int, parent: str | None, orphaned: bool) -> None:
    assert is_orphaned_vllm(title, ppid, parent) is orphaned


def _cgroup_tree(tmp_path: Path, proc_self_cgroup: str, files: dict[str, str]) -> tuple[str, str]:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(proc_self_cgroup)
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(proc), str(root)


def test_cgroup_v2_docker_memory_limit(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, "0::/\n", {"memory.max": "34359738368\n", "memory.current": "1073741824\n"})
    assert cgroup_memory(proc, root) == (32 * GIB, GIB)


def test_cgroup_v2_systemd_slice_limit_applies_to_children(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, "0::/system.slice/vllm.service\n", {
        "system.slice/memory.max": "17179869184\n",
        "system.slice/vllm.service/memory.max": "max\n",
        "system.slice/vllm.service/memory.current": "2147483648\n",
    })
    assert cgroup_memory(proc, root) == (16 * GIB, 2 * GIB)


def test_cgroup_v2_max_means_no_limit(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, "0::/user.slice\n", {"user.slice/memory.max": "max\n",
                                                             "user.slice/memory.current": "123\n"})
    assert cgroup_memory(proc, root) == (None, None)


def test_cgroup_v1(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n", {
        "memory/docker/abc/memory.limit_in_bytes": "8589934592\n",
        "memory/docker/abc/memory.usage_in_bytes": "536870912\n",
    })
    assert cgroup_memory(proc, root) == (8 * GIB, 512 * MIB)


def test_cgroup_v1_unlimited(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, "4:memory:/\n", {"memory/memory.limit_in_bytes": "9223372036854771712\n"})
    assert cgroup_memory(proc, root) == (None, None)


def test_port_free_by_binding() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert port_free("127.0.0.1", port) is False
    assert port_free("127.0.0.1", port) is True


SMI_GPUS = """\
0, GPU-2f1e7c3a-1111-2222-3333-444455556666, NVIDIA A10G, 00000000:00:1E.0, 23028, 18204, 4538, 8.6, [N/A], 570.86.15
1, GPU-9a8b7c6d-1111-2222-3333-444455556666, NVIDIA A10G, 00000000:00:1F.0, 23028, 1, 22741, 8.6, [N/A], 570.86.15
"""
SMI_APPS = "GPU-2f1e7c3a-1111-2222-3333-444455556666, 777777, python, 18190\n"


def test_nvidia_smi_csv_fallback() -> None:
    probe = parse(SMI_GPUS, SMI_APPS, None)
    assert probe.source == "nvidia-smi" and probe.driver_version == "570.86.15"
    g0, g1 = probe.gpus
    assert g0.memory_total_bytes == 23028 * MIB and g0.compute_capability == (8, 6) and g0.mig_enabled is False
    assert g0.processes and g0.processes[0].pid == 777777 and g0.processes[0].used_memory_bytes == 18190 * MIB
    assert g1.processes == ()


def test_nvidia_smi_fallback_runs_the_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVML library here, but an `nvidia-smi` on PATH: the probe falls back to it (real process)."""
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\ncase \"$1\" in --query-gpu*) printf '%s' '{SMI_GPUS}';; "
                    f"*) printf '%s' '{SMI_APPS}';; esac\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    probe = probe_gpus()
    assert probe.source == "nvidia-smi" and len(probe.gpus) == 2


def test_snapshot_round_trip(tmp_path: Path) -> None:
    m = probe_machine(environ={}, nvml=FakeNvml([a100(), a100(procs=[(os.getpid(), 5 * GIB)])]))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m.to_dict()))
    assert load_machine(path) == m


def test_example_machines_load() -> None:
    for path in MACHINES.glob("*.json"):
        assert isinstance(load_machine(path), Machine)


def test_snapshot_command_without_gpu(tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    r = run_cli("snapshot", "-o", str(out), env={"HOME": str(tmp_path)})
    assert r.code == 0, r.err
    assert "no NVIDIA driver" in r.out
    data = json.loads(out.read_text())
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    assert data["host"]["memory_total_bytes"] == int(meminfo["MemTotal"].split()[0]) * 1024
    st = os.statvfs("/dev/shm")
    assert data["host"]["shm_total_bytes"] == st.f_blocks * st.f_frsize  # what df shows as Size
    assert data["gpus"] == [] and data["source"] == "none"
    assert data["p2p"] is None  # no GPU: peer-to-peer unknown, never false
    r = run_cli("snapshot", "--json")
    assert json.loads(r.out)["schema"] == "vllm-guard.machine/1" and json.loads(r.out)["p2p"] is None


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("not json", "not JSON"), ("[]", "expected a JSON object"), ('{"schema": "other/1"}', "not a vllm-guard"),
     ('{"schema": "vllm-guard.machine/2"}', "refusing to misread"),
     ('{"schema": "vllm-guard.machine/1", "taken_at": "x", "source": "nvml", "gpus": [{"index": "0"}], "host": {}}',
      "gpus[0].index"),
     ('{"schema": "vllm-guard.machine/1", "taken_at": "x", "source": "nvml", "gpus": [], '
      '"host": {"memory_total_bytes": -1}}', "host.memory_total_bytes")],
)
def test_bad_snapshots_exit_3(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    r = run_cli("check", "--machine", str(path), "Qwen/Qwen3-0.6B")
    assert r.code == 3, r.out + r.err
    assert fragment in r.err and "Traceback" not in r.err


def test_check_uses_the_snapshots_gpus() -> None:
    r = run_cli("check", "profiles/llama-3.1-8b-l4.toml", "--machine", str(MACHINES / "l4-24gb.json"))
    assert "NVIDIA L4" in r.out and r.code == 0, r.out


@pytest.mark.gpu
def test_live_nvml_on_a_gpu_machine() -> None:
    """On a machine with a GPU (marked `gpu`): the real NVML probe sees it."""
    m = probe_machine(environ=dict(os.environ))
    if m.source == "none":
        pytest.skip("no NVIDIA driver here: " + "; ".join(m.notes))
    assert m.gpus and all(g.memory_total_bytes for g in m.gpus if not g.unified_memory)
    assert m.driver_version


