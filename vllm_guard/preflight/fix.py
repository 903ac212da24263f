"""Pure: one complete fix for a failed preflight, found by trying candidates through the preflight itself.

A fix is a set of values (vLLM options as `vllm serve` spells them, and guard settings) that, applied
together, make `check` pass on the same machine: utilization and max-model-len together, fp8 KV where the
GPU runs it natively, a smaller batch, no CUDA graphs, or other GPUs of the box. Each candidate is
verified by running the preflight on it, so a fix never leads into a second failure. When none passes,
the verdict says so, and whether the profile would fit on idle GPUs and how much memory that takes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_guard.facts.machine import Facts
from vllm_guard.preflight.findings import FAIL
from vllm_guard.preflight.gpu_checks import refuses_float32
from vllm_guard.preflight.memory import DEFAULT_UTILIZATION, GIB, MIB
from vllm_guard.preflight.memory_params import FLOAT32
from vllm_guard.preflight.run import Preflight, available_utilization, preflight
from vllm_guard.profile.model import Profile, world_size
from vllm_guard.suggest import flag, toml_line

# Failures the values below can mend; any other failed check (the port, host RAM, the executable ...)
# needs something the guard cannot set, so no fix is offered for it.
MENDABLE = frozenset({"gpu.free_memory", "model.weights_fit", "model.kv_fit", "model.max_len", "gpu.dtype",
                      "gpu.kv_cache_dtype", "gpu.count", "model.tp_divisible"})
# The layout checks: while one fails, no value of memory or length can pass; a layout that fits comes first.
LAYOUT = frozenset({"gpu.count", "model.tp_divisible"})
TP_SIZES = (1, 2, 4, 8, 16)
MAX_ALTERNATIVES = 3  # per check: the verdict stays readable
# A shorter max-model-len is offered only down to this (or the requested length when that is shorter):
# below it a "fix" serves little more than a greeting.
MIN_USEFUL_LEN = 1024


@dataclass(frozen=True)
class Fix:
    """Values that make the preflight pass, or None and why not."""

    vllm: dict[str, Any] | None  # option (vllm serve spelling) -> value; None: no fix exists
    guard: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # what the fix does, or why there is none

    @property
    def exists(self) -> bool:
        return self.vllm is not None

    def to_dict(self) -> dict[str, Any] | None:
        return None if self.vllm is None else {"vllm": self.vllm, "guard": self.guard}

    def command_line(self) -> str:
        """The vLLM options as flags, and the guard settings, for a one-line display."""
        parts = [flag(name, value) for name, value in (self.vllm or {}).items()]
        parts += [f"guard.{toml_line(k, v)}" for k, v in self.guard.items()]
        return " ".join(parts)

    def profile_lines(self) -> str:
        """The same values as a profile's lines, table by table, to paste into it."""
        tables = [("vllm", self.vllm or {}), ("guard", self.guard)]
        return "; ".join(f"[{table}] " + ", ".join(toml_line(k, v) for k, v in values.items())
                         for table, values in tables if values)


def find_fix(profile: Profile, facts: Facts, pre: Preflight) -> Fix | None:
    """The least change that makes the preflight pass; None when nothing fails."""
    failing = [f for f in pre.findings if f.status == FAIL]
    if not failing:
        return None
    other = sorted({f.id for f in failing} - MENDABLE)
    if other:
        return Fix(None, reason="no values the guard can set mend " + ", ".join(other)
                   + ": see each check's fix")
    found = _search(profile, facts, layout_fails=any(f.id in LAYOUT for f in failing))
    if found is not None:
        return found
    return Fix(None, reason=_why_not(profile, facts))


def _search(profile: Profile, facts: Facts, layout_fails: bool) -> Fix | None:
    """Layouts first (the GPUs, the tensor-parallel size), then the values within each."""
    layouts: list[tuple[Facts, dict[str, Any], dict[str, Any]]] = [] if layout_fails else [(facts, {}, {})]
    other = _other_gpus(profile, facts)
    if other is not None:
        layouts.append((*other, {}))
        # Other GPUs of the box idle enough for the profile as written beat any value lowered here.
        if _passes(profile, other[0], {}):
            return Fix({}, other[1], _describe(profile, other[0], {}, other[1]))
    if layout_fails:
        layouts += [(facts, {}, {"tensor_parallel_size": tp}) for tp in _tensor_parallel_sizes(profile, facts)]
    for first_only in (True, False):
        for trial_facts, guard, layout in layouts:
            laid_out = _apply(profile, layout)
            for values in _candidates(laid_out, trial_facts, first_only=first_only):
                changes = {**layout, **values}
                if _passes(profile, trial_facts, changes):
                    return Fix(_spell(changes), guard, _describe(profile, trial_facts, changes, guard))
    return None


def _tensor_parallel_sizes(profile: Profile, facts: Facts) -> list[int]:
    """Tensor-parallel sizes that fit the visible GPUs, nearest the requested first (the larger of two)."""
    tp = int(profile.value("tensor_parallel_size") or 1)
    others = world_size(profile) // max(tp, 1)  # pipeline x data parallel stay as written
    have = len(facts.gpus)
    sizes = [t for t in TP_SIZES if t != tp and t * others <= have]
    return sorted(sizes, key=lambda t: (abs(t - tp), -t))


def _candidates(profile: Profile, facts: Facts, *, first_only: bool) -> Iterator[dict[str, Any]]:
    """Changes (by option dest) in order of preference; the first one alone when ``first_only``."""
    base: dict[str, Any] = {}
    requested = profile.value("gpu_memory_utilization") if profile.is_set("gpu_memory_utilization") else None
    target = facts.gpus[: world_size(profile)]
    can_have = available_utilization(target, int(profile.check_setting("free-memory-margin-mib")) * MIB)
    if can_have is not None and can_have < (requested or DEFAULT_UTILIZATION):
        if can_have <= 0.05:
            return
        base["gpu_memory_utilization"] = can_have
    derived = facts.model.derived_max_len
    length = profile.value("max_model_len")
    if derived and isinstance(length, int) and length > derived and not facts.environ_allows_long_len:
        base["max_model_len"] = derived
    cc = min((g.compute_capability for g in target if g.compute_capability), default=None)
    if cc is not None and cc < (8, 0) and profile.value("dtype") == "bfloat16":
        base["dtype"] = "half"  # bfloat16 needs compute capability 8.0
    kv = str(profile.value("kv_cache_dtype") or "auto")
    if kv.startswith("fp8") and cc is not None and cc < (8, 0):
        base["kv_cache_dtype"] = "auto"
    dtype = str(profile.value("dtype") or "auto")
    if refuses_float32(dtype, profile.value("quantization") or facts.model.quant_method):
        base["dtype"] = "auto"  # vLLM refuses float32 activations with this quantization (gpu.dtype)
    yield base
    if first_only:
        return
    fp8_native = cc is not None and cc >= (8, 9) and not facts.model.is_mla and kv == "auto" \
        and profile.value("kv_cache_memory_bytes") is None
    seqs = profile.value("max_num_seqs") if profile.is_set("max_num_seqs") else None
    variants: list[dict[str, Any]] = [{}]
    if dtype in FLOAT32 and "dtype" not in base:
        variants.append({"dtype": "auto"})  # the model's own 16 bits: half the weights and the KV cache
    if fp8_native:
        variants.append({"kv_cache_dtype": "fp8"})
    variants.append({"max_num_seqs": min(int(seqs or 256), 64)})  # fewer graph sizes, a smaller sampler
    if not profile.value("enforce_eager"):
        variants.append({"enforce_eager": True})
        variants.append({"max_num_seqs": min(int(seqs or 256), 64), "enforce_eager": True,
                         **({"kv_cache_dtype": "fp8"} if fp8_native else {})})
    for variant in variants:
        trial = {**base, **variant}
        if variant:
            yield trial
        fitted = _longest_length(profile, facts, trial)
        wanted = length if isinstance(length, int) and length > 0 else derived
        if fitted and wanted and fitted < wanted and fitted >= min(MIN_USEFUL_LEN, wanted):
            yield {**trial, "max_model_len": fitted}


def _longest_length(profile: Profile, facts: Facts, changes: dict[str, Any]) -> int | None:
    pre = preflight(_apply(profile, changes), facts)
    e = pre.estimate
    return e.max_fitting_model_len if e is not None else None


def _apply(profile: Profile, changes: dict[str, Any]) -> Profile:
    for dest, value in changes.items():
        profile = profile.with_value(dest, value)
    return profile


def _passes(profile: Profile, facts: Facts, changes: dict[str, Any]) -> bool:
    return preflight(_apply(profile, changes), facts).verdict != FAIL


def _spell(changes: dict[str, Any]) -> dict[str, Any]:
    return {dest.replace("_", "-"): value for dest, value in changes.items()}


def _other_gpus(profile: Profile, facts: Facts) -> tuple[Facts, dict[str, Any]] | None:
    """The GPUs of the box the layout would best use: no processes first, then the most free memory."""
    size = world_size(profile)
    ranked = sorted(facts.machine.gpus, key=lambda g: g.idleness)
    chosen = tuple(sorted(ranked[:size], key=lambda g: g.index))
    if len(chosen) < size or chosen == facts.gpus[:size]:
        return None
    return (replace(facts, gpus=chosen, cuda_visible_devices=",".join(str(g.index) for g in chosen)),
            {"gpus": [g.index for g in chosen]})


def _describe(profile: Profile, facts: Facts, changes: dict[str, Any], guard: dict[str, Any]) -> str:
    parts = []
    if "gpus" in guard:
        parts.append(f"GPU(s) {', '.join(str(i) for i in guard['gpus'])} have the memory free "
                     '(guard.gpus = "auto" takes the idlest at each start)')
    if "gpu_memory_utilization" in changes:
        parts.append(f"utilization {changes['gpu_memory_utilization']:.2f} is what other processes leave free")
    if "max_model_len" in changes:
        parts.append(f"max-model-len {changes['max_model_len']} is the longest whose KV cache fits there")
    if "tensor_parallel_size" in changes:
        parts.append(f"tensor parallel size {changes['tensor_parallel_size']} fits the {len(facts.gpus)} visible "
                     "GPU(s) and splits the heads evenly")
    dtype_why = "the model's own 16 bits" if changes.get("dtype") == "auto" else "float16 on this GPU"
    for dest, why in (("kv_cache_dtype", "KV cache dtype"), ("max_num_seqs", "a smaller batch"),
                      ("enforce_eager", "no CUDA graphs"), ("dtype", dtype_why)):
        if dest in changes and dest != "max_model_len":
            parts.append(f"{why} ({dest.replace('_', '-')} {changes[dest]})")
    return "; ".join(parts) or "these values pass every check"


def _why_not(profile: Profile, facts: Facts) -> str:
    """No fix here: would the profile fit on idle GPUs, and with how much free memory?"""
    size = world_size(profile)
    gpus = facts.machine.gpus if len(facts.machine.gpus) >= size else facts.gpus
    idle = tuple(replace(g, memory_free_bytes=g.memory_total_bytes, memory_used_bytes=0, processes=())
                 for g in sorted(gpus, key=lambda g: -(g.memory_total_bytes or 0))[:size])
    if len(idle) < size or any(g.memory_total_bytes is None for g in idle):
        return "does not fit in what is free now"
    idle_facts = replace(facts, gpus=idle)
    for first_only in (True, False):
        for changes in _candidates(profile, idle_facts, first_only=first_only):
            if _passes(profile, idle_facts, changes):
                util = changes.get("gpu_memory_utilization") or profile.value("gpu_memory_utilization") \
                    or DEFAULT_UTILIZATION
                margin = int(profile.check_setting("free-memory-margin-mib")) * MIB
                need = min(math.ceil((g.memory_total_bytes or 0) * util) + margin for g in idle)
                how = f" with {Fix(_spell(changes)).command_line()}" if changes else ""
                return (f"does not fit in what is free now; it would fit on an idle GPU{how}, or when "
                        f"{need / GIB:.1f} GiB are free on each of {size} GPU(s)")
    return "does not fit in what is free now, nor on an idle GPU of this machine: a quantized checkpoint " \
        "or more GPUs (--tensor-parallel-size) would be needed"


def checked(profile: Profile, facts: Facts) -> Preflight:
    """The preflight as the user sees it: every check, and only the alternatives that pass."""
    return verify_alternatives(preflight(profile, facts), facts)


def verify_alternatives(pre: Preflight, facts: Facts) -> Preflight:
    """Each alternative a check offers, tried through the preflight: kept when applied alone it mends that
    check and breaks no other; a KV-cache alternative that still falls short is offered together with the
    longest max-model-len that fits under it; anything else is dropped. The check's fix is written from
    what is kept, so every value the verdict prints passes when applied."""
    failing = {f.id for f in pre.findings if f.status == FAIL}
    findings = []
    for f in pre.findings:
        if f.status != FAIL or not f.options:
            findings.append(f)
            continue
        kept, whole = [], []
        for values, why in f.options:
            mended = _mending(pre.profile, facts, values, f.id, failing)
            if mended is not None:
                values_now, passes = mended
                option = (values_now, why if values_now == values else f"{why}, with the longest max-model-len "
                          "that fits")
                kept.append(option)
                if passes:
                    whole.append(option)
        # Where some alternatives pass `check` as a whole, offer only those: one that mends this check but
        # leaves another failing is no fix to apply on its own.
        kept = (whole or kept)[:MAX_ALTERNATIVES]
        text = "; or ".join(_flags(values) + (f" ({why})" if why else "") for values, why in kept)
        if f.advice:  # an advice written to follow the values ("or ...") stands alone when none is kept
            text = f"{text}; {f.advice}" if text else f.advice.removeprefix("or ")
        findings.append(replace(f, fix=text or "no single value mends this on its own: see the verdict's fix",
                                options=tuple(kept)))
    return replace(pre, findings=findings)


def _mending(profile: Profile, facts: Facts, values: dict[str, Any], check_id: str,
             failing: set[str]) -> tuple[dict[str, Any], bool] | None:
    """``values``, or them with a fitting max-model-len, when that mends ``check_id`` and breaks no other; and
    whether the preflight then passes as a whole."""
    for trial in _with_fitting_length(profile, facts, values):
        after = {f.id for f in preflight(_apply(profile, trial), facts).findings if f.status == FAIL}
        if check_id not in after and after <= failing - {check_id}:
            return trial, not after
    return None


def _with_fitting_length(profile: Profile, facts: Facts, values: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield values
    if "max_model_len" not in values:
        fitted = _longest_length(profile, facts, values)
        length = profile.value("max_model_len")
        wanted = length if isinstance(length, int) and length > 0 else facts.model.derived_max_len
        if fitted and wanted and fitted < wanted and fitted >= min(MIN_USEFUL_LEN, wanted):
            yield {**values, "max_model_len": fitted}


def _flags(values: dict[str, Any]) -> str:
    return " ".join(flag(dest.replace("_", "-"), value) for dest, value in values.items())
