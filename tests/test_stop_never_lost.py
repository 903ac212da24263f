"""A stop is never lost and nothing outlives a dead guard (issue 28, item 3): real guard, keeper, fake vLLM,
signals and sockets.

What the real engine taught (tests/real_vllm) and the fake does: the API server ignores SIGTERM while it starts,
and EngineCore has no parent-death watch, so only the keeper, its sentinel and vLLM's parent-death signal stop a
launch whose guard is gone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_serve import (
    Rig,
    fake_processes,
    gone_soon,
    no_leftovers,  # noqa: F401 (autouse: no fake vLLM outlives a test)
    subtree,
    wait_for_engine,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl, subreapers, /proc: Linux's")


def keeper_of(guard: subprocess.Popen[str]) -> int:
    keepers = [pid for pid in subtree(guard.pid) if b"vllm-guard-keeper" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(keepers) == 1, keepers
    return keepers[0]


@pytest.mark.parametrize("hostile", [False, True], ids=["vllm", "hostile-children"])
@pytest.mark.parametrize("when", ["starting", "serving"])
def test_sigkill_of_guard_and_keeper_together_leaves_nothing(tmp_path: Path, when: str, hostile: bool) -> None:
    """No process is left to stop the launch: vLLM's parent-death signal and the sentinel do it."""
    rig = Rig(tmp_path, load_s=5.0 if when == "starting" else 0.1, escapees=hostile, ignore_sigterm=hostile)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=60))
    if when == "serving":
        rig.wait_ready(guard)
    else:
        wait_for_engine(guard)
    if hostile:  # the escapees are told to the sentinel at the keeper's next sample (keeper.SAMPLE_S)
        time.sleep(2.5)
    keeper = keeper_of(guard)
    assert len(fake_processes()) >= 2
    os.kill(keeper, signal.SIGKILL)
    guard.kill()
    guard.communicate()
    assert gone_soon(10.0), fake_processes()


def shm_names() -> set[str]:
    """The fake vLLM's files in /dev/shm (FAKE_MARK after vLLM's prefixes), not another job's."""
    return {n for n in os.listdir("/dev/shm") if n.startswith(("psm_fk", "sem.mp-fk"))}


def test_sigkill_of_the_guard_while_vllm_loads_leaves_no_shared_memory(tmp_path: Path) -> None:
    """The keeper removes every segment the launch made: a semaphore whose creator maps it only under a temporary
    name, and a segment made after the SIGTERM (both left by the real tier's kill -9 while loading, once in five)."""
    before = shm_names()
    rig = Rig(tmp_path, load_s=30.0, shm_segments=True)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=60))
    wait_for_engine(guard)
    deadline = time.monotonic() + 10
    while len(shm_names() - before) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    made = shm_names() - before
    assert {n.split("_")[0].split("-")[0] for n in made} == {"psm", "sem.mp"}, made
    guard.kill()
    guard.communicate()
    assert gone_soon(10.0), fake_processes()
    deadline = time.monotonic() + 5  # the keeper removes them once the processes are gone
    while shm_names() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not shm_names() - before


def test_sigterm_then_sigkill_of_the_guard_stops_at_once_not_after_the_grace(tmp_path: Path) -> None:
    """Once stopping, the keeper still watches the guard: a vLLM deaf to SIGTERM, a 60 s grace, the guard killed
    while it waits: nothing is left within 10 s."""
    rig = Rig(tmp_path, ignore_sigterm=True)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=60))
    rig.wait_ready(guard)
    guard.send_signal(signal.SIGTERM)
    time.sleep(1.0)  # the keeper is in its grace now (vLLM ignores the SIGTERM)
    assert guard.poll() is None
    guard.kill()
    guard.communicate()
    assert gone_soon(10.0), fake_processes()


def test_a_sigterm_as_soon_as_the_guard_catches_it_is_exit_143(tmp_path: Path) -> None:
    """The early window is closed: the guard's first act routes SIGTERM (here it comes during the preflight)."""
    rig = Rig(tmp_path, load_s=5.0)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    deadline = time.monotonic() + 30
    while True:  # until SIGTERM is caught (SigCgt has bit 15), then at once
        caught = next((line for line in Path(f"/proc/{guard.pid}/status").read_text().splitlines()
                       if line.startswith("SigCgt:")), "SigCgt: 0")
        if int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
            break
        assert time.monotonic() < deadline and guard.poll() is None
    guard.send_signal(signal.SIGTERM)
    _out, err = guard.communicate(timeout=60)
    assert guard.returncode == 143, err
    assert "Traceback" not in err


def test_a_sigterm_while_the_first_handlers_are_installed_is_exit_143() -> None:
    """The race CI met once: SIGTERM caught after its own handler is in and before SIGINT's and SIGHUP's are, so
    StopSignalled rose inside raise_on_stop_signals (exit 1 and a traceback). The signal is sent at that moment:
    the stdlib's signal.signal is wrapped to send it right after SIGTERM's handler is installed."""
    code = (
        "import os, signal, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "real = signal.signal\n"
        "def install(sig, handler):\n"
        "    old = real(sig, handler)\n"
        "    if sig == signal.SIGTERM and callable(handler):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return old\n"
        "signal.signal = install\n"
        "from vllm_guard.cli.main import main\n"
        "sys.argv = ['vllm-guard', 'serve', '/nonexistent/profile.toml']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert "Traceback" not in done.stderr


def run_keeper() -> tuple[subprocess.Popen[bytes], socket.socket]:
    guard_end, keeper_end = socket.socketpair()
    code = "import sys; sys.path.insert(0, sys.argv[1]); from vllm_guard.launch.keeper import main; sys.exit(main())"
    keeper = subprocess.Popen([sys.executable, "-c", code, str(ROOT), "vllm-guard-keeper"], stdin=keeper_end.fileno(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    keeper_end.close()
    return keeper, guard_end


def replies(sock: socket.socket, timeout_s: float = 20.0) -> list[dict]:
    sock.settimeout(timeout_s)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def test_a_stop_in_the_same_recv_as_the_launch_starts_nothing(tmp_path: Path) -> None:
    """The keeper reads every message: a stop right behind the launch message (one recv) is acted on."""
    marker = tmp_path / "started"
    keeper, sock = run_keeper()
    launch = {"argv": ["sh", "-c", f"touch {marker}; sleep 60"], "env": {"PATH": os.defpath}, "grace_s": 30}
    sock.sendall(json.dumps(launch).encode() + b"\n" + json.dumps({"cmd": "stop", "grace_s": 30}).encode() + b"\n")
    answer = replies(sock)
    assert keeper.wait(20) == 0
    assert answer[-1]["stop"]["why"] == "stopped before vLLM started", answer
    assert not marker.exists()


def test_a_stop_soon_after_the_launch_ends_a_deaf_child_fast(tmp_path: Path) -> None:
    """A stop behind the launch but in a later recv: vLLM (here a shell that ignores SIGTERM) is stopped."""
    keeper, sock = run_keeper()
    launch = {"argv": ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"], "env": {"PATH": os.defpath},
              "grace_s": 1}
    sock.sendall(json.dumps(launch).encode() + b"\n")
    sock.settimeout(20)
    assert "pid" in json.loads(sock.recv(65536).splitlines()[0])
    sock.sendall(json.dumps({"cmd": "stop", "grace_s": 1}).encode() + b"\n")
    answer = replies(sock)
    assert keeper.wait(20) == 0
    assert answer[-1]["stop"]["sigkill"] >= 1, answer
