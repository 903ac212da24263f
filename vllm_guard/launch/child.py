"""Ending one vLLM: stop its whole tree, stop the orphans that came to us, reap, wait until its GPU memory is back.

``Child`` says what a launch needs of a started vLLM; ``process.Child`` is the real one, behind its keeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from vllm_guard.profile.model import stop_grace_s

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext

MEMORY_RELEASE_TIMEOUT_S = 60.0


class Child(Protocol):
    """A started vLLM: ``pid`` is its keeper's (the launch's process group), ``vllm_pid`` vLLM's own once known."""

    @property
    def pid(self) -> int: ...

    @property
    def vllm_pid(self) -> int | None: ...

    @property
    def tail(self) -> Sequence[str]:
        """vLLM's last lines, oldest first."""

    @property
    def stop_report(self) -> dict[str, Any]:
        """What the keeper did while stopping: "seconds", "removed" files."""

    def poll(self) -> int | None:
        """vLLM's exit status once it and everything it started are gone; None while any of it runs."""

    def stop(self, grace_s: float) -> int:
        """Stop the whole tree (SIGTERM, SIGKILL after ``grace_s``); vLLM's exit status."""

    def claim(self, path: str) -> None:
        """This file is the launch's own (vLLM named it in its log)."""

    def mark_ready(self) -> None:
        """vLLM serves: from now on a stop is its graceful shutdown."""


class ChildEnder:
    """Stops a vLLM and cleans up after it; the guard is a subreaper, so what vLLM left is ours to end."""

    def __init__(self, ctx: LaunchContext) -> None:
        self.ctx = ctx

    def reap(self, child: Child) -> None:
        """Collect adopted children that have exited: as a subreaper (or PID 1 in a container) it is our job."""
        zombies = self.ctx.host.zombie_children((child.pid,))
        if zombies:
            self.ctx.host.reap(zombies)

    def stop(self, child: Child) -> int:
        ctx = self.ctx
        # One SIGTERM, then vLLM's drain (--shutdown-timeout) or guard.stop-timeout, whichever is longer.
        code = child.stop(stop_grace_s(ctx.pre.profile))
        # Only when the keeper itself was killed are vLLM's processes re-parented to the guard; an engine
        # comes to us only once its API server is gone, hence a second look.
        for _ in range(3):
            orphans = ctx.host.adopted_children((child.pid,))
            if not orphans:
                break
            ctx.host.stop_orphans(orphans)
        report = child.stop_report
        if ctx.stop_signal is not None and report.get("seconds") is not None:
            ctx.status.message(f"vLLM stopped in {report['seconds']:g}s")
        if report.get("removed"):
            ctx.status.message(f"removed {len(report['removed'])} file(s) the stopped vLLM left: "
                               + ", ".join(report["removed"]))
        self._wait_memory_released()
        return code

    def _wait_memory_released(self) -> None:
        """After a failed attempt, wait (bounded) until its GPU memory is back before the next start."""
        ctx = self.ctx
        if ctx.gpu_probe is None:
            return
        before = {g.uuid: g.memory_free_bytes or 0 for g in ctx.gpus}
        deadline = ctx.clock() + MEMORY_RELEASE_TIMEOUT_S
        while ctx.clock() < deadline and ctx.stop_signal is None:
            now = {g.uuid: g.memory_free_bytes or 0 for g in ctx.gpu_probe() if g.uuid in before}
            # A GPU the probe did not report (a Ray node that did not answer in time) is unknown: not waited for.
            if all(now[u] >= 0.95 * free for u, free in before.items() if u in now):
                return
            ctx.wait(1.0)
