"""What a launch writes down: the ``Attempt`` record, one attempt-log line per attempt (and one when serving
ends), and this guard's registry entry, which `vllm-guard ps` reads."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vllm_guard.diagnose import ladder
from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.errors import GuardError
from vllm_guard.launch import lock
from vllm_guard.launch.plan import LaunchPlan
from vllm_guard.profile.model import Profile
from vllm_guard.redact import redact_text
from vllm_guard.state import attempts as attempt_log
from vllm_guard.state import registry

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext


@dataclass
class Attempt:
    number: int
    plan: LaunchPlan
    profile: Profile
    changed: dict[str, list[Any]]
    started_at: str = ""
    started_mono: float = 0.0
    outcome: str = ""  # ready | failed | stopped
    exit_status: int | None = None
    diagnosis: Diagnosis | None = None
    step: ladder.Step | ladder.Stop | None = None
    reported: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    phases: dict[str, float | None] = field(default_factory=dict)  # seconds from spawn to the end of each
    first_request: list[dict[str, Any]] = field(default_factory=list)
    remembered: dict[str, Any] = field(default_factory=dict)  # values this start took from ladder.remember
    waited: list[dict[str, Any]] = field(default_factory=list)  # waits before it (a launch lock, a busy GPU): waits.py
    hang: dict[str, Any] | None = None  # startup_hang: the stage, the stacks' innermost frames, their file (stall.py)


def now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


class AttemptObserver(Protocol):
    """Who else follows a launch (the guard's status endpoint, report/guardstate.py): each attempt as it is
    recorded, each look at /health, and how serving ended. Called on the supervisor's thread; must not block."""

    def recorded(self, attempt: Attempt) -> None: ...

    def health_looked(self, ok: bool) -> None: ...

    def serving_ended(self, outcome: str, code: int | None) -> None: ...

    def stopping(self, signum: int) -> None:
        """A stop signal came (called from the signal handler: it must take no lock the guard's thread holds)."""


class Journal:
    """The attempt log, the attempts so far, and the registry entry of this guard."""

    def __init__(self, ctx: LaunchContext, *, forced: bool, observer: AttemptObserver | None = None) -> None:
        self.ctx = ctx
        self.forced = forced
        self.observer = observer
        profile = ctx.pre.profile
        stem = attempt_log.profile_stem(profile.name, profile.path, profile.model)
        self.log_path = attempt_log.log_path(profile.setting("attempt-log"), stem, ctx.environ)
        self.attempt_log = attempt_log.Writer(self.log_path, on_error=self._attempt_log_failed)
        self.history: list[Attempt] = []
        self.registration: registry.Registration | None = None

    # --- the registry ----------------------------------------------------------------------------------

    def register(self) -> None:
        """The entry `vllm-guard ps` reads (registry.py); a guard that cannot write it still serves."""
        from vllm_guard.probes.host import process_started

        ctx = self.ctx
        profile = ctx.pre.profile
        try:
            lock.prepare_dir(ctx.lock_dir)
        except GuardError as e:
            ctx.status.message(f"not listed by `vllm-guard ps`: {e.message}")
            return
        entry = registry.Entry(
            guard_pid=os.getpid(), guard_started=process_started(os.getpid()),
            profile=str(profile.path) if profile.path else None, model=profile.model, state="starting",
            since=now(), attempt=1, gpus=tuple(g.index for g in ctx.gpus),
            port=None if profile.value("uds") else profile.value("port") or 8000, uds=profile.value("uds"))
        self.registration = registry.Registration(ctx.lock_dir, entry, on_error=ctx.status.message)

    def registry_update(self, **changes: Any) -> None:
        if self.registration is not None:
            self.registration.update(**changes)

    def unregister(self) -> None:
        if self.registration is not None:
            self.registration.remove()

    # --- the attempt log ---------------------------------------------------------------------------------

    def record(self, attempt: Attempt) -> None:
        ctx = self.ctx
        self.history.append(attempt)
        d = attempt.diagnosis
        secrets = attempt.plan.secrets()
        record = {
            "profile": str(attempt.profile.path) if attempt.profile.path else None,
            "profile_sha256": attempt.profile.sha256,
            "model": attempt.profile.model,
            # Which vLLM will run and which option table validated its command line (issue 11).
            "vllm": attempt.profile.table_choice.to_dict() if attempt.profile.table_choice else None,
            "attempt": attempt.number,
            "started_at": attempt.started_at or now(),
            "ended_at": now(),
            "duration_s": round(ctx.clock() - attempt.started_mono, 1) if attempt.started_mono else 0.0,
            "argv": attempt.plan.redacted_argv(),
            "changed": attempt.changed,
            "gpus": [g.index for g in ctx.gpus],
            "gpu_choice": ctx.gpu_choice,
            "preflight": ("forced" if self.forced else ctx.pre.verdict),
            "outcome": attempt.outcome,
            "failure": None if d is None else {
                "class": d.cls, "stage": d.stage, "numbers": d.numbers,
                "evidence": [redact_text(e, secrets) for e in d.evidence]},
            "exit": attempt.exit_status,
            "reported": attempt.reported or None,
            "phases": attempt.phases or None,
            "first_request": attempt.first_request or None,
            "remembered": attempt.remembered or None,
            "waited": attempt.waited or None,
            "hang": attempt.hang,
            "next": attempt.step.to_dict() if isinstance(attempt.step, ladder.Step) else (
                {"stop": attempt.step.reason} if isinstance(attempt.step, ladder.Stop) else None),
        }
        self.attempt_log.append(record)
        if self.observer is not None:
            self.observer.recorded(attempt)

    def stacks_path(self, attempt: Attempt) -> Path:
        """Where a hung attempt's stacks go: beside the attempt log, named by the log and the attempt."""
        stamp = (attempt.started_at or now()).replace(":", "").replace("+0000", "Z")
        return self.log_path.parent / "stacks" / f"{self.log_path.stem}-{stamp}-attempt{attempt.number}.txt"

    def _attempt_log_failed(self, text: str) -> None:
        self.ctx.status.message(text, style="bold yellow")
        self.ctx.notifier.status(text)

    def record_end(self, attempt: Attempt, outcome: str, code: int | None, reason: str | None = None) -> None:
        if self.observer is not None:
            self.observer.serving_ended(outcome, code)
        self.attempt_log.append({
            "profile": str(attempt.profile.path) if attempt.profile.path else None,
            "profile_sha256": attempt.profile.sha256, "model": attempt.profile.model,
            "attempt": attempt.number, "phase": "serving", "ended_at": now(), "outcome": outcome,
            "exit": code, "signal": self.ctx.stop_signal, **({"reason": reason} if reason else {}),
        })
