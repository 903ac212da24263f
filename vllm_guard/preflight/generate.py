"""Pure: fit a profile to a machine for `vllm-guard init`, saying how each value was chosen.

Utilization stays inside the 0.85-0.92 corridor (domain.md: the usual margin) and below what other
processes leave free; on a shared GPU that leaves less, it is what they leave, with a warning (what
`check`'s fix offers there). max-model-len is the longest that
lets the requested number of full-length requests fit; fp8 KV and
enforce-eager are used only when needed, and fp8 only where the GPU runs it natively.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.kv_cache import kv_bytes_for_length
from vllm_guard.preflight.memory import GIB, MIB, Estimate, estimate, largest_fitting
from vllm_guard.preflight.memory_params import Params

CORRIDOR = (0.85, 0.92)
MIN_SHARED_UTILIZATION = 0.05  # below this a shared GPU leaves nothing to fit a model in
MIN_USEFUL_LEN = 1024  # ladder.min-max-model-len's default: the shortest context the ladder would accept
DEFAULT_MARGIN_MIB = 512  # guard.checks.free-memory-margin-mib's default


@dataclass(frozen=True)
class Fitted:
    vllm: dict[str, Any]  # [vllm] keys in profile spelling
    reasons: list[str]
    estimate: Estimate
    gpus: tuple[Gpu, ...] = ()  # the GPUs it was fitted to
    guard_gpus: list[int] | None = None  # guard.gpus to write: set when they are not the first visible ones
    warnings: tuple[str, ...] = ()  # what the user must know before using it (a shared GPU)


class CannotFit(GuardError):
    exit_code = ExitCode.PREFLIGHT_FAILED


def fit(facts: Facts, *, tensor_parallel: int = 1, users: int = 1, context: int | None = None) -> Fitted:
    """Choose utilization, max-model-len, and only if needed fp8 KV or enforce-eager.

    Raises:
        CannotFit: with what would be needed, when no profile in the corridor can start here.
    """
    model = facts.model
    if model.source == "unknown" or model.weights_bytes is None:
        raise CannotFit(f"nothing is known about {model.model}: " + "; ".join(model.notes),
                        hint="check the id, set HF_TOKEN for a gated model, or give a local path")
    if not facts.gpus:
        raise CannotFit(f"no GPU on {facts.machine_origin} to fit a profile to",
                        hint="plan against a snapshot of the GPU machine: run `vllm-guard snapshot -o gpu.json` there, "
                        f"then `vllm-guard init {model.model} --machine gpu.json`")
    derived_limit = model.derived_max_len
    if context is not None and derived_limit is not None and context > derived_limit:
        raise CannotFit(f"--context {context:,} is beyond {model.model}'s own maximum of {derived_limit:,} tokens "
                        f"({model.derived_max_len_key}); vLLM refuses a longer max-model-len",
                        hint=f"--context {derived_limit} or shorter", exit_code=ExitCode.USAGE)
    gpus = facts.gpus[:tensor_parallel]
    if len(gpus) < tensor_parallel or not gpus:
        raise CannotFit(f"tensor parallel {tensor_parallel} needs {tensor_parallel} GPUs; {len(facts.gpus)} visible")
    gpu = min(gpus, key=lambda g: g.memory_total_bytes or 0)
    if gpu.memory_total_bytes is None:
        raise CannotFit("the GPU's memory is unknown")
    reasons: list[str] = []
    warnings: list[str] = []
    util = _utilization(gpus, reasons, warnings)
    params = Params(utilization=util, tensor_parallel_size=tensor_parallel)
    derived = model.derived_max_len or 2048
    cc = min((g.compute_capability for g in gpus if g.compute_capability), default=None)
    fp8_native = cc is not None and cc >= (8, 9) and not model.is_mla
    want = context or derived
    # Below the ladder's floor a profile "fits" only by serving requests too short to be of use
    # (1,000 users at max-model-len 32): the shortest acceptable length is the floor, or the model's own maximum.
    floor = min(MIN_USEFUL_LEN, derived)
    for step in _variants(fp8_native):
        trial = replace(params, **step)
        longest = _longest(facts, gpu, trial, users, derived)
        if longest >= max(context or 1, floor):
            params = trial
            if step.get("kv_cache_dtype"):
                reasons.append("kv-cache-dtype fp8: needed to fit, and this GPU runs it natively (8.9+)")
            if step.get("enforce_eager"):
                reasons.append("enforce-eager: needed to fit (no CUDA graphs: 10-20% less throughput on short "
                               "answers)")
            break
    else:
        relaxed = replace(params, **_variants(fp8_native)[-1])
        if users > 1 and _longest(facts, gpu, relaxed, 1, derived) >= max(context or 1, floor):
            raise CannotFit(_too_many_users(facts, gpu, relaxed, users, context or floor, derived),
                            hint="lower --users, or --context, or add GPUs (-tp N)")
        raise CannotFit(_refusal(facts, gpu, params, users, want, fp8_native),
                        hint="use a quantized checkpoint, more GPUs (-tp N), or a shorter --context")
    length = min(context, longest) if context else longest
    who = f"{users} full-length request{'s' if users > 1 else ''} at once"
    if context:
        reasons.append(f"max-model-len {length}: the requested context, with room for {who}")
    elif length >= derived:
        reasons.append(f"max-model-len {length}: the model's own maximum ({model.derived_max_len_key}), with room "
                       f"for {who}")
    else:
        reasons.append(f"max-model-len {length}: the longest with room for {who} (the model allows {derived:,})")
    if fp8_native and params.kv_cache_dtype == "auto" and length < derived:
        reasons.append("kv-cache-dtype fp8 would double the KV cache here (native on this GPU): a longer "
                       "max-model-len or more users; not set, since this request fits without it")
    params = replace(params, max_model_len=length)
    est = estimate(model, gpu, params)
    values: dict[str, Any] = {"max-model-len": length, "gpu-memory-utilization": util}
    if tensor_parallel > 1:
        values["tensor-parallel-size"] = tensor_parallel
    if params.kv_cache_dtype != "auto":
        values["kv-cache-dtype"] = params.kv_cache_dtype
    if params.enforce_eager:
        values["enforce-eager"] = True
    return Fitted(values, reasons, est, gpus, warnings=tuple(warnings))


def fit_machine(facts: Facts, *, tensor_parallel: int | None = None, users: int = 1,
                context: int | None = None) -> Fitted:
    """Fit to the machine: one GPU if it is enough, else tensor parallel over the GPUs that are free.

    With ``tensor_parallel`` given, exactly that. Otherwise one GPU is tried first (the first visible one,
    then the idlest free one), then tensor parallel sizes 2, 4, 8 that split the model's heads, over free
    GPUs: those that no process holds first, then the most free memory.

    Raises:
        CannotFit: the one-GPU refusal, with every layout tried and why it failed.
    """
    if tensor_parallel is not None:
        return fit(facts, tensor_parallel=tensor_parallel, users=users, context=context)
    try:
        return fit(facts, tensor_parallel=1, users=users, context=context)
    except CannotFit as e:
        if e.exit_code != CannotFit.exit_code or not facts.gpus:
            raise  # a request no layout can meet (a context beyond the model's maximum), or no GPU at all
        refusal = e
    margin = DEFAULT_MARGIN_MIB * MIB
    free = sorted((g for g in facts.gpus if _free_fraction(g, margin) >= CORRIDOR[0]), key=lambda g: g.idleness)
    layouts = [(1, free[:1])] if free and facts.gpus and free[0] is not facts.gpus[0] else []
    layouts += [(tp, free[:tp]) for tp in (2, 4, 8) if tp <= len(free) and tp_splits(facts.model, tp)]
    tried = []
    for tp, chosen in layouts:
        gpus = tuple(sorted(chosen, key=lambda g: g.index))
        try:
            fitted = fit(replace(facts, gpus=gpus), tensor_parallel=tp, users=users, context=context)
        except CannotFit as e:
            tried.append(f"-tp {tp} on GPU(s) {_indices(gpus)}: {e.message}")
            continue
        first = gpus == facts.gpus[:tp]
        why = (f"{'tensor parallel ' + str(tp) if tp > 1 else 'one GPU'} on GPU(s) {_indices(gpus)}: "
               f"{'one GPU is not enough' if tp > 1 else 'the first GPU is busy'} "
               f"({refusal.message}); {'these are' if tp > 1 else 'this one is'} free")
        return replace(fitted, reasons=[why, *fitted.reasons],
                       guard_gpus=None if first else [g.index for g in gpus])
    more = f"; also tried {'; '.join(tried)}" if tried else ""
    if len(facts.gpus) > 1 and not layouts:
        more = f"; no tensor-parallel layout over the {len(free)} free GPU(s) splits this model's heads"
    raise CannotFit(refusal.message + more, hint=refusal.hint)


def tp_splits(m: ModelFacts, tp: int) -> bool:
    """Whether vLLM can split the model over ``tp`` GPUs (the rules of checks.check_model_tp_divisible)."""
    if m.num_attention_heads is None or m.num_attention_heads % tp:
        return False
    kv = m.num_kv_heads
    if kv and not m.is_mla and ((tp >= kv and tp % kv) or (tp < kv and kv % tp)):
        return False
    group = m.quant_group_size
    return not (group and group > 0 and m.intermediate_size and (m.intermediate_size // tp) % group)


def _free_fraction(g: Gpu, margin: int) -> float:
    return ((g.memory_free_bytes or 0) - margin) / (g.memory_total_bytes or 1)


def _indices(gpus: tuple[Gpu, ...]) -> str:
    return ", ".join(str(g.index) for g in gpus)


def _utilization(gpus: tuple[Gpu, ...], reasons: list[str], warnings: list[str]) -> float:
    margin = DEFAULT_MARGIN_MIB * MIB
    free_util = min(
        math.floor(((g.memory_free_bytes or 0) - margin) / (g.memory_total_bytes or 1) * 100) / 100 for g in gpus
    )
    if free_util <= MIN_SHARED_UTILIZATION:
        raise CannotFit(
            f"other processes leave only {max(free_util, 0):.2f} of the GPU free",
            hint="wait for the GPU, or choose another with --machine / CUDA_VISIBLE_DEVICES")
    if free_util < CORRIDOR[0]:
        # A shared GPU: what `check` offers as its fix (the utilization the others leave), said loudly rather
        # than refused; the weights and the KV cache are then fitted to it like any other budget.
        held = ", ".join(f"GPU {g.index}" for g in gpus if _free_fraction(g, margin) < CORRIDOR[0])
        warnings.append(f"shared GPU: other processes hold memory on {held}; gpu-memory-utilization {free_util:.2f} "
                        f"is below the usual {CORRIDOR[0]}-{CORRIDOR[1]} corridor. If they grow, the start fails "
                        "(the guard re-checks free memory before every start); re-run init once they are gone")
        reasons.append(f"gpu-memory-utilization {free_util:.2f}: what other processes leave free, below the "
                       f"{CORRIDOR[0]}-{CORRIDOR[1]} corridor (a shared GPU)")
        return free_util
    util = min(CORRIDOR[1], free_util)
    free = min(g.memory_free_bytes or 0 for g in gpus)
    if util < CORRIDOR[1]:
        reasons.append(f"gpu-memory-utilization {util}: what other processes leave free ({free / GIB:.2f} GiB), "
                       f"inside the {CORRIDOR[0]}-{CORRIDOR[1]} corridor")
    else:
        reasons.append(f"gpu-memory-utilization {util}: the top of the {CORRIDOR[0]}-{CORRIDOR[1]} corridor "
                       f"({free / GIB:.2f} GiB free now)")
    return util


def _variants(fp8_native: bool) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{}]
    if fp8_native:
        steps.append({"kv_cache_dtype": "fp8"})
    steps.append({"enforce_eager": True, **({"kv_cache_dtype": "fp8"} if fp8_native else {})})
    return steps


def _longest(facts: Facts, gpu: Gpu, params: Params, users: int, derived: int) -> int:
    """The longest max-model-len (a multiple of the block size) with ``users`` requests fitting at once."""

    def fits(length: int) -> bool:
        e = estimate(facts.model, gpu, replace(params, max_model_len=length))
        need = kv_bytes_for_length(facts.model, params, length, e.block_size, e.max_num_batched_tokens)
        if e.kv_budget_bytes is None or need is None:
            return False
        page = need / max(math.ceil(length / e.block_size), 1)
        return users * need <= e.kv_budget_bytes - page

    longest = largest_fitting(fits, derived)
    return longest if longest == derived else longest // 16 * 16


def _users_at(facts: Facts, gpu: Gpu, params: Params, length: int) -> int:
    """How many requests of ``length`` tokens fit the KV cache at once."""
    e = estimate(facts.model, gpu, replace(params, max_model_len=length))
    need = kv_bytes_for_length(facts.model, params, length, e.block_size, e.max_num_batched_tokens)
    if e.kv_budget_bytes is None or not need:
        return 0
    page = need / max(math.ceil(length / e.block_size), 1)
    return max(int((e.kv_budget_bytes - page) // need), 0)


def _too_many_users(facts: Facts, gpu: Gpu, params: Params, users: int, length: int, derived: int) -> str:
    """The refusal for --users: how many users do fit, at the floor and at a few useful lengths."""
    lengths = sorted({n for n in (length, 4096, 8192, 32768) if length <= n <= derived})
    fit = ", ".join(f"{_users_at(facts, gpu, params, n):,} at {n:,} tokens" for n in lengths)
    return (f"{users:,} requests at once fit only below max-model-len {length:,}, too short to be of use; "
            f"users that fit here (with the KV relaxations init may use): {fit}")


def _refusal(facts: Facts, gpu: Gpu, params: Params, users: int, want: int, fp8_native: bool) -> str:
    e = estimate(facts.model, gpu, replace(params, max_model_len=want, enforce_eager=True,
                                           kv_cache_dtype="fp8" if fp8_native else "auto"))
    need = (e.kv_needed_bytes(facts.model, replace(params, kv_cache_dtype="fp8" if fp8_native else "auto"), want)
            or 0) * users
    have = e.kv_budget_bytes or 0
    if have <= 0:
        return (f"the weights ({(facts.model.weights_bytes or 0) / GIB:.2f} GiB) leave no room for a KV cache on "
                f"{gpu.name or 'this GPU'} even at utilization {params.utilization}")
    return (f"{users} request(s) of {want} tokens need {need / GIB:.2f} GiB of KV cache; at most "
            f"{have / GIB:.2f} GiB is available here, even with every allowed relaxation")
