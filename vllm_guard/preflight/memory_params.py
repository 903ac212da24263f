"""The vLLM options the memory model reads (memory.py, kv_cache.py), and the dtype sizes they imply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_guard.facts.model import ModelFacts

KV_DTYPE_BYTES: dict[str, float] = {
    "float16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1,
    "fp8_per_token_head": 1, "int8_per_token_head": 1, "int4_per_token_head": 0.5,
    # NVFP4 stores one FP8 scale per 16 four-bit values, 4.5 bits each: startups/109, 116 and 119 (a vLLM 0.22 build
    # and two source builds, gemma-4-E4B and gemma-4-31B) print exactly 9/8 of 4 bits per element. nvfp4_4over6
    # (another choice of the scales) is assumed to store the same; nvfp4_ds_mla and the other 4-bit caches are
    # counted at 4 bits, no log measured them.
    "nvfp4": 0.5625, "nvfp4_4over6": 0.5625, "ultraquant_4bit": 0.5, "fp8_ds_mla": 1, "nvfp4_ds_mla": 0.5,
}
MODEL_DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 2, "float": 2, "auto": 2}
# float32 checkpoints are served in 16-bit by vLLM unless --dtype float32 is explicit.
FLOAT32 = ("float32", "float")  # --dtype's spellings of it
EXPLICIT_DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4}


@dataclass(frozen=True)
class Params:
    """The vLLM options the memory model reads; None means "not set: vLLM's default"."""

    utilization: float | None = None
    max_model_len: int | None = None  # -1: "auto"
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None  # --quantization: None reads the checkpoint's own (preflight/weights.py)
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1  # the routed experts split over TP x DP, the rest is copied (preflight/weights.py)
    block_size: int | None = None
    kv_cache_memory_bytes: int | None = None
    cpu_offload_gb: float = 0.0
    enable_chunked_prefill: bool | None = None
    performance_mode: str = "balanced"
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    max_cudagraph_capture_size: int | None = None
    # compilation_config.cudagraph_mode; None: vLLM's default, FULL_AND_PIECEWISE since 0.11 (PIECEWISE before)
    cudagraph_mode: str | None = None
    # the extra terms (memory_terms.py): LoRA slots, a speculative drafter, a multimodal encoder's limits
    enable_lora: bool = False
    max_loras: int = 1  # vLLM 0.33 config/lora.py defaults
    max_lora_rank: int = 16
    lora_dtype: str = "auto"
    speculative_config: Mapping[str, Any] | None = None
    limit_mm_per_prompt: Mapping[str, Any] | None = None
    language_model_only: bool = False
    enable_expert_parallel: bool = False
    # the --speculative-config draft model's facts, probed as the target's are (probes.gather); None: not known
    draft: ModelFacts | None = None

    @classmethod
    def from_values(cls, get: Any, is_set: Any) -> Params:
        """Build from a profile's accessors: ``get(dest)`` and ``is_set(dest)``."""

        def opt(dest: str) -> Any:
            return get(dest) if is_set(dest) else None

        sizes = opt("cudagraph_capture_sizes")
        return cls(
            utilization=opt("gpu_memory_utilization"),
            max_model_len=opt("max_model_len"),
            max_num_batched_tokens=opt("max_num_batched_tokens"),
            max_num_seqs=opt("max_num_seqs"),
            enforce_eager=bool(get("enforce_eager")),
            kv_cache_dtype=str(get("kv_cache_dtype") or "auto"),
            dtype=str(get("dtype") or "auto"),
            quantization=opt("quantization"),
            tensor_parallel_size=int(get("tensor_parallel_size") or 1),
            pipeline_parallel_size=int(get("pipeline_parallel_size") or 1),
            data_parallel_size=max(int(get("data_parallel_size") or 1), 1),
            block_size=opt("block_size"),
            kv_cache_memory_bytes=opt("kv_cache_memory_bytes"),
            cpu_offload_gb=float(get("cpu_offload_gb") or 0.0),
            enable_chunked_prefill=opt("enable_chunked_prefill"),
            performance_mode=str(get("performance_mode") or "balanced"),
            cudagraph_capture_sizes=tuple(sizes) if sizes else None,
            max_cudagraph_capture_size=opt("max_cudagraph_capture_size"),
            enable_lora=bool(get("enable_lora")),
            max_loras=int(get("max_loras") or 1),
            max_lora_rank=int(get("max_lora_rank") or 16),
            lora_dtype=str(get("lora_dtype") or "auto"),
            speculative_config=_mapping(get("speculative_config")),
            limit_mm_per_prompt=_mapping(get("limit_mm_per_prompt")),
            language_model_only=bool(get("language_model_only")),
            enable_expert_parallel=bool(get("enable_expert_parallel")),
        )


def media_off(params: Params, *modalities: str) -> bool:
    """Whether vLLM accepts none of these media: --language-model-only, or --limit-mm-per-prompt giving each of them
    0 (a modality left out keeps vLLM's default limit, 999). vLLM 0.33 then builds no tower for them
    (models/interfaces.py SupportsMultiModal._mark_tower_model: "Tower model components are automatically skipped
    when --limit-mm-per-prompt is set to zero for all of their modalities"; Qwen3-VL already so in 0.11)."""
    if params.language_model_only:
        return True
    limits = params.limit_mm_per_prompt or {}
    return all(m in limits and limit_count(limits[m]) == 0 for m in modalities)


def limit_count(value: Any) -> int:
    """One modality's --limit-mm-per-prompt count: a number, or {"count": N, ...} (vLLM 0.11+; without a count,
    vLLM's default of 999)."""
    if isinstance(value, Mapping):
        value = value.get("count", 999)
    return int(value) if isinstance(value, (int, float)) else 1


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) and value else None
