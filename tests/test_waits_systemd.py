"""A guard that waits for another's launch lock keeps systemd's start timeout extended and says it waits (issue 23,
item 2), over a real notify socket, with the lock held by another real process for many heartbeats.

The heartbeat is `guard.heartbeat-interval` (10 s by default), 0.3 s here, so the test takes seconds, not minutes.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_serve import (
    Rig,
    no_leftovers,  # noqa: F401 (autouse: no fake vLLM outlives a test)
)
from tests.test_systemd import NotifySocket

L4_UUID = "GPU-00000000-example-nvidia-l4"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock, /proc/locks: Linux's")


def hold_lock(lock_dir: Path) -> subprocess.Popen[str]:
    code = ("import sys, time\nsys.path.insert(0, sys.argv[1])\nfrom pathlib import Path\n"
            "from vllm_guard.launch.lock import GpuLocks\n"
            "locks = GpuLocks(Path(sys.argv[2]), [sys.argv[3]], {'profile': 'other.toml'})\n"
            "assert locks.acquire(on_wait=lambda *a: None)\nprint('held', flush=True)\ntime.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(lock_dir), L4_UUID], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_guard_waiting_for_a_held_launch_lock_keeps_extending_and_says_so(tmp_path: Path) -> None:
    address = str(tmp_path / "notify.sock")
    listener = NotifySocket(address)
    rig = Rig(tmp_path, weights_gib=1.2, load_s=0.2)
    listener.port = rig.port
    holder = hold_lock(tmp_path / "locks")
    guard = rig.start(rig.profile("max-model-len = 8192", extra="heartbeat-interval = 0.3"),
                      env={"NOTIFY_SOCKET": address})
    try:
        deadline = time.monotonic() + 60
        while sum("EXTEND_TIMEOUT_USEC" in m and "waiting for" in m for _, m in listener.messages) < 6:
            assert guard.poll() is None and time.monotonic() < deadline, guard.communicate()
            time.sleep(0.1)
        holder.kill()  # the other start is done: its lock goes with it
        holder.wait()
        rig.wait_ready(guard)
        guard.send_signal(signal.SIGTERM)
        _out, err = guard.communicate(timeout=30)
        time.sleep(0.3)
    finally:
        listener.close()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert guard.returncode == 143, err
    waits = [m for _, m in listener.messages if "waiting for" in m]
    assert len(waits) >= 6
    assert all("EXTEND_TIMEOUT_USEC=" in m for m in waits)  # each heartbeat extends the start timeout
    status = [line for m in waits for line in m.split("\n") if line.startswith("STATUS=")]
    assert all(s.startswith(f"STATUS=waiting for GPU 0's launch lock, held by pid {holder.pid} ") for s in status), \
        status
    assert re.search(r" for \d+s$", status[-1]), status[-1]
    assert listener.fields("READY") == ["1"]
    (start,) = [r for r in rig.records() if r.get("outcome") == "ready"]
    (waited,) = start["waited"]
    assert waited["for"].endswith("launch lock") and f"pid {holder.pid}" in waited["detail"]
    assert waited["seconds"] > 0
    assert f"held by pid {holder.pid}" in err
    assert json.loads(json.dumps(start))["waited"] == start["waited"]

