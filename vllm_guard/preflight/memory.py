"""Pure: the memory model of a vLLM 0.33 start, per GPU (vllm-reference §4).

budget = ceil(total x utilization); KV budget = budget - weights - non-torch
- activation peak - CUDA-graph estimate; KV tokens, the longest max-model-len
that fits and the concurrency follow from the KV bytes per token.

Every constant that is not a vLLM formula is a calibration, collected below with
where it comes from. The seed case (domain.md, a real vLLM log) is a test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vllm_guard.facts.machine import Gpu
from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight import memory_terms
from vllm_guard.preflight.kv_cache import (
    block_size,
    kv_bytes_for_length,
    kv_bytes_per_token,
    layer_counts,
    layer_kv_bytes_per_token,
    layers_per_gpu,
)
from vllm_guard.preflight.memory_params import EXPLICIT_DTYPE_BYTES, MODEL_DTYPE_BYTES, Params
from vllm_guard.preflight.memory_terms import IN_ACTIVATION, IN_WEIGHTS, Term
from vllm_guard.preflight.weights import loaded_weights

GIB = 2**30
MIB = 2**20

# --- calibration constants ----------------------------------------------------
# Non-torch memory at TP=1: "non_torch_memory takes 0.12GiB" in the seed log
# (Llama-3.1-8B, bf16, 23.64 GiB card). CUDA context is not in it: vLLM measures
# after creating its context.
NON_TORCH_BYTES_TP1 = int(0.12 * GIB)
# With tensor/pipeline parallel, NCCL communicators and vLLM's custom all-reduce
# buffers add to it. Estimate, not yet calibrated against a TP>1 log.
NON_TORCH_BYTES_PARALLEL = int(0.5 * GIB)
# Activation peak of the profiling pass, per token of max-num-batched-tokens:
# the MLP's gate/up output and activation (3 x intermediate) plus about four
# hidden-sized buffers (residual, norm, attention in/out), in the activation dtype;
# plus the sampler warm-up's fp32 logits and probabilities for max-num-seqs rows.
# Seed case: predicts 1.15 GiB where vLLM measured 1.22 GiB.
ACTIVATION_INTERMEDIATE_FACTOR = 3
ACTIVATION_HIDDEN_FACTOR = 4
SAMPLER_FP32_COPIES = 2
# CUDA-graph memory: a fixed part plus a part per captured size and layer on this GPU, recalibrated (issue 18) on
# the 14 "Graph capturing finished ..., took X GiB" figures of ../shared/data/real-logs/startups (NVIDIA, vLLM
# 0.8.3-0.22.1) that have settings the log prints: the size count is what each captured (its compilation_config's
# cudagraph_capture_sizes, or its "Capturing CUDA graphs (...): N/N" bars), not the 0.6 GiB of 51 sizes x 32
# layers guessed before. What the figures show:
# - per piecewise size and layer about 2.3e-4 GiB, whatever the hidden size: 040 (0.8.3, 24 layers of 896, 67
#   sizes) 0.41 GiB, 001 (0.10.1.1, 28 of 3584, 67) 0.50, 007 (0.8.5, 48 of 5120, 67) 0.70, 031 (0.10.2, 36 of
#   2560, 67) 0.54: the cost is graph nodes (a piece per layer and size), not activations;
# - the FULL decode graphs of FULL_AND_PIECEWISE (vLLM's default since 0.11; one per size up to max-num-seqs) add
#   about a quarter of that per size and layer: 013 (0.17.1, 51 piecewise + 35 full, 32 layers) 0.50, 026
#   (0.19.1, same counts) 0.46, 019 (0.11.0, 67 + 35, 64 layers) 1.13;
# - the newer vLLM sets the fixed part where they disagree: 0.05 GiB leaves 014 (0.22.1, 19 + 11 sizes, 48 layers,
#   0.22 GiB) +32% and 013/026 within 7%; 0.12 would fit the 0.8-0.10 logs a little better and 014 worse (+45%);
# - tensor parallel adds the all-reduce to every graph: x1.25 from 020 (0.13.0, TP 4, 0.63 GiB) and 029 (0.9.2,
#   TP 4, 1.03 GiB), single-node runs with vLLM's custom all-reduce. Runs whose log says "Custom allreduce is
#   disabled because this process group spans across nodes" (004, 005: Ray across nodes) capture
#   NCCL instead and take about twice as much; the guard does not know the node count, so those stay outliers
#   (benchmarks/memory_calibration.py prints why, with 017 on ROCm and 022's forced legacy AWQ kernel).
CUDAGRAPH_FIXED_BYTES = int(0.05 * GIB)
CUDAGRAPH_BYTES_PER_SIZE_LAYER = int(2.3e-4 * GIB)
CUDAGRAPH_FULL_DECODE_WEIGHT = 0.25
CUDAGRAPH_TENSOR_PARALLEL_FACTOR = 1.25
# How far the KV budget may miss, from benchmarks/memory_calibration.py over the real start-ups (issues 18 and
# 27, 93 logs): weights per GPU within 1.5% on most (median 0.9% over 71; the worst are checkpoints whose
# quantization_config was not found and MXFP4 loads above the checkpoint, each explained by its log), KV bytes per
# token within 0.1% (median; the formula is vLLM's). CUDA graphs: the rule below was fitted on 15 figures and holds
# worse on the 53 single-node CUDA figures of the larger set: median 32%, 80th percentile 68% (tests/
# test_memory_calibration.py; the 21 of DGX Spark's unified memory, where vLLM measures free memory as host RAM,
# miss by a median of 57%, the 32 others by 16%), so the expected error counts 70% of the graph estimate.
# Non-torch memory and the activation peak are in few logs (startups/025, 031, 059, 081 print "GiB for peak
# activation"), so they add nothing here: the error is a floor, not a bound.
MOE_CHUNK_TOKENS = 32768  # vLLM envs.VLLM_FUSED_MOE_CHUNK_SIZE's default
WEIGHTS_ERROR_FRACTION = 0.015
CUDAGRAPH_ERROR_FRACTION = 0.70
DEFAULT_UTILIZATION = 0.92  # vLLM 0.33 config/cache.py:215 (0.9 before)

@dataclass(frozen=True)
class Estimate:
    gpu_total_bytes: int
    utilization: float
    budget_bytes: int
    weights_bytes_per_gpu: int | None
    non_torch_bytes: int
    activation_bytes: int | None
    cudagraph_bytes: int
    kv_budget_bytes: int | None
    kv_bytes_per_token: int | None
    kv_tokens: int | None
    max_model_len: int | None
    max_fitting_model_len: int | None
    max_concurrency: float | None
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    kv_cache_memory_fixed: bool
    kv_expected_error_bytes: int | None = None  # how far the KV budget may miss (WEIGHTS/CUDAGRAPH_ERROR_FRACTION)
    terms: tuple[Term, ...] = ()  # LoRA, drafter, encoder cache (memory_terms.py), each in the figure it names
    defaults: tuple[str, ...] = ()  # options whose value is vLLM's default, not the profile's
    notes: tuple[str, ...] = field(default=())

    def kv_needed_bytes(self, model: ModelFacts, params: Params, length: int) -> int | None:
        return kv_bytes_for_length(model, params, length, self.block_size, self.max_num_batched_tokens)

    def to_dict(self) -> dict[str, Any]:
        keys = ("gpu_total_bytes", "utilization", "budget_bytes", "weights_bytes_per_gpu", "non_torch_bytes",
                "activation_bytes", "cudagraph_bytes", "kv_budget_bytes", "kv_bytes_per_token", "kv_tokens",
                "max_model_len", "max_fitting_model_len", "max_concurrency", "max_num_batched_tokens",
                "max_num_seqs", "block_size", "kv_expected_error_bytes")
        d: dict[str, Any] = {k: getattr(self, k) for k in keys}
        d["defaults"] = list(self.defaults)
        d["terms"] = [t.to_dict() for t in self.terms]
        return d

    def terms_bytes(self, where: str) -> int:
        return sum(t.bytes_per_gpu or 0 for t in self.terms if t.where == where)


# --- defaults -----------------------------------------------------------------


def default_batch_sizes(gpu: Gpu) -> tuple[int, int]:
    """vLLM 0.33's `vllm serve` defaults by GPU (engine/arg_utils.py:2940-3039): tokens, seqs."""
    total = gpu.memory_total_bytes or 0
    name = (gpu.name or "").upper()
    if total >= 160 * GIB:
        return 16384, 1024
    if total >= 70 * GIB and "A100" not in name and "GB10" not in name:
        return 8192, 1024
    return 2048, 256


def scheduler_sizes(params: Params, gpu: Gpu, max_model_len: int) -> tuple[int, int, list[str]]:
    """max-num-batched-tokens and max-num-seqs as vLLM 0.33 resolves them (arg_utils.py:3151-3241)."""
    defaults: list[str] = []
    tokens_default, seqs_default = default_batch_sizes(gpu)
    if params.performance_mode == "throughput":
        tokens_default, seqs_default = tokens_default * 2, seqs_default * 2
    tokens = params.max_num_batched_tokens
    seqs = params.max_num_seqs
    if seqs is None:
        seqs = seqs_default
        defaults.append("max-num-seqs")
    if tokens is None:
        tokens = tokens_default
        defaults.append("max-num-batched-tokens")
        if params.enable_chunked_prefill is False:
            tokens = max(max_model_len, tokens)
        tokens = min(seqs * max_model_len, tokens)
    seqs = min(seqs, tokens)
    return tokens, seqs, defaults


def capture_sizes(params: Params, max_num_seqs: int, max_num_batched_tokens: int) -> list[int]:
    """The CUDA-graph batch sizes vLLM 0.33 captures by default (config/vllm.py:2452-2604)."""
    if params.cudagraph_capture_sizes:
        return sorted(set(params.cudagraph_capture_sizes))
    limit = params.max_cudagraph_capture_size or min(max_num_seqs * 2, 512)
    limit = min(limit, max_num_batched_tokens)
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, limit + 1, 16)]
    return [s for s in sizes if s <= limit]


def cudagraph_bytes(model: ModelFacts, params: Params, max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """CUDA-graph memory on one GPU (the calibration above): fixed + per (piecewise + 1/4 full decode) size x layer."""
    mode = (params.cudagraph_mode or "FULL_AND_PIECEWISE").upper()
    if params.enforce_eager or mode == "NONE":
        return 0
    sizes = capture_sizes(params, max_num_seqs, max_num_batched_tokens)
    full = [s for s in sizes if s <= max_num_seqs] if mode in ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY") else []
    piecewise = [] if mode == "FULL_DECODE_ONLY" else sizes
    layers = layers_per_gpu(model, params) or 0
    per_layer = (len(piecewise) + CUDAGRAPH_FULL_DECODE_WEIGHT * len(full)) * CUDAGRAPH_BYTES_PER_SIZE_LAYER
    graphs = CUDAGRAPH_FIXED_BYTES + per_layer * layers
    if params.tensor_parallel_size > 1:
        graphs *= CUDAGRAPH_TENSOR_PARALLEL_FACTOR
    return int(graphs)


# --- the estimate ---------------------------------------------------------------


def estimate(model: ModelFacts, gpu: Gpu, params: Params) -> Estimate:
    """Predict vLLM 0.33's memory split on one GPU for these options."""
    notes: list[str] = []
    defaults: list[str] = []
    total = gpu.memory_total_bytes or 0
    util = params.utilization
    if util is None:
        util = DEFAULT_UTILIZATION
        defaults.append("gpu-memory-utilization")
    budget = math.ceil(total * util)  # v1/worker/utils.py:724
    parallel = params.tensor_parallel_size * params.pipeline_parallel_size

    max_len = params.max_model_len
    if max_len is None:
        max_len = model.derived_max_len
        defaults.append("max-model-len")
    auto = max_len == -1
    sizing_len = model.derived_max_len if auto else max_len
    tokens, seqs, sched_defaults = scheduler_sizes(params, gpu, sizing_len or 2048)
    defaults += sched_defaults
    block = block_size(model, params)

    weights = None
    loaded = loaded_weights(model, params)  # MTP layers skipped, the served dtype, an online quantization
    notes += loaded.notes
    if (share := loaded.per_gpu(params)) is not None:
        weights = max(int(share - params.cpu_offload_gb * GIB), 0)
    non_torch = NON_TORCH_BYTES_TP1 if parallel == 1 else NON_TORCH_BYTES_PARALLEL
    activation = activation_bytes(model, params, tokens, seqs)
    terms = extra_terms(model, params, tokens)
    notes += [f"{t.name} unknown: {t.how}" for t in terms if t.bytes_per_gpu is None]
    graphs = cudagraph_bytes(model, params, seqs, tokens)
    per_token = kv_bytes_per_token(model, params)
    if per_token is None:
        notes.append("KV bytes per token unknown: the model's heads or the KV dtype are not known")

    fixed = params.kv_cache_memory_bytes is not None
    kv_budget: int | None
    if fixed:
        kv_budget = params.kv_cache_memory_bytes
        notes.append("--kv-cache-memory-bytes fixes the KV cache size; utilization does not size it")
    elif weights is None or activation is None:
        kv_budget = None
        notes.append("KV budget unknown: the weight size or the model's shape is not known")
    else:
        extra = sum(t.bytes_per_gpu or 0 for t in terms if t.where in (IN_WEIGHTS, IN_ACTIVATION))
        kv_budget = budget - weights - extra - non_torch - activation - graphs
    expected_error = None
    if not fixed and weights is not None:
        expected_error = int(WEIGHTS_ERROR_FRACTION * weights + CUDAGRAPH_ERROR_FRACTION * graphs)

    kv_tokens = fit_len = concurrency = None
    page_all = block_bytes(model, params, block)
    if kv_budget is not None and page_all:
        blocks = max(kv_budget, 0) // page_all
        fit_len = max_fitting_len(model, params, kv_budget, block, tokens)
        if model.derived_max_len:  # vLLM refuses more than the model's own maximum anyway
            fit_len = min(fit_len, model.derived_max_len)
        if auto:
            # "auto" stays on the safe side: the longest length that fits the KV budget less its expected error.
            safe = fit_len
            if expected_error:
                safe = max_fitting_len(model, params, kv_budget - expected_error, block, tokens)
            max_len = min(safe, fit_len, model.derived_max_len or fit_len)
        if max_len:
            need = kv_bytes_for_length(model, params, max_len, block, tokens) or 0
            concurrency = (blocks * page_all) / need if need else None
            kv_tokens = int(concurrency * max_len) if concurrency is not None else None
    return Estimate(
        gpu_total_bytes=total,
        utilization=util,
        budget_bytes=budget,
        weights_bytes_per_gpu=weights,
        non_torch_bytes=non_torch,
        activation_bytes=activation,
        cudagraph_bytes=graphs,
        kv_budget_bytes=kv_budget,
        kv_bytes_per_token=per_token,
        kv_tokens=kv_tokens,
        max_model_len=max_len if max_len != -1 else None,
        max_fitting_model_len=fit_len,
        max_concurrency=concurrency,
        max_num_batched_tokens=tokens,
        max_num_seqs=seqs,
        block_size=block,
        kv_cache_memory_fixed=fixed,
        kv_expected_error_bytes=expected_error,
        terms=terms,
        defaults=tuple(defaults),
        notes=tuple(notes),
    )


def extra_terms(model: ModelFacts, params: Params, tokens: int) -> tuple[Term, ...]:
    """LoRA buffers, the drafter's weights, the encoder cache: each on one GPU (memory_terms.py)."""
    parallel = params.tensor_parallel_size * params.pipeline_parallel_size
    element = EXPLICIT_DTYPE_BYTES.get(params.dtype, MODEL_DTYPE_BYTES.get(str(model.torch_dtype or "auto"), 2))
    terms: list[Term] = []
    if params.enable_lora:
        lora_element = EXPLICIT_DTYPE_BYTES.get(params.lora_dtype, element)
        terms.append(memory_terms.lora(model, params.max_loras, params.max_lora_rank, lora_element,
                                       params.tensor_parallel_size))
    spec = memory_terms.speculative(model, params.speculative_config, params.draft, parallel)
    if spec is not None:
        terms.append(spec.weights)
    encoder = memory_terms.encoder_cache(model, params, tokens, element)
    if encoder is not None:
        terms.append(encoder)
    return tuple(terms)


def activation_bytes(model: ModelFacts, params: Params, tokens: int, seqs: int) -> int | None:
    if model.hidden_size is None or model.vocab_size is None:
        return None
    act = EXPLICIT_DTYPE_BYTES.get(params.dtype, 2)
    sampler = seqs * model.vocab_size * 4 * SAMPLER_FP32_COPIES
    moe = moe_workspace_bytes(model, params, tokens, act)
    if moe is not None:  # an MoE layer's peak is its fused-MoE workspace, not a dense MLP's output
        return int(tokens * ACTIVATION_HIDDEN_FACTOR * model.hidden_size * act + moe + sampler)
    inter = (model.intermediate_size or 4 * model.hidden_size) / params.tensor_parallel_size
    per_token = (ACTIVATION_INTERMEDIATE_FACTOR * inter + ACTIVATION_HIDDEN_FACTOR * model.hidden_size) * act
    return int(tokens * per_token + sampler)


def moe_workspace_bytes(model: ModelFacts, params: Params, tokens: int, act: float) -> int | None:
    """The fused-MoE kernel's workspace for one chunk of tokens (vLLM 0.10-0.33 model_executor/layers/fused_moe/
    fused_moe.py: a buffer of M x top-k x max(2I, H) shared by the first and third intermediate caches, and
    M x top-k x I for the second; M = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE = 32768), I the expert intermediate
    size on this GPU: split by tensor parallel, whole under expert parallel). None for a dense model."""
    if not (model.num_experts and model.moe_intermediate_size and model.experts_per_token and model.hidden_size):
        return None
    inter = model.moe_intermediate_size / (1 if params.enable_expert_parallel else params.tensor_parallel_size)
    rows = min(tokens, MOE_CHUNK_TOKENS) * model.experts_per_token
    return int(rows * (max(2 * inter, model.hidden_size) + inter) * act)


def max_fitting_len(model: ModelFacts, params: Params, kv_budget: int, block: int, batched_tokens: int) -> int:
    """The longest max-model-len whose one request fits, as vLLM's estimate_max_model_len finds it.

    vLLM keeps one block in reserve (the null block), then binary-searches
    (v1/core/kv_cache_planning.py:97-148); the answer is a multiple of the block size.
    """
    page_all = block_bytes(model, params, block)
    available = kv_budget - page_all
    if available <= 0 or not page_all:
        return 0

    def fits(length: int) -> bool:
        need = kv_bytes_for_length(model, params, length, block, batched_tokens)
        return need is not None and need <= available

    return largest_fitting(fits, max(model.derived_max_len or 0, 1) * 64) // block * block


def block_bytes(model: ModelFacts, params: Params, block: int) -> int:
    """One block across every cache layer on one GPU (a state layer's page is an attention page); 0: unknown."""
    per_token = kv_bytes_per_token(model, params)
    local = layer_kv_bytes_per_token(model, params)
    if per_token is None or local is None:
        return 0
    return int(block * (per_token + layer_counts(model, params)[2] * local))


def largest_fitting(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in [0, high] with fits(n), for a fits() that is true up to some n and false after."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low
