"""The values a start runs with, and how the ladder may relax them: ``Relaxer``.

The effective value of each option the ladder changes (defaults resolved), the ladder's ``Settings`` and
``Limits`` for one failed attempt, utilization only as far as the GPUs have memory free, fp8 support, and
ladder.remember: the relaxations that worked last time, kept and used again, or forgotten.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vllm_guard.diagnose import ladder
from vllm_guard.launch import remembered
from vllm_guard.launch.journal import Attempt, now
from vllm_guard.launch.remembered import LADDER_DESTS, limits
from vllm_guard.profile.model import Profile, world_size
from vllm_guard.state import remember

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext

class Relaxer:
    """The ladder's side of a launch: effective values, the next step, and what is remembered."""

    def __init__(self, ctx: LaunchContext) -> None:
        self.ctx = ctx

    # --- effective values --------------------------------------------------------------------------

    def effective(self, profile: Profile, dest: str, log_context: Mapping[str, Any] | None = None) -> Any:
        """The value vLLM really runs with (remembered.effective_value), with this launch's estimate."""
        return remembered.effective_value(profile, dest, self.ctx.pre.estimate, log_context)

    def changed(self, before: Profile, after: Profile) -> dict[str, list[Any]]:
        """The ladder's parameters that differ, with the values vLLM really used (defaults resolved)."""
        out = {}
        for name, dest in LADDER_DESTS.items():
            old, new = self.effective(before, dest), self.effective(after, dest)
            if old != new:
                out[name] = [old, new]
        return out

    def settings(self, attempt: Attempt) -> ladder.Settings:
        p = attempt.profile
        ctx = attempt.diagnosis.context if attempt.diagnosis else {}
        return ladder.Settings(
            max_model_len=self.effective(p, "max_model_len", ctx),
            gpu_memory_utilization=self.effective(p, "gpu_memory_utilization", ctx),
            max_num_batched_tokens=self.effective(p, "max_num_batched_tokens", ctx),
            max_num_seqs=self.effective(p, "max_num_seqs", ctx),
            enforce_eager=bool(p.value("enforce_eager")),
            kv_cache_dtype=str(p.value("kv_cache_dtype") or "auto"),
            enable_chunked_prefill=p.value("enable_chunked_prefill"),
            kv_cache_memory_bytes=p.value("kv_cache_memory_bytes") or None,
            world_size=world_size(p),
            disable_custom_all_reduce=bool(p.value("disable_custom_all_reduce")),
        )

    def fp8_supported(self) -> bool | None:
        caps = [g.compute_capability for g in self.ctx.gpus if g.compute_capability]
        return min(caps) >= (8, 9) if caps else None

    # --- the next step -------------------------------------------------------------------------------

    def next_step(self, attempt: Attempt, *, guard_set_kv: bool, unchanged: int) -> ladder.Step | ladder.Stop:
        """What the ladder changes after this failed attempt (it has a diagnosis), within the limits."""
        assert attempt.diagnosis is not None
        step = ladder.next_step(
            attempt.diagnosis, self.settings(attempt), limits(attempt.profile),
            fp8_supported=self.fp8_supported(), guard_set_kv_dtype=guard_set_kv, unchanged_retries=unchanged)
        return self.within_limits(step, attempt.profile)

    def within_limits(self, step: ladder.Step | ladder.Stop, profile: Profile) -> ladder.Step | ladder.Stop:
        """Utilization may be raised only as far as the GPUs have memory free right now."""
        if isinstance(step, ladder.Step) and step.param == "gpu-memory-utilization":
            current = self.effective(profile, "gpu_memory_utilization")
            if float(step.value) > current:
                wanted = {g.uuid for g in self.ctx.gpus}
                probe = self.ctx.gpu_probe
                # After the failed attempt has let go of its memory: look again where the machine is live.
                gpus = [g for g in probe() if g.uuid in wanted] if probe else self.ctx.gpus
                if not gpus:  # a CPU build, or GPUs not known: nothing says the memory is free
                    return self._after_utilization(profile)
                free = min((g.memory_free_bytes or 0) / (g.memory_total_bytes or 1) for g in gpus)
                allowed = math.floor((free - 0.02) * 100) / 100
                if allowed <= current:
                    return self._after_utilization(profile)
                return ladder.Step(step.param, min(float(step.value), allowed), step.reason)
        return step

    def _after_utilization(self, profile: Profile) -> ladder.Step | ladder.Stop:
        if limits(profile).allow_fp8_kv and profile.value("kv_cache_dtype") in (None, "auto") and \
                self.fp8_supported():
            return ladder.Step("kv-cache-dtype", "fp8", "halve the KV cache per token (native on this GPU)")
        return ladder.Stop("no shorter max-model-len is accepted, a higher utilization finds no GPU memory free "
                           "(or no GPU to check), and an fp8 KV cache is not available or not allowed")

    # --- ladder.remember -----------------------------------------------------------------------------

    def remembered(self, original: Profile) -> tuple[Profile, dict[str, Any]]:
        """The profile to start with: as written, or with the relaxations that worked last time (said so)."""
        profile, values, note = self.first_start(original)
        if note is not None and values:
            self.ctx.status.message(note, style="bold yellow")
            self.ctx.notifier.status("starting from remembered relaxations: "
                                     + ", ".join(f"{k} {v}" for k, v in values.items()))
        elif note is not None:
            self.ctx.status.message(note)
        return profile, values

    def first_start(self, original: Profile) -> tuple[Profile, dict[str, Any], str | None]:
        """What the first attempt starts with (remembered.first_start), the notes of what was ignored said."""
        start = remembered.first_start(original, self.ctx.pre.estimate, self.ctx.gpus, self._vllm_version(),
                                       self.ctx.environ)
        for note in start.ignored:
            self.ctx.status.message(note)
        return start.profile, start.values, start.note

    def _vllm_version(self) -> str | None:
        build = self.ctx.facts.vllm_build
        return build.version if build else None

    def remember(self, original: Profile, attempt: Attempt, transient: set[str]) -> None:
        """After a ready start: keep its relaxations for the next start, or forget them if none were needed."""
        if not original.ladder_setting("remember"):
            return
        path, key = remembered.key_for(original, self.ctx.gpus, self._vllm_version(), self.ctx.environ)
        relaxed = {name: new for name, (_, new) in self.changed(original, attempt.profile).items()
                   if name not in transient}
        if not relaxed:
            remember.forget(path)
            return
        est = self.ctx.pre.estimate
        error = remember.save(path, key, relaxed, now(), est.max_fitting_model_len if est is not None else None)
        if error:
            self.ctx.status.message(error)
        else:
            self.ctx.status.message("remembered for the next start of this profile: "
                                    + ", ".join(f"{k} {v}" for k, v in relaxed.items()))
