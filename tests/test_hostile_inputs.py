"""Hostile values and files: NaN, infinity, zero, huge integers, deep nesting. Exit 2 or 3, never 1."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import L4, ROOT, run_cli

BASE = '[model]\nid = "Qwen/Qwen3-0.6B"\n'

PROFILES = {
    "startup-timeout nan": BASE + "[guard]\nstartup-timeout = nan\n",
    "stop-timeout inf": BASE + "[guard]\nstop-timeout = inf\n",
    "gpu-poll-interval nan": BASE + "[guard.ladder]\ngpu-poll-interval = nan\n",
    "host-ram-factor inf": BASE + "[guard.checks]\nhost-ram-factor = inf\n",
    "disk-headroom nan": BASE + "[guard.checks]\ndisk-headroom = nan\n",
    "cpu-offload-gb inf": BASE + "[vllm]\ncpu-offload-gb = inf\n",
    "gpu-memory-utilization nan": BASE + "[vllm]\ngpu-memory-utilization = nan\n",
    "tensor-parallel-size 0": BASE + "[vllm]\ntensor-parallel-size = 0\n",
    "max-model-len 0": BASE + "[vllm]\nmax-model-len = 0\n",
    "port 0": BASE + "[vllm]\nport = 0\n",
    "port 65536": BASE + "[vllm]\nport = 65536\n",
    "huge integer": BASE + "[vllm]\nmax-model-len = " + "9" * 5000 + "\n",
    "deep nesting": BASE + "[vllm]\nserved-model-name = " + "[" * 5000 + "]" * 5000 + "\n",
}


@pytest.mark.parametrize("name", list(PROFILES))
def test_a_hostile_profile_value_is_a_profile_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PROFILES[name])
    r = run_cli("check", "--machine", L4, str(path))
    assert r.code == 3, (name, r.err)
    assert "internal error" not in r.err


@pytest.mark.parametrize("args", [["--gpu-memory-utilization", "nan"], ["--cpu-offload-gb", "inf"], ["-tp", "0"],
                                  ["--max-model-len", "0"], ["--port", "0"], ["--port", "70000"],
                                  ["--max-model-len", "9" * 5000]])
def test_a_hostile_command_line_value_is_a_usage_error(args: list[str]) -> None:
    r = run_cli("check", "--machine", L4, "Qwen/Qwen3-0.6B", *args)
    assert r.code == 2, (args, r.err)


# --- machine snapshots, model ids and untrusted text on the way to the terminal --------------------------

def _snapshot(tmp_path: Path, **changes: object) -> str:
    """The L4 snapshot with some values replaced; keys are paths like "gpus.0.name"."""
    data = json.loads(Path(L4).read_text())
    for key, value in changes.items():
        *parents, last = key.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(data))
    return str(path)


SNAPSHOTS: dict[str, dict[str, object]] = {
    "total = free = 0": {"gpus.0.memory_total_bytes": 0, "gpus.0.memory_free_bytes": 0,
                         "gpus.0.memory_used_bytes": 0},
    "host total 0, unified GPU": {"gpus.0.unified_memory": True, "gpus.0.memory_total_bytes": None,
                                  "gpus.0.memory_free_bytes": None, "host.memory_total_bytes": 0,
                                  "host.memory_available_bytes": 0},
    "5,000-digit integer": {},  # written raw below: json.dumps cannot make one that json.loads reads
    "deep nesting": {},
}


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_a_hostile_snapshot_is_a_snapshot_error(tmp_path: Path, name: str) -> None:
    path = _snapshot(tmp_path, **SNAPSHOTS[name])  # type: ignore[arg-type]
    if name == "5,000-digit integer":
        Path(path).write_text(Path(L4).read_text().replace('"cpu_count": 16', '"cpu_count": ' + "9" * 5000))
    elif name == "deep nesting":
        Path(path).write_text(Path(L4).read_text().replace('"notes": []', '"notes": ' + "[" * 100000 + "]" * 100000))
    for argv in (["check", "--machine", path, "Qwen/Qwen3-0.6B"], ["init", "--machine", path, "Qwen/Qwen3-0.6B"]):
        r = run_cli(*argv)
        assert r.code == 3, (name, argv[0], r.err)
        assert "internal error" not in r.err and "hint:" in r.err


MARKUP = "[/][bold]x[/bold][link=http://evil]"


@pytest.mark.parametrize("where", ["disk path", "GPU name", "process", "hostname", "driver", "note"])
def test_rich_markup_in_a_snapshot_is_shown_as_text(tmp_path: Path, where: str) -> None:
    changes: dict[str, object] = {
        "disk path": {"host.disks.0.path": f"/{MARKUP}", "host.disks.0.free_bytes": 1},
        "GPU name": {"gpus.0.name": MARKUP, "gpus.0.compute_capability": [6, 0]},
        "process": {"gpus.0.memory_free_bytes": 10, "gpus.0.processes": [
            {"pid": 7, "name": MARKUP, "user": MARKUP, "used_memory_bytes": 10**10}]},
        "hostname": {"hostname": MARKUP},
        "driver": {"driver_version": MARKUP},
        "note": {"notes": [MARKUP]},
    }[where]  # type: ignore[assignment]
    path = _snapshot(tmp_path, **changes)  # type: ignore[arg-type]
    r = run_cli("check", "--machine", path, "Qwen/Qwen3-0.6B", "--dtype", "bfloat16",
                env={"HF_HUB_CACHE": f"/{MARKUP}/hub"})
    assert r.code in (0, 4), (where, r.err)
    if where in ("disk path", "GPU name", "process", "note"):
        assert MARKUP in r.out.replace("\n", "").replace("│", "").replace(" ", "") or MARKUP in r.out, r.out


def test_the_machine_table_shows_markup_and_control_characters_as_text(tmp_path: Path) -> None:
    from vllm_guard.facts.machine import Machine
    from vllm_guard.report.tables import print_machine

    hostile = MARKUP + "\x1b[2J\x07"
    data = json.loads(Path(L4).read_text())
    data["hostname"] = data["driver_version"] = hostile
    data["gpus"][0]["name"] = hostile
    data["gpus"][0]["processes"] = [{"pid": 7, "name": hostile, "user": hostile, "used_memory_bytes": 1}]
    out = io.StringIO()
    print_machine(Machine.from_dict(data), out)
    assert "[/]" in out.getvalue() and "[link=http://evil]" in out.getvalue()
    assert "\x1b[2J" not in out.getvalue() and "\x07" not in out.getvalue()


def _guard(*argv: str, stdin: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """The guard as a user runs it: a real process whose stdout is a UTF-8 pipe (strict, unlike a StringIO)."""
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "PYTHONPATH": str(ROOT),
           "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "vllm_guard", *argv], env=env, capture_output=True, timeout=120,
                          stdin=stdin)


def test_lone_surrogates_never_reach_the_terminal_as_an_encoding_error(tmp_path: Path) -> None:
    path = tmp_path / "machine.json"
    text = Path(L4).read_text().replace('"hostname": "l4-01"', '"hostname": "\\ud800"')
    path.write_text(text.replace('"notes": []', '"notes": ["\\udcff note"]').replace('"NVIDIA L4"', '"\\ud800"'))
    for argv in (["check", "--machine", str(path), "Qwen/Qwen3-0.6B"],
                 ["check", "--machine", str(path), "Qwen/Qwen3-0.6B", "--json"],
                 ["serve", "--dry-run", "--machine", str(path), "Qwen/Qwen3-0.6B"]):
        r = _guard(*argv)
        assert r.returncode == 0, (argv, r.stderr.decode())
    # A byte that is not UTF-8 on the command line becomes a lone surrogate inside Python.
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--machine", L4, b"org/model\xff"],
                       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                            "LC_ALL": "C.UTF-8"}, capture_output=True, timeout=120)
    assert r.returncode in (0, 4), r.stderr.decode()


@pytest.mark.parametrize("model", ["a" * 1_000_000, "org/" + "a" * 300, "/tmp/" + "a/" * 3000, "./" + "b" * 256])
def test_a_model_id_too_long_for_a_path_is_an_error_not_a_crash(tmp_path: Path, model: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "{model}"\n')
    for argv in (["check", "--machine", L4, str(path)], ["check", str(path)]):
        r = run_cli(*argv)
        assert r.code in (3, 4), (argv, r.err[:300])
        assert "internal error" not in r.err
    if len(model) > 4096:
        assert "characters" in r.err and r.code == 3


@pytest.mark.parametrize("vllm", ['download-dir = "/{long}"', 'uds = "/{long}"', 'host = "a\\u0000b"',
                                  'host = "{long}"'])
def test_impossible_paths_and_hosts_on_this_machine_are_not_a_crash(tmp_path: Path, vllm: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\n' + vllm.format(long="a" * 5000) + "\n")
    r = run_cli("check", str(path))  # live: the probes look at these paths and hosts on this machine
    assert r.code in (0, 2, 3, 4), r.err
    assert "internal error" not in r.err
