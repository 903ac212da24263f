"""The keeper: the process between the guard and vLLM that lets nothing of a launch outlive the guard.

Why it exists is in process.py's docstring (the real engine ignores SIGTERM while it starts). What it does:

- It runs in a new session started by the guard, so its pid is the launch's process group, and it is a
  child subreaper: every descendant of vLLM, one that called setsid() or double-forked included, stays
  in its subtree and can be found and stopped.
- Its stdin is one end of a socketpair; only the guard holds the other. The guard sends the launch
  (argv, environment, stop grace), then ``ready`` and ``stop``. EOF means the guard is gone (SIGKILL, the
  OOM killer, a crash): the keeper then stops the tree at once, with a grace of at most
  ``GUARD_GONE_GRACE_S``, so that nothing is left within 10 seconds.
- It stops the tree also when the guard asks and when vLLM's main process exits on its own. Every message
  is read, also one that came in the same ``recv`` as another (a stop right behind the launch message was
  once dropped, and vLLM started anyway). While it stops the tree it still watches the socket: should the
  guard die then, whatever is left is killed at once, not after the grace.
- Should the keeper itself die with the guard (SIGKILL of both), vLLM's API server has SIGKILL as its
  parent-death signal and the sentinel, a small process in the launch's group, kills the rest
  (process.start_vllm, sentinel.py).
- Stopping: SIGTERM to every live descendant (also one that appears later). Before ready, vLLM's API
  server ignores that SIGTERM, so once no ``VLLM::`` engine process is left it is killed after
  ``SETTLE_S``; once ready, vLLM gets the whole grace for its graceful shutdown. After the grace,
  SIGKILL to whatever is left. Every exited process is reaped.
- Every SAMPLE_S, then every STOP_SAMPLE_S while it stops the tree and once more before SIGKILL, it notes
  which shared-memory files the launch holds; then it removes the launch's leftover shared-memory and
  rendezvous files (leftovers.py), reports vLLM's exit status to the guard, and exits.

It ignores SIGTERM, SIGINT and SIGHUP: those reach it only as members of vLLM's group.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

from vllm_guard.launch import leftovers, process, sentinel
from vllm_guard.probes import procfs
from vllm_guard.probes.host import descendants

POLL_S = 0.1
GUARD_GONE_GRACE_S = 3.0  # well inside the promise of nothing left within 10 s, on a loaded host too
# Before ready: how long a not-ready API server may take to exit by itself once its engine is gone.
SETTLE_S = 0.5
# After SIGKILL: how long to wait for processes in uninterruptible sleep before reporting them.
KILL_WAIT_S = 10.0
ENGINE_PREFIX = "VLLM::"
# How often the keeper notes which shared-memory files the launch holds (a few /proc reads of its processes).
SAMPLE_S = 2.0
# And while it stops the tree, when new segments come fastest; a look is a few ms of /proc reads.
STOP_SAMPLE_S = 0.25


class Keeper:
    def __init__(self, control: socket.socket, clock: Callable[[], float] = time.monotonic) -> None:
        self.control = control
        self.clock = clock
        self.buffer = b""
        self.ready = False
        self.main_pid: int | None = None
        self.main_status: int | None = None
        self.before: leftovers.Before | None = None
        self.held = leftovers.Held()  # the leftover-pattern files the launch was seen holding
        self.last_sample = 0.0
        self.pending: list[dict[str, Any]] = []  # read from the socket, not yet acted on
        self.guard_gone = False
        self.sentinel: tuple[int, int] | None = None  # (pid, write end)
        self.told: set[int] = set()  # escapees the sentinel knows of

    # --- talking to the guard --------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # the guard is gone; the keeper's work goes on
            self.control.sendall(json.dumps(message).encode() + b"\n")

    def receive(self, timeout_s: float) -> list[dict[str, Any]] | None:
        """Every message not yet acted on, waiting up to ``timeout_s`` for one; None once the guard is gone (EOF)
        and nothing is left to act on."""
        if not self.guard_gone and not self.pending:
            self._read(timeout_s)
        elif not self.guard_gone:
            self._read(0.0)
        messages, self.pending = self.pending, []
        if not messages and self.guard_gone:
            return None
        return messages

    def _read(self, timeout_s: float) -> None:
        readable, _, _ = select.select([self.control], [], [], timeout_s)
        if not readable:
            return
        try:
            data = self.control.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.guard_gone = True
            return
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    self.pending.append(message)

    # --- the tree ----------------------------------------------------------------------------------

    def reap(self) -> None:
        for pid, status in process.reap_any():
            if pid == self.main_pid:
                self.main_status = status

    def live(self) -> list[tuple[int, str]]:
        own = self.sentinel[0] if self.sentinel else None
        return [(pid, title) for pid, title in descendants(os.getpid()) if pid != own]

    def sample(self) -> None:
        """Note which shared-memory and rendezvous files the launch holds now: only those are its own; and tell
        the sentinel of descendants that left the process group (its SIGKILL to the group would miss them)."""
        pids = [pid for pid, _ in self.live()]
        if self.before is not None:
            self.held.look(self.before, pids, time.time())
        self.last_sample = self.clock()
        if self.sentinel is None:
            return
        group = os.getpgrp()
        for pid in pids:
            if pid in self.told or sentinel.process_group(pid) in (group, None):
                continue
            ticks = procfs.stat_field(pid, procfs.START_TIME_FIELD)
            if ticks is not None:
                with contextlib.suppress(OSError):
                    os.write(self.sentinel[1], f"{pid} {ticks}\n".encode())
                self.told.add(pid)

    def _guard_died_now(self) -> bool:
        """While stopping, keep reading the socket: True once, when EOF shows the guard has just died."""
        if self.guard_gone:
            return False
        self.pending += self.receive(0.0) or []
        return self.guard_gone

    def end_sentinel(self) -> None:
        """The tree is stopped: kill the sentinel first, then close its pipe (EOF alone would make it kill the
        group, the keeper included)."""
        if self.sentinel is not None:
            pid, fd = self.sentinel
            process.kill(pid, process.SIGKILL)
            process.reap([pid])
            os.close(fd)
            self.sentinel = None

    def claim(self, path: str) -> None:
        """A file the guard read from vLLM's log as this launch's (its vllm_dist_ rendezvous)."""
        if self.before is not None and path.startswith(self.before.prefixes):
            self.held.paths.add(path)

    def stop_tree(self, grace_s: float, why: str) -> dict[str, Any]:
        """Stop every descendant (see the module docstring); returns what it took."""
        start = self.clock()
        termed: set[int] = set()
        killed = False
        report: dict[str, Any] = {"why": why, "sigterm": 0, "sigkill": 0}
        self.sample()  # the last look while everything still runs
        while True:
            self.reap()
            procs = self.live()
            if not procs:
                break
            elapsed = self.clock() - start
            if self._guard_died_now():
                grace_s, why = 0.0, "the guard is gone"
                report["why"] = f"{report['why']}; then the guard died"
            if killed:
                for pid, _ in procs:
                    process.kill(pid, process.SIGKILL)
                if elapsed > grace_s + KILL_WAIT_S:
                    report["unkillable"] = [pid for pid, _ in procs]
                    break
            else:
                # Still looking while it stops: vLLM goes on creating segments after SIGTERM (the real tier saw
                # a shm_broadcast segment appear half a second after it, with the engine still loading).
                if self.clock() - self.last_sample >= STOP_SAMPLE_S:
                    self.sample()
                for pid, _ in procs:
                    if pid not in termed and process.kill(pid, process.SIGTERM):
                        termed.add(pid)
                        report["sigterm"] += 1
                engines = [pid for pid, title in procs if title.startswith(ENGINE_PREFIX)]
                if elapsed >= grace_s or (not self.ready and not engines and elapsed >= SETTLE_S):
                    reason = (why if self.guard_gone and grace_s == 0.0 else
                              f"still running after the {grace_s:g}s grace" if elapsed >= grace_s else
                              "its engine has stopped; vLLM's API server ignores SIGTERM until it is ready")
                    self.send({"event": f"SIGKILL to {len(procs)} vLLM process(es): {reason}"})
                    self.sample()  # the last look: what SIGKILL leaves is never cleaned by vLLM
                    for pid, _ in procs:
                        process.kill(pid, process.SIGKILL)
                    report["sigkill"] = len(procs)
                    killed = True
            time.sleep(POLL_S / 2)
        self.reap()
        report["seconds"] = round(self.clock() - start, 2)
        return report

    # --- the whole life ------------------------------------------------------------------------------

    def run(self) -> int:
        process.ignore_stop_signals()
        process.set_child_subreaper()
        launch = self._launch_message()
        if launch is None:
            return 0  # the guard died before it told us what to start
        argv, env = launch["argv"], launch["env"]
        grace_s = float(launch.get("grace_s", 30.0))
        if any(m.get("cmd") == "stop" for m in self.pending) or self.guard_gone:
            # Asked to stop before vLLM started (in the same recv as the launch, or the guard is gone): start nothing.
            self.send({"exit": None, "stop": {"why": "stopped before vLLM started", "sigterm": 0, "sigkill": 0,
                                              "seconds": 0.0}})
            return 0
        before = self.before = leftovers.Before.take(env, time.time())
        self.sentinel = sentinel.start_sentinel()
        try:
            self.main_pid = process.start_vllm(argv, env)
        except OSError as e:
            self.end_sentinel()
            self.send({"event": f"cannot start {argv[0]}: {e.strerror or e}", "exit": 127})
            return 0
        process.lower_own_oom_score()
        self.send({"pid": self.main_pid})
        why = self._supervise()
        if why == "guard gone":
            grace_s = min(grace_s, GUARD_GONE_GRACE_S)
        elif isinstance(why, float):
            grace_s, why = why, "stop requested"
        report = self.stop_tree(grace_s, str(why))
        self.end_sentinel()
        removed = leftovers.remove_own(before, self.held)
        if removed:
            report["removed"] = removed
        self.send({"exit": self.main_status, "stop": report})
        return 0

    def _launch_message(self) -> dict[str, Any] | None:
        while True:
            messages = self.receive(3600.0)
            if messages is None:
                return None
            for i, m in enumerate(messages):
                if "argv" in m:
                    self.pending = messages[i + 1:] + self.pending  # what came behind it is acted on too
                    return m

    def _supervise(self) -> str | float:
        """Until vLLM's main process exits, the guard asks for a stop (its grace), or the guard is gone."""
        while True:
            self.reap()
            if self.main_status is not None:
                return "vLLM exited"
            messages = self.receive(POLL_S)
            if messages is None:
                return "guard gone"
            for m in messages:
                if m.get("cmd") == "ready":
                    self.ready = True
                elif m.get("cmd") == "stop":
                    return float(m.get("grace_s", 30.0))
                elif isinstance(m.get("own"), str):
                    self.claim(m["own"])
            if self.clock() - self.last_sample >= SAMPLE_S:
                self.sample()


def main() -> int:
    control = socket.socket(fileno=os.dup(0))
    os.close(0)
    os.open(os.devnull, os.O_RDONLY)  # fd 0 again, so nothing else ever reads the socket
    return Keeper(control).run()
