"""What the guard's status endpoint serves: the guard's own state, kept up to date as an observer.

``ObservedStatus`` stands where the live status stands (the supervisor's ``Status``): it forwards every call to
the real one and updates a ``GuardState`` on the way; it is also the supervisor's ``AttemptObserver`` (each
attempt as the journal records it, each look at /health, how serving ended). The endpoint's threads read the
state through ``view()`` under a lock: nothing here ever waits on them, so they never block the supervisor.

Only the guard's own figures are kept (numbers, stage keys, check ids, failure classes, the guard's own
wait texts), never a line of vLLM's output: the endpoint cannot leak what vLLM printed (an API key included).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_guard.diagnose.markers import CPU_STAGE_NAMES, STAGE_NAMES
from vllm_guard.launch.journal import Attempt
from vllm_guard.launch.phases import Status


# The stage names the phase tracker writes ("attempt 1/5: weight loading (41s)"), back to their keys.
def _stage_keys() -> dict[str, str]:
    """Label -> stage key, the GPU build's labels first; the CPU build's own labels ("warm-up") are added."""
    keys: dict[str, str] = {}
    for names in (STAGE_NAMES, CPU_STAGE_NAMES):
        for key, name in names.items():
            keys.setdefault(name, key)
    return keys


STAGE_KEYS = _stage_keys()
WAITING = "waiting for "

# Where the guard is: before the first start, starting, vLLM ready, the ladder gave up, serving ended.
PREFLIGHT, STARTING, READY, GAVE_UP, ENDED = "preflight", "starting", "ready", "gave_up", "ended"


@dataclass(frozen=True)
class View:
    """One consistent reading of the state, for one answer of the endpoint."""

    stage: str
    attempt: int | None
    of: int
    phase: str | None
    since_s: float
    waiting_for: str | None
    ready: bool
    healthy: bool
    stopping: bool
    attempts: int
    time_to_ready_s: float | None
    relaxations: Mapping[str, int]
    failures: Mapping[str, int]
    phase_seconds: Mapping[str, float]
    ended: Mapping[str, int]

    @property
    def serves(self) -> bool:
        """Ready for traffic: vLLM was ready, its /health still passes, and no stop was asked for."""
        return self.ready and self.healthy and not self.stopping


@dataclass
class GuardState:
    """The guard's state as the endpoint shows it; every change and every reading under one lock."""

    of: int
    clock: Callable[[], float] = time.monotonic
    stage: str = PREFLIGHT
    attempt: int | None = None
    phase: str | None = None
    waiting_for: str | None = None
    healthy: bool = False
    stopping: bool = False  # a stop signal came: not ready, whatever /health says, while vLLM drains
    attempts: int = 0
    time_to_ready_s: float | None = None
    relaxations: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)  # the last recorded attempt: each phase's share
    ended: dict[str, int] = field(default_factory=dict)  # after ready: exited | stalled | stopped
    # Re-entrant: a stop signal's handler runs on the guard's thread, perhaps inside one of its updates.
    lock: threading.RLock = field(default_factory=threading.RLock)
    since: float = 0.0

    def __post_init__(self) -> None:
        self.since = self.clock()

    def change(self, **values: Any) -> None:
        with self.lock:
            for name, value in values.items():
                setattr(self, name, value)

    def view(self) -> View:
        with self.lock:
            return View(stage=self.stage, attempt=self.attempt, of=self.of, phase=self.phase,
                        since_s=round(self.clock() - self.since, 1), waiting_for=self.waiting_for,
                        ready=self.stage == READY, healthy=self.healthy, stopping=self.stopping,
                        attempts=self.attempts,
                        time_to_ready_s=self.time_to_ready_s, relaxations=dict(self.relaxations),
                        failures=dict(self.failures), phase_seconds=dict(self.phase_seconds),
                        ended=dict(self.ended))

    # --- what the supervisor reports -----------------------------------------------------------------------

    def attempt_started(self) -> None:
        with self.lock:
            self.attempts += 1
            self.attempt = self.attempts
            self.stage, self.phase, self.waiting_for, self.since = STARTING, None, None, self.clock()

    def recorded(self, attempt: Attempt) -> None:
        with self.lock:
            for param in attempt.changed:
                self.relaxations[param] = self.relaxations.get(param, 0) + 1
            if attempt.diagnosis is not None:
                cls = attempt.diagnosis.cls
                self.failures[cls] = self.failures.get(cls, 0) + 1
            self.phase_seconds = phase_shares(attempt.phases)
            if attempt.outcome == "ready":
                took = attempt.reported.get("time_to_ready_s")
                self.time_to_ready_s = float(took) if isinstance(took, (int, float)) else None

    def serving_ended(self, outcome: str) -> None:
        with self.lock:
            self.ended[outcome] = self.ended.get(outcome, 0) + 1
            self.stage, self.healthy = ENDED, False

    def health_looked(self, ok: bool) -> None:
        with self.lock:
            if self.stage == READY:
                self.healthy = ok


def phase_shares(phases: Mapping[str, float | None]) -> dict[str, float]:
    """Seconds from spawn to the end of each phase, as each phase's own share (a phase the log did not show
    counts towards the next one it did)."""
    out, previous = {}, 0.0
    for name, at in phases.items():
        if at is not None:
            out[name] = round(max(at - previous, 0.0), 2)
            previous = at
    return out


class ObservedStatus:
    """The supervisor's ``Status`` and ``AttemptObserver``: the real live status, plus the guard's state."""

    def __init__(self, inner: Status, state: GuardState) -> None:
        self.inner = inner
        self.state = state
        self._label = ""

    # --- Status: forwarded, and observed -------------------------------------------------------------------

    def relay(self, raw: bytes, stream: str) -> None:
        if self.state.waiting_for is not None:  # vLLM speaks: nothing is waited for any more
            self.state.change(waiting_for=None)
        self.inner.relay(raw, stream)

    def progress(self, text: str) -> None:
        self.inner.progress(text)

    def message(self, text: str, style: str = "bold") -> None:
        self.inner.message(text, style)

    def attempt_started(self, label: str) -> None:
        self._label = label
        self.state.attempt_started()
        self.inner.attempt_started(label)

    def phase(self, text: str, *, heartbeat: bool = False) -> None:
        if text.startswith(WAITING):  # waits.Wait: "waiting for WHAT[, held by WHO] for 2m10s"
            self.state.change(waiting_for=text[len(WAITING):].rsplit(" for ", 1)[0])
        elif self._label and text.startswith(f"{self._label}: "):  # the phase tracker: "LABEL: STAGE (41s)"
            name = text[len(self._label) + 2:].rsplit(" (", 1)[0]
            self.state.change(phase=STAGE_KEYS.get(name, "unknown"), waiting_for=None)
        self.inner.phase(text, heartbeat=heartbeat)

    def ready(self, number: int, reported: dict[str, Any], relaxed: dict[str, list[Any]], profile: str | None,
              phases: Mapping[str, float | None] | None = None, *, url: str | None = None,
              set_by_user: frozenset[str] = frozenset()) -> None:
        self.state.change(stage=READY, healthy=True, waiting_for=None)
        self.inner.ready(number, reported, relaxed, profile, phases, url=url, set_by_user=set_by_user)

    def attempts_table(self, history: list[Any], *, exhausted: bool) -> None:
        self.state.change(stage=GAVE_UP, waiting_for=None)
        self.inner.attempts_table(history, exhausted=exhausted)

    def close(self) -> None:
        self.inner.close()

    # --- AttemptObserver -------------------------------------------------------------------------------------

    def recorded(self, attempt: Attempt) -> None:
        self.state.recorded(attempt)

    def serving_ended(self, outcome: str, code: int | None) -> None:
        self.state.serving_ended(outcome)

    def health_looked(self, ok: bool) -> None:
        self.state.health_looked(ok)

    def stopping(self, signum: int) -> None:
        self.state.change(stopping=True)
