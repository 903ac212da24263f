"""`vllm-guard serve` on a shared host, end to end with the fake vLLM: secrets out of `ps`, and an
attempt log that cannot be written never takes a ready vLLM down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import MACHINES, ROOT, free_port
from tests.conftest import wait_healthy as conftest_wait_healthy

FAKE = ROOT / "tests" / "fake_vllm.py"
L4 = str(MACHINES / "l4-24gb.json")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and process groups are Linux's")


def start_guard(tmp: Path, vllm_conf: str, log: Path | str) -> tuple[subprocess.Popen[str], int]:
    gpu = tmp / "gpu.json"
    gpu.write_text(json.dumps({"total_gib": 22.49, "weights_gib": 1.2, "load_s": 0.1}))
    vllm = tmp / "bin" / "vllm"
    vllm.parent.mkdir(exist_ok=True)
    vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    vllm.chmod(0o755)
    port = free_port()
    profile = tmp / "p.toml"
    profile.write_text(f'[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nport = {port}\nhost = "127.0.0.1"\n'
                       f"max-model-len = 8192\n{vllm_conf}\n[guard]\nstop-timeout = 5\n")
    env = {"PATH": f"{vllm.parent}:/usr/bin:/bin", "HOME": str(tmp), "HF_HUB_OFFLINE": "1",
           "FAKE_VLLM_GPU": str(gpu), "VLLMGUARD_ATTEMPT_LOG": str(log), "VLLMGUARD_LOCK_DIR": str(tmp / "locks"),
           "PYTHONPATH": str(ROOT)}
    guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", L4, str(profile)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
    return guard, port


def wait_healthy(guard: subprocess.Popen[str], port: int, timeout: float = 40) -> None:
    def alive() -> None:
        assert guard.poll() is None, guard.communicate()

    conftest_wait_healthy(port, alive, timeout)


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop(guard: subprocess.Popen[str]) -> tuple[str, str]:
    guard.send_signal(signal.SIGTERM)
    out, err = guard.communicate(timeout=40)
    assert guard.returncode == 143, err
    return out, err


def test_secrets_are_not_in_any_command_line_of_vllm(tmp_path: Path) -> None:
    key, token = "sk-ps-visible-secret", "hf_ps_visible_secret"
    guard, port = start_guard(tmp_path, f'api-key = "{key}"\nhf-token = "{token}"', tmp_path / "state" / "a.jsonl")
    try:
        wait_healthy(guard, port)
        pids = [guard.pid, *descendants(guard.pid)]
        assert len(pids) >= 3  # the guard, vLLM's API server, its EngineCore
        for pid in pids:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()  # what `ps` shows to every local user
            assert key.encode() not in cmdline and token.encode() not in cmdline, cmdline
        server = next(p for p in pids[1:] if b"fake_vllm.py" in Path(f"/proc/{p}/cmdline").read_bytes())
        environ = Path(f"/proc/{server}/environ").read_bytes().split(b"\0")  # readable by its owner only
        assert f"VLLM_API_KEY={key}".encode() in environ and f"HF_TOKEN={token}".encode() in environ
    finally:
        _, err = stop(guard)
    log = (tmp_path / "state" / "a.jsonl").read_text()
    assert key not in log + err and token not in log + err


@pytest.mark.parametrize("kind", ["directory", "dev_full", "fifo", "symlink", "not_a_directory"])
def test_an_attempt_log_that_cannot_be_written_never_stops_a_ready_vllm(tmp_path: Path, kind: str) -> None:
    log: Path = tmp_path / "attempts.jsonl"
    if kind == "directory":
        log.mkdir()
    elif kind == "dev_full":
        log = Path("/dev/full")
    elif kind == "fifo":
        os.mkfifo(log)  # nobody reads it: opening it for writing must not block the guard
    elif kind == "symlink":
        log.symlink_to(tmp_path / "elsewhere")
    else:
        (tmp_path / "file").write_text("")
        log = tmp_path / "file" / "attempts.jsonl"
    guard, port = start_guard(tmp_path, "", log)
    wait_healthy(guard, port)
    time.sleep(1.5)  # the ready record has been tried by now
    assert guard.poll() is None, guard.communicate()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
        assert r.status == 200
    _, err = stop(guard)  # and SIGTERM still works
    assert err.count("cannot write the attempt log") == 1, err
