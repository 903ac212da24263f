"""Checks of the model on these GPUs: known, weights and the KV cache for max-model-len fit, tensor-parallel split."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from vllm_guard.preflight.findings import FAIL, PASS, SKIP, WARN, Context, Finding, gib
from vllm_guard.preflight.gpu_checks import min_capability
from vllm_guard.preflight.memory_params import FLOAT32
from vllm_guard.preflight.weights import loaded_weights

# --- the model ----------------------------------------------------------------


def check_model_known(c: Context) -> Finding:
    m = c.facts.model
    if m.source == "unknown":
        local = m.model.startswith(("/", "./", "../", "~"))
        fix = ("give the directory that holds the model's config.json" if local else
               "check the id (and HF_TOKEN for a gated model); offline, give a directory holding its config.json")
        return Finding("model.facts", FAIL, f"nothing is known about {m.model}: " + "; ".join(m.notes), fix)
    return Finding("model.facts", PASS, f"{m.architecture or 'model'} from {m.source}"
                   + (f"; weights {gib(m.weights_bytes)} ({m.weights_source})" if m.weights_bytes else ""),
                   measured={"source": m.source, "weights_bytes": m.weights_bytes})


def _missing_gpus(c: Context) -> Finding | None:
    """A layout over more GPUs than vLLM will see has no per-GPU figures: they would be for GPUs not there."""
    have = len(c.facts.gpus)
    if c.world_size <= have:
        return None
    return Finding("", SKIP, f"the layout needs {c.world_size} GPUs and vLLM will see {have}: per-GPU memory is not "
                   "judged for GPUs that are not there (see gpu.count)")


def check_model_weights_fit(c: Context) -> Finding:
    if (missing := _missing_gpus(c)) is not None:
        return replace(missing, id="model.weights_fit")
    e = c.estimate
    if e is None or e.weights_bytes_per_gpu is None:
        return Finding("model.weights_fit", SKIP, "weight size or GPU memory unknown")
    room = e.budget_bytes - e.non_torch_bytes
    measured = {"weights_bytes_per_gpu": e.weights_bytes_per_gpu}
    required = {"budget_bytes": e.budget_bytes}
    if e.weights_bytes_per_gpu < room:
        return Finding("model.weights_fit", PASS, f"weights take {gib(e.weights_bytes_per_gpu)} of the "
                       f"{gib(e.budget_bytes)} budget per GPU", None, measured, required)
    loaded = loaded_weights(c.facts.model, c.params)  # as the GPUs hold them (preflight/weights.py)
    # more tensor parallel on the visible GPUs, each data-parallel rank keeping its own copy
    copies = c.params.data_parallel_size * c.params.pipeline_parallel_size
    tp_needed = next((t for t in (2, 4, 8) if t > c.params.tensor_parallel_size and t * copies <= len(c.facts.gpus)
                      and (loaded.per_gpu(replace(c.params, tensor_parallel_size=t)) or 0) < room), None)
    options: list[tuple[dict[str, Any], str]] = []
    if c.params.dtype in FLOAT32:
        options.append(({"dtype": "auto"}, "the model's own 16 bits halve them"))
    if tp_needed:
        options.append(({"tensor_parallel_size": tp_needed}, f"spreads them over {tp_needed} GPUs"))
    # verify_alternatives keeps the options that mend this check and rewrites the fix from them
    smaller = ("use a smaller model or more GPUs" if c.facts.model.quant_method
               else "use a quantized checkpoint (AWQ, GPTQ or FP8)")
    return Finding("model.weights_fit", FAIL, f"weights alone need {gib(e.weights_bytes_per_gpu)} per GPU; the "
                   f"budget is {gib(e.budget_bytes)}", smaller, measured, required, options=tuple(options),
                   advice=f"or {smaller.removeprefix('use ')}")


def check_model_kv_fit(c: Context) -> Finding:
    if (missing := _missing_gpus(c)) is not None:
        return replace(missing, id="model.kv_fit")
    e = c.estimate
    m = c.facts.model
    if e is None or e.kv_budget_bytes is None or e.kv_bytes_per_token is None or e.max_model_len is None:
        unknown = [n for n in e.notes if "unknown" in n] if e else ["no GPU"]
        return Finding("model.kv_fit", SKIP, "KV cache not judged: " + ("; ".join(unknown) or "its budget is unknown"))
    need = e.kv_needed_bytes(m, c.params, e.max_model_len) or 0
    layer_page = need / max(math.ceil(e.max_model_len / e.block_size), 1)
    available = e.kv_budget_bytes - layer_page  # vLLM keeps one block back (the null block)
    measured = {"kv_budget_bytes": e.kv_budget_bytes, "kv_needed_bytes": need, "kv_tokens": e.kv_tokens,
                "max_concurrency": round(e.max_concurrency, 2) if e.max_concurrency is not None else None}
    required = {"max_model_len": e.max_model_len}
    if e.kv_budget_bytes <= 0:
        return Finding("model.kv_fit", FAIL, f"no memory left for the KV cache: weights, activations and CUDA "
                       f"graphs take all of the {gib(e.budget_bytes)} budget",
                       _no_kv_fix(c), measured, required)
    if need > available:
        fit = e.max_fitting_model_len or 0
        options = ([({"max_model_len": fit}, "the longest that fits")] if fit > 0 else []) + _kv_alternatives(c, need)
        return Finding(
            "model.kv_fit", FAIL,
            f"one request of max-model-len {e.max_model_len:,} needs {gib(need)} of KV cache; "
            f"{gib(e.kv_budget_bytes)} is available. The largest max-model-len that fits is {fit:,}",
            f"--max-model-len {fit}" if fit > 0 else "no length fits", {**measured, "max_fitting_model_len": fit},
            required, options=tuple(options))
    concurrency = e.max_concurrency or 0.0
    message = (f"KV cache {gib(e.kv_budget_bytes)} = {e.kv_tokens:,} tokens; "
               f"{concurrency:.2f}x requests of {e.max_model_len:,} tokens fit at once")
    minimum = c.setting("min-concurrency")
    if minimum is not None and concurrency < minimum:
        return Finding("model.kv_fit", WARN, message + f", below guard.checks.min-concurrency {minimum:g}",
                       "lower --max-model-len, raise utilization, or use --kv-cache-dtype fp8 where supported",
                       measured, {**required, "min_concurrency": minimum})
    return Finding("model.kv_fit", PASS, message, None, measured, required)


def _kv_alternatives(c: Context, need: int) -> list[tuple[dict[str, Any], str]]:
    """More memory, or a smaller KV cache: candidates only; fix.verify_alternatives keeps what passes."""
    e = c.estimate
    assert e is not None and e.kv_budget_bytes is not None
    out: list[tuple[dict[str, Any], str]] = []
    gpu = c.target_gpus[0] if c.target_gpus else None
    if gpu and gpu.memory_total_bytes and not e.kv_cache_memory_fixed:
        wanted = (e.budget_bytes + need - e.kv_budget_bytes) / gpu.memory_total_bytes
        wanted = math.ceil(wanted * 100) / 100
        free_util = (gpu.memory_free_bytes or 0) / gpu.memory_total_bytes
        if wanted <= min(0.95, free_util):
            out.append(({"gpu_memory_utilization": wanted}, "the GPU has the memory free"))
    cc = min_capability(c)
    if c.params.kv_cache_dtype == "auto" and cc is not None and cc >= (8, 9) and not c.facts.model.is_mla:
        out.append(({"kv_cache_dtype": "fp8"}, "halves the KV cache"))
    return out


def _no_kv_fix(c: Context) -> str:
    steps = ["lower --max-num-batched-tokens"]
    if not c.params.enforce_eager:
        steps.append("--enforce-eager (no CUDA graphs)")
    steps.append("or a quantized checkpoint")
    return ", ".join(steps)


def _tp_options(c: Context, valid: list[int]) -> tuple[tuple[dict[str, Any], str], ...]:
    """Tensor-parallel sizes to offer, nearest the requested first; fix.verify_alternatives keeps what passes."""
    tp = c.params.tensor_parallel_size
    return tuple(({"tensor_parallel_size": t}, "splits the heads evenly")
                 for t in sorted((t for t in valid if t != tp), key=lambda t: (abs(t - tp), -t)))


def check_model_max_len(c: Context) -> Finding:
    m = c.facts.model
    length = c.estimate.max_model_len if c.estimate else c.params.max_model_len
    derived = m.derived_max_len
    if derived is None or length is None or length == -1:
        return Finding("model.max_len", SKIP, "derived maximum length unknown")
    measured, required = {"max_model_len": length}, {"derived_max_len": derived}
    if length <= derived:
        return Finding("model.max_len", PASS, f"max-model-len {length:,} <= the model's {derived:,} "
                       f"({m.derived_max_len_key})", None, measured, required)
    if c.facts.environ_allows_long_len:
        return Finding("model.max_len", WARN, f"max-model-len {length:,} exceeds the model's {derived:,}; allowed "
                       "by VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "expect poor quality past the trained length",
                       measured, required)
    return Finding("model.max_len", FAIL, f"max-model-len {length:,} exceeds the model's derived maximum {derived:,} "
                   f"({m.derived_max_len_key}); vLLM refuses it", f"--max-model-len {derived}", measured, required,
                   options=(({"max_model_len": derived}, "the model's own maximum"),))


def check_model_tp_divisible(c: Context) -> Finding:
    m = c.facts.model
    tp = c.params.tensor_parallel_size
    if m.num_attention_heads is None:
        return Finding("model.tp_divisible", SKIP, "attention head count unknown")
    measured = {"attention_heads": m.num_attention_heads, "kv_heads": m.num_kv_heads, "tensor_parallel": tp}
    valid = [t for t in (1, 2, 4, 8, 16) if m.num_attention_heads % t == 0]
    if m.num_attention_heads % tp:
        return Finding("model.tp_divisible", FAIL, f"attention heads ({m.num_attention_heads}) are not divisible "
                       f"by tensor parallel size ({tp})",
                       f"use --tensor-parallel-size in {valid}", measured, options=_tp_options(c, valid))
    kv = m.num_kv_heads
    if kv and not m.is_mla and ((tp >= kv and tp % kv) or (tp < kv and kv % tp)):
        return Finding("model.tp_divisible", FAIL, f"KV heads ({kv}) can be neither split nor replicated over "
                       f"{tp} GPUs", f"use --tensor-parallel-size in {valid}", measured, options=_tp_options(c, valid))
    group = m.quant_group_size
    if group and group > 0 and m.intermediate_size and (m.intermediate_size // tp) % group:
        return Finding("model.tp_divisible", FAIL, f"the MLP input per GPU ({m.intermediate_size // tp}) is not a "
                       f"whole number of quantization groups ({group})", "use a smaller --tensor-parallel-size",
                       measured)
    return Finding("model.tp_divisible", PASS, f"heads split evenly over tensor parallel size {tp}", None, measured)
