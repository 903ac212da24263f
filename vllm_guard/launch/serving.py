"""After ready: announce it (live status, systemd, registry), then watch vLLM until it stops.

A stop signal stops vLLM and exits 130/143; vLLM exiting on its own, or /health failing
``health-failures`` times in a row (a stall), exits 6 (CHILD_EXITED), for systemd to restart.
"""

from __future__ import annotations

from vllm_guard.diagnose.classify import classify
from vllm_guard.exit_codes import ExitCode
from vllm_guard.launch import process
from vllm_guard.launch.child import Child, ChildEnder
from vllm_guard.launch.context import LaunchContext
from vllm_guard.launch.journal import Attempt, Journal, now
from vllm_guard.launch.relax import Relaxer
from vllm_guard.launch.remembered import LADDER_DESTS
from vllm_guard.profile.model import Profile, stop_grace_s
from vllm_guard.redact import mask_url_credentials, printable


class Serving:
    def __init__(self, ctx: LaunchContext, journal: Journal, relax: Relaxer, ender: ChildEnder) -> None:
        self.ctx = ctx
        self.journal = journal
        self.relax = relax
        self.ender = ender

    def announce(self, attempt: Attempt, original: Profile, child: Child) -> None:
        ctx = self.ctx
        relaxed = self.relax.changed(original, attempt.profile)
        self.journal.registry_update(state="relaxed" if relaxed else "ready", since=now(), vllm_pid=child.vllm_pid)
        ctx.status.ready(attempt.number, attempt.reported, relaxed,
                         str(original.path) if original.path else None, attempt.phases,
                         url=attempt.plan.health_url.removesuffix("/health"),
                         set_by_user=frozenset(k for k, dest in LADDER_DESTS.items() if original.is_set(dest)))
        p = attempt.profile
        where = p.value("uds") or f":{p.value('port') or 8000}"
        text = f"ready: {p.name} on {where}, max-model-len {self.relax.effective(p, 'max_model_len')}"
        if attempt.reported.get("kv_cache_tokens"):
            text += f", KV {attempt.reported['kv_cache_tokens']:,} tokens"
        if relaxed:
            text += " (relaxed: " + ", ".join(f"{k} {new}" for k, (_, new) in relaxed.items()) + ")"
        ctx.notifier.ready(text)

    def serve(self, child: Child, attempt: Attempt) -> int:
        """Until vLLM stops: the exit code of the guard."""
        ctx = self.ctx
        interval = ctx.notifier.watchdog_interval_s
        every = float(attempt.profile.setting("health-interval"))
        if interval is not None:
            every = min(every, interval / 2)  # systemd's watchdog wants a ping twice per interval
        allowed = max(int(attempt.profile.setting("health-failures")), 2)  # never on one slow answer
        next_look = ctx.clock() + every
        misses = 0
        while True:
            self.ender.reap(child)
            if ctx.clock() >= next_look:
                # One look at /health serves both: the stall rule, and WATCHDOG=1 only while vLLM answers
                # (a hung server stops the pings and systemd acts).
                if ctx.ready(attempt.plan.health_url):
                    misses = 0
                    if interval is not None:
                        ctx.notifier.watchdog()
                else:
                    misses += 1
                    ctx.status.message(f"vLLM did not answer /health ({misses} of {allowed} in a row)")
                next_look = ctx.clock() + every
            if misses >= allowed and ctx.stop_signal is None:
                why = f"/health failed {misses} times in a row, {every:g}s apart"
                ctx.status.message(f"vLLM stalled after it was ready: {why}; stopping it (exit 6, for a restart)")
                ctx.notifier.status(f"stalled: {why}")
                code = self.ender.stop(child)
                self.journal.record_end(attempt, "stalled", code, reason=why)
                return int(ExitCode.CHILD_EXITED)
            if ctx.stop_signal is not None:
                ctx.status.message(f"stopping vLLM (signal {process.signal_name(ctx.stop_signal)}): SIGTERM, "
                                   f"SIGKILL after {stop_grace_s(ctx.pre.profile):g}s")
                code = self.ender.stop(child)
                self.journal.record_end(attempt, "stopped", code)
                return ctx.exit_for_signal()
            if child.poll() is not None:
                status = self.ender.stop(child)
                ctx.status.message(f"vLLM exited on its own after it was ready (status {status})")
                self._point_to_explain(child, status)
                self.journal.record_end(attempt, "exited", status)
                return int(ExitCode.CHILD_EXITED)
            ctx.wait(max(min(next_look - ctx.clock(), 1.0), 0.05))

    def _point_to_explain(self, child: Child, status: int | None) -> None:
        """Exit 6: vLLM's last error lines, and where the whole diagnosis is."""
        diagnosis = classify("\n".join(child.tail), exit_status=status)
        for line in diagnosis.evidence[-5:]:
            # vLLM's output: no control characters, no credentials of a URL.
            self.ctx.status.message(f"  {printable(mask_url_credentials(line), 500)}", style="")
        self.ctx.status.message(f"{diagnosis.cls}: `vllm-guard explain --unit UNIT` (or `vllm-guard explain "
                                "LOGFILE`) diagnoses the whole log", style="")
