"""Start vLLM, watch it until ready, climb the ladder on failed starts, then supervise until it stops.

One attempt (attempt.py): take the per-GPU locks, re-check free memory (live machines only),
spawn vLLM in its own session, relay its output, poll /health. A failure before
ready stops the whole group (child.py), is classified, and the ladder picks the one change
for the next start (relax.py). After ready the guard forwards stop signals and exits with
the documented codes (serving.py). Every attempt is one line in the attempt log (journal.py).

This module is the driver: signals, the ladder loop, and the step recorded for each failure. The pieces
share a ``LaunchContext``; none of them imports this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from vllm_guard.diagnose import ladder
from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.launch import health, lock, process
from vllm_guard.launch.attempt import AttemptRunner
from vllm_guard.launch.child import ChildEnder
from vllm_guard.launch.context import Host, LaunchContext, Spawner
from vllm_guard.launch.journal import Attempt, AttemptObserver, Journal
from vllm_guard.launch.lock import LaunchLocks
from vllm_guard.launch.notify import Notifier
from vllm_guard.launch.ownership import PortOwner, PortWatch
from vllm_guard.launch.phases import Status
from vllm_guard.launch.plan import LaunchPlan, build_plan
from vllm_guard.launch.readiness import FirstRequest
from vllm_guard.launch.relax import Relaxer
from vllm_guard.launch.remembered import IMPLIED_ENV, with_relaxation
from vllm_guard.launch.serving import Serving
from vllm_guard.launch.stall import HangProbes
from vllm_guard.preflight.run import Preflight
from vllm_guard.probes.select import gpu_label
from vllm_guard.profile.model import Profile


class Supervisor:
    """Runs the ladder and then supervises; every collaborator has a real default and can be replaced.

    ``pause`` is how the guard waits between looks (None: on an event that a stop signal sets); ``host``
    is the guard's own process (signals, subreaper, adopted children). Tests pass fakes of both. ``observer``
    follows the attempts and the looks at /health (the status endpoint's state).
    """

    def __init__(
        self,
        pre: Preflight,
        facts: Facts,
        *,
        environ: Mapping[str, str],
        status: Status,
        forced: bool = False,
        spawner: Spawner = process.spawn,
        ready: Callable[[str], bool] | None = None,
        port: PortOwner | None = None,
        gpu_probe: Callable[[], tuple[Gpu, ...]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        notifier: Notifier | None = None,
        launch_locks: Callable[[Profile], LaunchLocks] | None = None,
        gpu_label: Callable[[Gpu], str] = gpu_label,
        pause: Callable[[float], object] | None = None,
        host: Host | None = None,
        observer: AttemptObserver | None = None,
        hang_probes: HangProbes | None = None,
    ) -> None:
        self.ctx = LaunchContext(
            pre=pre, facts=facts, environ=environ, status=status, notifier=notifier or Notifier(environ),
            clock=clock, spawner=spawner, ready=_observed(ready or self._health, observer), gpu_probe=gpu_probe,
            launch_locks=launch_locks, gpu_label=gpu_label,
            lock_dir=lock.lock_dir(pre.profile.setting("lock-dir"), environ), host=host or Host(),
            port=port or PortWatch(), pause=pause)
        self.observer = observer
        self.journal = Journal(self.ctx, forced=forced, observer=observer)
        self.relax = Relaxer(self.ctx)
        ender = ChildEnder(self.ctx)
        self.attempts = AttemptRunner(self.ctx, self.journal, self.relax, ender, FirstRequest(self.ctx, ender),
                                      hang_probes)
        self.serving = Serving(self.ctx, self.journal, self.relax, ender)

    def _health(self, url: str) -> bool:
        """The real readiness probe: /health within guard.health-timeout, given up at once on a stop signal."""
        return health.check(url, float(self.ctx.pre.profile.setting("health-timeout")),
                            should_stop=lambda: self.ctx.stop_signal is not None)

    # --- signals -------------------------------------------------------------------

    def _on_signal(self, signum: int) -> None:
        ctx = self.ctx
        if ctx.stop_signal is None:
            ctx.stop_signal = signum
            ctx.notifier.stopping(f"stopping: signal {signum}")
            if self.observer is not None:
                self.observer.stopping(signum)
        ctx.wake.set()

    # --- the ladder ------------------------------------------------------------------

    def run(self) -> int:
        host = self.ctx.host
        host.become_subreaper()
        restore = host.on_stop_signals(self._on_signal)
        self.journal.register()
        try:
            return self._climb()
        finally:
            self.journal.unregister()
            restore()
            self.ctx.status.close()

    def _climb(self) -> int:
        ctx, relax = self.ctx, self.relax
        original = ctx.pre.profile
        profile, remembered = relax.remembered(original)
        max_attempts = int(profile.ladder_setting("max-attempts"))
        guard_set_kv = False
        unchanged = 0
        previous: Profile | None = original if remembered else None
        transient: set[str] = set()  # parameters changed for gpu_busy: about that moment, never remembered
        for number in range(1, max_attempts + 1):
            plan = build_plan(profile, environ=ctx.environ, cuda_visible_devices=ctx.facts.cuda_visible_devices)
            attempt = Attempt(number, plan, profile, relax.changed(previous, profile) if previous else {})
            attempt.remembered = remembered if number == 1 else {}
            child = self.attempts.start(attempt, max_attempts)
            if attempt.outcome == "ready" and child is not None:
                self.journal.record(attempt)
                self.serving.announce(attempt, original, child)
                relax.remember(original, attempt, transient)
                return self.serving.serve(child, attempt)
            self._record_failure_step(attempt, guard_set_kv, unchanged)
            # A stop requested while the attempt failed (vLLM died of the same SIGTERM, a GPU recheck ran)
            # is a stop: 143/130, never START_FAILED.
            if attempt.outcome == "stopped" or ctx.stop_signal is not None:
                return ctx.exit_for_signal()
            step = attempt.step
            if isinstance(step, ladder.Stop) or step is None:
                ctx.status.attempts_table(self.journal.history, exhausted=False)
                return int(ExitCode.START_FAILED)
            if number == max_attempts:
                break
            previous = profile
            if step.param is None:
                unchanged += 1
                if step.wait_for_gpu and not self.attempts.wait_for_gpu(profile):
                    return ctx.exit_for_signal()
            else:
                if step.param == "kv-cache-dtype" and step.value != "auto":
                    guard_set_kv = True
                if attempt.diagnosis is not None and attempt.diagnosis.cls == "gpu_busy":
                    transient.add(step.param)
                profile = with_relaxation(profile, step.param, step.value)
                if step.param in IMPLIED_ENV:
                    ctx.status.message("next start: " + step.reason)
        ctx.status.attempts_table(self.journal.history, exhausted=True)
        return int(ExitCode.START_FAILED)

    def _record_failure_step(self, attempt: Attempt, guard_set_kv: bool, unchanged: int) -> None:
        if attempt.outcome == "failed" and attempt.diagnosis is not None:
            attempt.step = self.relax.next_step(attempt, guard_set_kv=guard_set_kv, unchanged=unchanged)
        self.journal.record(attempt)


def _observed(ready: Callable[[str], bool], observer: AttemptObserver | None) -> Callable[[str], bool]:
    """The readiness probe, each answer also told to the observer."""
    if observer is None:
        return ready

    def look(url: str) -> bool:
        ok = ready(url)
        observer.health_looked(ok)
        return ok
    return look


def run_exec(plan: LaunchPlan, environ: Mapping[str, str]) -> None:
    """guard.mode = "exec": after preflight, become vLLM."""
    process.exec_replace(plan.argv, plan.environment(environ))
