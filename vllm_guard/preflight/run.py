"""The preflight: every check in order, the settled findings and the verdict, judged at the utilization that is free."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from vllm_guard.checkids import CHECK_IDS, GPU_DEPENDENT
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.preflight.findings import SKIP, Context, Finding, settle, verdict
from vllm_guard.preflight.gpu_checks import (
    check_gpu_count,
    check_gpu_dtype,
    check_gpu_free_memory,
    check_gpu_kv_cache_dtype,
    check_gpu_p2p,
    check_gpu_present,
    check_gpu_quantization,
)
from vllm_guard.preflight.host_checks import (
    check_host_disk,
    check_host_nofile,
    check_host_ram,
    check_host_shm,
    check_net_port,
    check_vllm_executable,
)
from vllm_guard.preflight.memory import DEFAULT_UTILIZATION, MIB, Estimate, estimate
from vllm_guard.preflight.memory_params import Params
from vllm_guard.preflight.model_checks import (
    check_model_known,
    check_model_kv_fit,
    check_model_max_len,
    check_model_tp_divisible,
    check_model_weights_fit,
)
from vllm_guard.profile.model import Profile, world_size

CHECKS: tuple[Callable[[Context], Finding], ...] = (
    check_gpu_present, check_gpu_count, check_gpu_free_memory, check_model_known, check_model_weights_fit,
    check_model_kv_fit, check_model_max_len, check_model_tp_divisible, check_gpu_dtype, check_gpu_kv_cache_dtype,
    check_gpu_quantization, check_gpu_p2p, check_host_ram, check_host_shm, check_host_disk, check_net_port,
    check_host_nofile, check_vllm_executable,
)


def run_checks(profile: Profile, facts: Facts, params: Params, estimate: Estimate | None) -> list[Finding]:
    """Run every check, then apply the profile's skip and warn-only lists."""
    ctx = Context(profile, facts, params, estimate)
    skip = set(profile.check_setting("skip"))
    warn_only = set(profile.check_setting("warn-only"))
    findings = []
    cpu_build = facts.vllm_build is not None and facts.vllm_build.is_cpu
    no_gpu = not facts.gpus or cpu_build
    for check, check_id in zip(CHECKS, CHECK_IDS, strict=True):
        if no_gpu and check_id in GPU_DEPENDENT and check_id not in skip:
            why = "a CPU build of vLLM uses no GPU" if cpu_build else "no GPU to check against"
            findings.append(Finding(check_id, SKIP, why))
            continue
        findings.append(settle(check_id, partial(check, ctx), skip, warn_only))
    return findings


@dataclass(frozen=True)
class Preflight:
    profile: Profile  # with max-model-len = "auto" resolved to a number
    params: Params
    estimate: Estimate | None
    findings: list[Finding]
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return verdict(self.findings)


def preflight(profile: Profile, facts: Facts) -> Preflight:
    """Estimate memory, resolve max-model-len "auto", and run every check."""
    notes: list[str] = []
    params = replace(Params.from_values(profile.value, profile.is_set), draft=facts.draft_model)
    target = facts.gpus[: world_size(profile)]
    sized = [g for g in target if g.memory_total_bytes]
    gpu = min(sized, key=lambda g: g.memory_total_bytes or 0) if sized else None
    requested = params.utilization
    can_have = available_utilization(target, int(profile.check_setting("free-memory-margin-mib")) * MIB)
    if can_have is not None and can_have < (requested or DEFAULT_UTILIZATION):
        # Other processes hold memory: vLLM would refuse to start at the requested utilization, so every
        # memory check (weights, activations, graphs, KV) is judged at what can be had.
        params = replace(params, utilization=max(can_have, 0.0))
        notes.append(f"other processes hold GPU memory: the memory checks use utilization {max(can_have, 0.0):.2f}, "
                     f"what is free now, not {requested or DEFAULT_UTILIZATION:g}")
    est = estimate(facts.model, gpu, params) if gpu is not None else None
    if params.max_model_len == -1:
        profile, params, est, note = _resolve_auto(profile, facts, params, est, gpu)
        notes.append(note)
    params = replace(params, utilization=requested)
    findings = run_checks(profile, facts, params, est)
    if est is not None:  # what the memory model could not know, or changed from the checkpoint (weights.py),
        # unless a check's finding says it already
        notes += [n for n in est.notes if n not in notes and not any(n in f.message for f in findings)]
    return Preflight(profile, params, est, findings, tuple(notes))


def available_utilization(gpus: tuple[Gpu, ...], margin_bytes: int) -> float | None:
    """The highest --gpu-memory-utilization (in hundredths) that the free memory of every GPU allows, less the
    margin; None when a GPU's memory is unknown. Can be 0 or below when a GPU is full."""
    fractions = []
    for g in gpus:
        if not g.memory_total_bytes or g.memory_free_bytes is None:
            return None
        fractions.append(math.floor((g.memory_free_bytes - margin_bytes) / g.memory_total_bytes * 100) / 100)
    return min(fractions) if fractions else None


def _resolve_auto(
    profile: Profile, facts: Facts, params: Params, est: Estimate | None, gpu: Gpu | None
) -> tuple[Profile, Params, Estimate | None, str]:
    """max-model-len "auto" (or -1) stays vLLM's: vLLM fits it exactly after loading. The checks judge
    the length the guard predicts vLLM will choose; only guard.max-model-len-cap below that prediction
    makes the guard pass vLLM a number (the cap)."""
    derived = facts.model.derived_max_len
    if est is None or gpu is None or est.max_model_len is None:
        return profile, params, est, 'max-model-len "auto": vLLM will fit it; the guard could not predict it here'
    length = est.max_model_len
    why = f"the longest that fits the predicted KV cache ({est.max_fitting_model_len})"
    if derived is not None and length >= derived:
        why = f"the model's own maximum ({derived})"
    cap = profile.setting("max-model-len-cap")
    if cap is not None and length > cap:
        profile = profile.with_value("max_model_len", cap)
        params = replace(params, max_model_len=cap)
        return (profile, params, estimate(facts.model, gpu, params),
                f'max-model-len "auto": vLLM would choose about {length} ({why}); guard.max-model-len-cap passes '
                f"{cap} instead")
    params = replace(params, max_model_len=length)
    return (profile, params, estimate(facts.model, gpu, params),
            f'max-model-len "auto" passed to vLLM, which fits it after loading; the guard predicts about {length}: '
            f"{why}")
