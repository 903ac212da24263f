"""The values a start runs with, and how the ladder may relax them: ``Relaxer``.

The effective value of each option the ladder changes (defaults resolved), the ladder's ``Settings`` and
``Limits`` for one failed attempt, utilization only as far as the GPUs have memory free, fp8 support, and
ladder.remember: the relaxations that worked last time, kept and used again, or forgotten.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_guard.diagnose import ladder
from vllm_guard.launch.journal import Attempt, now
from vllm_guard.options.values import ValueProblem, coerce_profile_value
from vllm_guard.probes.select import gpu_kind
from vllm_guard.profile.model import Profile
from vllm_guard.profile.settings import AUTO_GPUS, INT_MAX
from vllm_guard.state import attempts as attempt_log
from vllm_guard.state import remember

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext

# ladder.remember: a profile whose max-model-len is at most this share of the predicted fit is tried as written.
FIT_MARGIN = 0.9

# The vLLM options the ladder may change, by their profile spelling and the profile's dest.
LADDER_DESTS = {"max-model-len": "max_model_len", "gpu-memory-utilization": "gpu_memory_utilization",
                "max-num-batched-tokens": "max_num_batched_tokens", "max-num-seqs": "max_num_seqs",
                "enforce-eager": "enforce_eager", "kv-cache-dtype": "kv_cache_dtype"}
# Where the preflight's memory estimate holds vLLM's resolved default for an option.
# Not the utilization: on a shared GPU the preflight estimates at what is free (checks.preflight), while vLLM
# runs with its own default unless told otherwise.
ESTIMATE_ATTRS = {"max_model_len": "max_model_len", "max_num_batched_tokens": "max_num_batched_tokens",
                  "max_num_seqs": "max_num_seqs"}


def check_remembered(profile: Profile, values: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Remembered values as the profile would hold them, or why they cannot be used: each must be an option the
    ladder changes, a value the option table accepts (type, choices, range: utilization 5.0, max-model-len 0 or
    NaN, a kv-cache-dtype of "--api-key=x" are not), and within the ladder's own limits. The reason never holds a
    control character."""
    checked_values: dict[str, Any] = {}
    problem = None
    for name, value in values.items():
        checked, problem = _check_one(profile, name, value)
        if problem is not None:
            return {}, problem
        checked_values[name] = checked
    return checked_values, problem


def _check_one(profile: Profile, name: str, value: Any) -> tuple[Any, str | None]:
    lim = limits(profile)
    dest = LADDER_DESTS.get(name)
    spec = profile.options.by_dest.get(dest) if dest is not None else None
    if dest is None or spec is None:
        return None, f"{remember.printable(name, 60)} is not an option the ladder changes"
    try:
        checked = coerce_profile_value(spec, value)
    except ValueProblem as e:
        return None, f"{name}: {remember.printable(str(e), 200)}"
    if isinstance(checked, str) and not (checked.isprintable() and not checked.startswith("-")):
        return None, f"{name}: not a value vLLM takes"
    if isinstance(checked, int) and not isinstance(checked, bool) and checked > INT_MAX:
        return None, f"{name}: {remember.printable(str(checked), 24)} is more than vLLM's int options hold"
    if dest == "max_model_len" and not (isinstance(checked, int) and checked >= lim.min_max_model_len):
        return None, (f"max-model-len {remember.printable(repr(value), 40)} is below the ladder's floor "
                      f"{lim.min_max_model_len} (min-max-model-len)")
    if dest == "gpu_memory_utilization" and not (
            lim.min_gpu_memory_utilization <= float(checked) <= lim.max_gpu_memory_utilization):
        return None, (f"gpu-memory-utilization {checked:g} is outside the ladder's limits "
                      f"{lim.min_gpu_memory_utilization:g}-{lim.max_gpu_memory_utilization:g}")
    return checked, None


def limits(profile: Profile) -> ladder.Limits:
    s = profile.ladder_setting
    return ladder.Limits(
        min_max_model_len=int(s("min-max-model-len")),
        min_gpu_memory_utilization=float(s("min-gpu-memory-utilization")),
        max_gpu_memory_utilization=float(s("max-gpu-memory-utilization")),
        allow_lower_utilization=bool(s("allow-lower-utilization")),
        allow_fp8_kv=bool(s("allow-fp8-kv-cache")),
        allow_enforce_eager=bool(s("allow-enforce-eager")),
    )


class Relaxer:
    """The ladder's side of a launch: effective values, the next step, and what is remembered."""

    def __init__(self, ctx: LaunchContext) -> None:
        self.ctx = ctx

    # --- effective values --------------------------------------------------------------------------

    def effective(self, profile: Profile, dest: str, log_context: Mapping[str, Any] | None = None) -> Any:
        """The value vLLM really runs with: the profile's, else what vLLM's log said, else the
        preflight's resolution of vLLM's defaults, else the option table's default."""
        if profile.is_set(dest):
            return profile.value(dest)
        if log_context and log_context.get(dest) is not None:
            return log_context[dest]
        attr = ESTIMATE_ATTRS.get(dest)
        estimate = self.ctx.pre.estimate
        if estimate is not None and attr is not None:
            return getattr(estimate, attr)
        return profile.value(dest)

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

    def _remember_key(self, profile: Profile) -> tuple[Path, remember.Key]:
        build = self.ctx.facts.vllm_build
        # guard.gpus = "auto" may take other GPUs at each start: what was learnt holds for GPUs of the same kind.
        gpus = [g.uuid for g in self.ctx.gpus] if profile.setting("gpus") != AUTO_GPUS else \
            ["{}|{}|{}".format(*gpu_kind(g)) for g in self.ctx.gpus]
        key = remember.make_key(profile.sha256, gpus, build.version if build else None)
        stem = attempt_log.profile_stem(profile.name, profile.path, profile.model)
        return remember.path_for(stem, self.ctx.environ), key

    def _load_remembered(self, original: Profile) -> remember.Remembered | None:
        """What is kept for this profile (its own file, else the name-keyed file of earlier guards under the same
        full key), checked as profile values are; anything else is ignored with a note, never used."""
        path, key = self._remember_key(original)
        notes: list[str] = []
        kept = remember.load(path, key, notes)
        if kept is None and not notes:
            path = remember.legacy_path(original.name, self.ctx.environ)
            kept = remember.load(path, key, notes)
        if kept is not None:
            values, problem = check_remembered(original, kept.values)
            if problem is not None:
                notes.append(f"ignored the remembered relaxations in {path}: {problem}")
                kept = None
            else:
                kept = replace(kept, values=values)
        for note in notes:
            self.ctx.status.message(note)
        return kept

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
        """What the first attempt starts with, and why, without saying it: `serve` and `serve --dry-run` share it,
        so the dry run shows the command line the real start uses."""
        if not original.ladder_setting("remember"):
            return original, {}, None
        kept = self._load_remembered(original)
        if kept is None:
            return original, {}, None
        values = kept.values
        est = self.ctx.pre.estimate
        fit_now = est.max_fitting_model_len if est is not None else None
        wanted = self.effective(original, "max_model_len")
        # The prediction was too optimistic once already (that is why the ladder relaxed): only a clearly
        # better one now (more memory free than then) earns the profile as written another try.
        better = fit_now is not None and (kept.predicted_fit is None or fit_now >= kept.predicted_fit / FIT_MARGIN)
        if set(values) <= {"max-model-len"} and better and isinstance(wanted, int) and fit_now and \
                wanted <= FIT_MARGIN * fit_now:
            return original, {}, (f"remembered {values} from a relaxed start, but the profile as written is now "
                                  f"predicted to fit with a clear margin (max-model-len {wanted} of {fit_now}): "
                                  "trying it as written first")
        profile = original
        for name, value in values.items():
            if name in LADDER_DESTS:
                profile = profile.with_value(LADDER_DESTS[name], value)
        what = ", ".join(f"{k} {v}" for k, v in values.items())
        return profile, dict(values), (
            f"STARTING FROM REMEMBERED RELAXATIONS: {what} (a relaxed start of this profile on these GPUs with this "
            f"vLLM needed them; `vllm-guard attempts --forget {original.path or original.name}` drops them)")

    def remember(self, original: Profile, attempt: Attempt, transient: set[str]) -> None:
        """After a ready start: keep its relaxations for the next start, or forget them if none were needed."""
        if not original.ladder_setting("remember"):
            return
        path, key = self._remember_key(original)
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
