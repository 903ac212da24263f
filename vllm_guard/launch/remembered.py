"""What a relaxed start left for the next one, and what the first attempt therefore starts with.

Pure but for reading the state file: ``serve`` (through the Relaxer) and ``serve --dry-run`` both decide the
first start here, so the dry run shows the command line the real start uses, without the supervisor (and the
classifier it brings) being imported for a dry run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vllm_guard.diagnose import ladder
from vllm_guard.facts.machine import Gpu
from vllm_guard.options.values import ValueProblem, coerce_profile_value
from vllm_guard.preflight.memory import Estimate
from vllm_guard.probes.select import gpu_kind
from vllm_guard.profile.model import Profile
from vllm_guard.profile.settings import AUTO_GPUS, INT_MAX
from vllm_guard.state import attempts as attempt_log
from vllm_guard.state import remember

# ladder.remember: a profile whose max-model-len is at most this share of the predicted fit is tried as written.
FIT_MARGIN = 0.9

# The vLLM options the ladder may change, by their profile spelling and the profile's dest.
LADDER_DESTS = {"max-model-len": "max_model_len", "gpu-memory-utilization": "gpu_memory_utilization",
                "max-num-batched-tokens": "max_num_batched_tokens", "max-num-seqs": "max_num_seqs",
                "enforce-eager": "enforce_eager", "kv-cache-dtype": "kv_cache_dtype",
                "disable-custom-all-reduce": "disable_custom_all_reduce"}
# What a relaxation also sets in vLLM's environment: a start hung in NCCL or custom all-reduce set-up retries
# without GPU peer-to-peer at all (NCCL reads NCCL_P2P_DISABLE at communicator init; ladder.P2P_HANG_STAGES).
IMPLIED_ENV: dict[str, dict[str, str]] = {"disable-custom-all-reduce": {"NCCL_P2P_DISABLE": "1"}}
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


def with_relaxation(profile: Profile, name: str, value: Any) -> Profile:
    """The profile with one relaxation: its option, and the environment it implies (IMPLIED_ENV)."""
    profile = profile.with_value(LADDER_DESTS[name], value)
    env = IMPLIED_ENV.get(name) if value else None
    return replace(profile, env={**profile.env, **env}) if env else profile


def effective_value(profile: Profile, dest: str, estimate: Estimate | None,
                    log_context: Mapping[str, Any] | None = None) -> Any:
    """The value vLLM really runs with: the profile's, else what vLLM's log said, else the
    preflight's resolution of vLLM's defaults, else the option table's default."""
    if profile.is_set(dest):
        return profile.value(dest)
    if log_context and log_context.get(dest) is not None:
        return log_context[dest]
    attr = ESTIMATE_ATTRS.get(dest)
    if estimate is not None and attr is not None:
        return getattr(estimate, attr)
    return profile.value(dest)


def key_for(profile: Profile, gpus: Sequence[Gpu], vllm_version: str | None,
            environ: Mapping[str, str]) -> tuple[Path, remember.Key]:
    """Where this profile's relaxations are kept, and the key they hold for (content, GPUs, vLLM)."""
    # guard.gpus = "auto" may take other GPUs at each start: what was learnt holds for GPUs of the same kind.
    ids = [g.uuid for g in gpus] if profile.setting("gpus") != AUTO_GPUS else \
        ["{}|{}|{}".format(*gpu_kind(g)) for g in gpus]
    key = remember.make_key(profile.sha256, ids, vllm_version)
    stem = attempt_log.profile_stem(profile.name, profile.path, profile.model)
    return remember.path_for(stem, environ), key


def load(original: Profile, gpus: Sequence[Gpu], vllm_version: str | None, environ: Mapping[str, str],
         notes: list[str]) -> remember.Remembered | None:
    """What is kept for this profile (its own file, else the name-keyed file of earlier guards under the same
    full key), checked as profile values are; anything else is ignored with a note, never used."""
    path, key = key_for(original, gpus, vllm_version, environ)
    kept = remember.load(path, key, notes)
    if kept is None and not notes:
        path = remember.legacy_path(original.name, environ)
        kept = remember.load(path, key, notes)
    if kept is not None:
        values, problem = check_remembered(original, kept.values)
        if problem is not None:
            notes.append(f"ignored the remembered relaxations in {path}: {problem}")
            return None
        kept = replace(kept, values=values)
    return kept


@dataclass(frozen=True)
class FirstStart:
    profile: Profile  # what the first attempt starts with
    values: dict[str, Any] = field(default_factory=dict)  # the remembered values applied
    note: str | None = None  # what to say about it
    ignored: tuple[str, ...] = ()  # remembered files passed over, and why


def first_start(original: Profile, estimate: Estimate | None, gpus: Sequence[Gpu], vllm_version: str | None,
                environ: Mapping[str, str]) -> FirstStart:
    """The profile as written, or with the relaxations that worked last time."""
    if not original.ladder_setting("remember"):
        return FirstStart(original)
    notes: list[str] = []
    kept = load(original, gpus, vllm_version, environ, notes)
    if kept is None:
        return FirstStart(original, ignored=tuple(notes))
    values = kept.values
    fit_now = estimate.max_fitting_model_len if estimate is not None else None
    wanted = effective_value(original, "max_model_len", estimate)
    # The prediction was too optimistic once already (that is why the ladder relaxed): only a clearly
    # better one now (more memory free than then) earns the profile as written another try.
    better = fit_now is not None and (kept.predicted_fit is None or fit_now >= kept.predicted_fit / FIT_MARGIN)
    if set(values) <= {"max-model-len"} and better and isinstance(wanted, int) and fit_now and \
            wanted <= FIT_MARGIN * fit_now:
        return FirstStart(original, note=(f"remembered {values} from a relaxed start, but the profile as written is "
                                          f"now predicted to fit with a clear margin (max-model-len {wanted} of "
                                          f"{fit_now}): trying it as written first"), ignored=tuple(notes))
    profile = original
    for name, value in values.items():
        if name in LADDER_DESTS:
            profile = with_relaxation(profile, name, value)
    what = ", ".join(f"{k} {v}" for k, v in values.items())
    return FirstStart(profile, dict(values), (
        f"STARTING FROM REMEMBERED RELAXATIONS: {what} (a relaxed start of this profile on these GPUs with this "
        f"vLLM needed them; `vllm-guard attempts --forget {original.path or original.name}` drops them)"),
        tuple(notes))
