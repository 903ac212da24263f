"""The per-GPU launch locks on every node of the placement, held by one small Ray actor per node.

Each actor takes the same flock as a single-machine guard (``lock.GpuLocks``, in the lock directory
of that node), so guards on one node and across the cluster are serialized alike. The actors belong
to the guard's Ray job (never detached): when the guard ends, also by SIGKILL, Ray ends its job and
kills them, and the kernel drops their flocks. Nodes are locked one at a time in node-id order, so two
guards never hold half of each other's GPUs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode

ACTOR_TIMEOUT_S = 30.0  # an actor's first call includes starting its worker process on the node


class NodeLockHolder:
    """Runs on one node as a Ray actor: takes and releases that node's GPU locks on request."""

    def __init__(self, lock_dir_setting: str | None, uuids: Sequence[str], holder: Mapping[str, object]) -> None:
        self.setting = lock_dir_setting
        self.uuids = list(uuids)
        self.holder = dict(holder)
        self.locks: Any = None

    def try_acquire(self) -> tuple[bool, str, str]:
        """Take every lock now, or none: (True, the lock directory, "") or (False, the busy GPU, who holds it)."""
        from vllm_guard.launch import lock

        if self.locks is not None:
            return True, str(self.locks.directory), ""
        directory = lock.lock_dir(self.setting, os.environ)
        waits: list[tuple[str, str]] = []
        locks = lock.GpuLocks(directory, self.uuids, {**self.holder, "ray_node_pid": os.getpid()})
        # should_stop always true: GpuLocks gives up at the first busy lock (releasing the others) instead of
        # waiting on the node; the guard waits, where it can hear a signal.
        if locks.acquire(on_wait=lambda uuid, who: waits.append((uuid, who)), should_stop=lambda: True):
            self.locks = locks
            return True, str(directory), ""
        uuid, who = waits[0] if waits else ("?", "unknown")
        return False, uuid, who

    def release(self) -> bool:
        if self.locks is not None:
            self.locks.release()
            self.locks = None
        return True


class ClusterLocks:
    """The launch locks of one attempt across the cluster; the same interface as ``lock.GpuLocks``."""

    def __init__(self, connection: Any, per_node: Mapping[str, tuple[str, Sequence[str]]],
                 lock_dir_setting: str | None, holder: Mapping[str, object]) -> None:
        """``per_node``: node id -> (the node's name, the UUIDs of its GPUs in the placement)."""
        self.conn = connection
        self.per_node = dict(per_node)
        self.setting = lock_dir_setting
        self.holder = dict(holder)
        self._actors: dict[str, Any] = {}

    def _actor(self, node_id: str) -> Any:
        if node_id not in self._actors:
            _, uuids = self.per_node[node_id]
            self._actors.update(self.conn.start_actors(NodeLockHolder, {node_id: (self.setting, uuids, self.holder)}))
        return self._actors[node_id]

    def acquire(self, *, on_wait: Callable[[str, str], None], poll_s: float = 0.5,
                should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Take every node's locks, waiting as long as needed; False if asked to stop while waiting.

        Raises:
            GuardError: a node's actor failed or did not answer (its lock directory unsafe, the node gone).
        """
        for node_id in sorted(self.per_node):
            name, _ = self.per_node[node_id]
            told = False
            while True:
                [answer] = self.conn.call_all({node_id: self._actor(node_id)}, "try_acquire", ACTOR_TIMEOUT_S)
                if answer.error is not None:
                    self.release()
                    raise GuardError(f"node {name}: cannot take the launch locks there: {answer.error}",
                                     hint="check the node (`ray status`) and its lock directory (docs/security.md)",
                                     exit_code=ExitCode.PREFLIGHT_FAILED)
                ok, uuid, who = answer.value
                if ok:
                    break
                if not told:
                    on_wait(f"{uuid} on node {name}", who)
                    told = True
                if should_stop():
                    self.release()
                    return False
                time.sleep(poll_s)
        return True

    def release(self) -> None:
        if self._actors:
            self.conn.call_all(self._actors, "release", ACTOR_TIMEOUT_S)

    def close(self) -> None:
        """Release, then end the actors (the job's end would too)."""
        self.release()
        self.conn.kill(self._actors)
        self._actors = {}


def per_node_gpus(placement: Any, names: Mapping[str, str]) -> dict[str, tuple[str, list[str]]]:
    """node id -> (name, GPU UUIDs) of a placement."""
    out: dict[str, tuple[str, list[str]]] = {}
    for r in placement.ranks:
        out.setdefault(r.node_id, (names.get(r.node_id, r.node), []))[1].append(r.gpu.uuid)
    return out
