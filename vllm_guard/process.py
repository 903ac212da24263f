"""The only module that uses subprocess and signals: start vLLM, relay its output, stop its whole group.

vLLM 0.33 starts an EngineCore child (and TP workers) with no parent-death watch
(vllm-reference §5), so a killed `vllm serve` can leave VLLM::EngineCore holding
VRAM. Hence: a new session per attempt (one process group to signal), SIGTERM to
the group then SIGKILL after a grace period, PR_SET_PDEATHSIG(SIGTERM) on the
child so a SIGKILLed guard still stops vLLM, and the guard as a child subreaper
so orphaned engines are re-parented to it and can be stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from types import FrameType

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36
TAIL_LINES = 4000

# Runs in the child between fork and exec of vLLM: ask the kernel for SIGTERM when the guard
# dies, then make sure the guard did not die before that (the race the man page warns about).
_PDEATHSIG_SHIM = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(143)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)

LineSink = Callable[[bytes, str], None]  # (raw line, "stdout" | "stderr")


def set_child_subreaper() -> bool:
    """Become the reaper of orphaned descendants (Linux 3.4+); False where not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class Child:
    """A started vLLM: its pid and process group, its output relayed line by line, a bounded tail kept."""

    def __init__(self, popen: subprocess.Popen[bytes], sink: LineSink) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._sink = sink
        self._threads = [
            threading.Thread(target=self._pump, args=(popen.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._pump, args=(popen.stderr, "stderr"), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _pump(self, stream: object, name: str) -> None:
        assert stream is not None
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            self.tail.append(raw.decode(errors="replace").rstrip("\n"))
            self._sink(raw, name)
        stream.close()  # type: ignore[attr-defined]

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def stop(self, grace_s: float) -> int:
        """SIGTERM to the whole group, SIGKILL to whatever is left after ``grace_s``; returns the exit status."""
        self.signal_group(signal.SIGTERM)
        code = self.wait(grace_s)
        # Engine processes may outlive the API server: the group is killed whatever the parent did.
        self.signal_group(signal.SIGKILL)
        if code is None:
            code = self.popen.wait()
        self.join_output(2.0)
        return code

    def join_output(self, timeout_s: float) -> None:
        for t in self._threads:
            t.join(timeout_s)


def spawn(argv: Sequence[str], env: Mapping[str, str], sink: LineSink) -> Child:
    """Start vLLM in a new session with the parent-death signal set.

    Raises:
        FileNotFoundError: the executable does not exist.
    """
    shim = [sys.executable, "-c", _PDEATHSIG_SHIM, str(os.getpid()), *argv]
    popen = subprocess.Popen(
        shim if sys.platform.startswith("linux") else list(argv),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    return Child(popen, sink)


def exec_replace(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Replace the guard by vLLM (guard.mode = "exec"): no supervision, no ladder."""
    os.execvpe(argv[0], list(argv), dict(env))


def stop_orphans(pids: Sequence[int], grace_s: float = 5.0) -> None:
    """Stop processes re-parented to us (we are their subreaper) and reap them."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                alive.append(pid)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 2.0)
        while alive and time.monotonic() < deadline:
            alive = [pid for pid in alive if not _reaped(pid)]
            if alive:
                time.sleep(0.05)
        if not alive:
            return


def reap(pids: Sequence[int]) -> None:
    """Collect the exit status of these exited children; never waitpid(-1), which could take vLLM's own."""
    for pid in pids:
        _reaped(pid)


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # not our child (any more)
    return done == pid


StopHandler = Callable[[int], None]


def on_stop_signals(handler: StopHandler) -> Callable[[], None]:
    """Route SIGTERM, SIGINT and SIGHUP to ``handler(signum)``; returns a function that restores the old ones."""
    previous = {}

    def handle(signum: int, frame: FrameType | None) -> None:
        handler(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        previous[sig] = signal.signal(sig, handle)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


SIGTERM, SIGINT, SIGKILL, SIGHUP = int(signal.SIGTERM), int(signal.SIGINT), int(signal.SIGKILL), int(signal.SIGHUP)
