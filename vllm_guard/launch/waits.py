"""A start that waits (for another guard's launch lock, for a busy GPU to free up) says so, and systemd lets it.

Under ``Type=notify`` the unit's ``TimeoutStartSec=`` runs from the start: a guard that waited for another's lock
sent one ``EXTEND_TIMEOUT_USEC`` and then nothing, and systemd killed it after three minutes, then restarted it
(issue 23). So every heartbeat of a wait sends ``EXTEND_TIMEOUT_USEC`` (sd_notify(3): the start timeout is pushed to
at least now plus that much) and ``STATUS=`` with what it waits for, for how long, and who holds it; the terminal
status shows the same line. The extension stops at the wait's own limit (``wait-for-gpu``; for a launch lock,
``lock-timeout``): from then on systemd's start timeout decides. What was waited for goes into the attempt record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vllm_guard.launch.phases import EXTEND_S

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext


def duration_text(seconds: float) -> str:
    """2m10s, 45s, 1h02m."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Wait:
    """One wait of one attempt: ``beat`` is called as often as the waiter looks (it sends at most once per
    ``heartbeat-interval``); ``record`` is what the attempt log keeps."""

    def __init__(self, ctx: LaunchContext, what: str, limit_s: float | None) -> None:
        self.ctx = ctx
        self.what = what
        self.limit_s = limit_s
        self.interval_s = float(ctx.pre.profile.setting("heartbeat-interval"))
        self.started = ctx.clock()
        self.last: float | None = None
        self.detail = ""
        self.beats = 0
        self.past_limit_said = False

    def waited_s(self) -> float:
        return self.ctx.clock() - self.started

    def beat(self, detail: str | None = None) -> None:
        if detail is not None:
            self.detail = detail
        now = self.ctx.clock()
        if self.last is not None and now - self.last < self.interval_s:
            return
        self.last = now
        self.beats += 1
        waited = now - self.started
        text = f"waiting for {self.what}{self.detail} for {duration_text(waited)}"
        notifier = self.ctx.notifier
        left = None if self.limit_s is None else self.limit_s - waited
        if left is None or left > 0:
            # Enough to reach the next heartbeat with room to spare, never past the wait's own limit.
            extend = max(EXTEND_S, 3 * self.interval_s)
            notifier.send(f"EXTEND_TIMEOUT_USEC={int((extend if left is None else min(extend, left)) * 1e6)}",
                          f"STATUS={text}")
        else:
            if not self.past_limit_said:
                self.past_limit_said = True
                self.ctx.status.message(f"{text}: past its limit of {duration_text(self.limit_s or 0)}, the start "
                                        "timeout is no longer extended")
            notifier.status(f"{text} (past its limit: the start timeout is no longer extended)")
        self.ctx.status.phase(text, heartbeat=True)

    def record(self) -> dict[str, Any]:
        return {"for": self.what, "detail": self.detail.removeprefix(", ") or None,
                "seconds": round(self.waited_s(), 1)}
