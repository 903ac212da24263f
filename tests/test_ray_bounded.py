"""Every call into Ray is bounded by a deadline the guard enforces, and a stop signal ends the wait (issue 28,
item 2). A port that accepts TCP connections and never answers once made `check` hang for over 400 s in Ray's
own retries, and `serve` then ended on SIGTERM with 15, not 143. Real guard processes, a real socket, real Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.foreign_server import SilentPort

TP2_RAY = '[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\ntensor-parallel-size = 2\ndistributed-executor-backend = "ray"\n'


@pytest.fixture
def mute() -> Iterator[SilentPort]:
    pytest.importorskip("ray")
    m = SilentPort(hold=True)
    yield m
    m.close()


def guard(tmp_path: Path, command: str, port: int) -> subprocess.Popen[str]:
    profile = tmp_path / "p.toml"
    profile.write_text(TP2_RAY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT), "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_TMPDIR": str(tmp_path / "ray"),
           "VLLMGUARD_LOCK_DIR": str(tmp_path / "locks"), "VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    return subprocess.Popen([sys.executable, "-m", "vllm_guard", command, str(profile)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_check_against_a_mute_ray_port_ends_with_exit_4_well_within_15_s(tmp_path: Path, mute: SilentPort) -> None:
    p = guard(tmp_path, "check", mute.port)
    try:
        _out, err = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 4, err
    assert "ray.init had no answer within" in err, err
    assert "Traceback" not in err


def test_serve_waiting_on_a_mute_ray_port_stops_on_sigterm_with_143(tmp_path: Path, mute: SilentPort) -> None:
    p = guard(tmp_path, "serve", mute.port)
    try:
        deadline = time.monotonic() + 60
        while not mute.held:  # the guard's TCP look, right before ray.init
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        time.sleep(1.0)  # inside ray.init's 10 s wait now (Ray itself dials the address it resolves, not this socket)
        assert p.poll() is None
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=5)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 143, err
    assert "Traceback" not in err
