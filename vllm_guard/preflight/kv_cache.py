"""Pure: KV cache bytes per token and per request on one GPU, as vLLM 0.33 sizes them (vllm-reference §4):
full, sliding-window and state layers, the drafter's layers, and the block size a hybrid model forces."""

from __future__ import annotations

import math

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight import memory_terms
from vllm_guard.preflight.memory_params import EXPLICIT_DTYPE_BYTES, KV_DTYPE_BYTES, MODEL_DTYPE_BYTES, Params

# vLLM 0.33 config/cache.py:185: the default block size.
DEFAULT_BLOCK_SIZE = 16

def kv_dtype_bytes(model: ModelFacts, params: Params) -> float | None:
    kv = params.kv_cache_dtype
    if kv == "auto":
        if model.checkpoint_kv_dtype:  # the checkpoint's own KV cache quantization
            return KV_DTYPE_BYTES.get(model.checkpoint_kv_dtype)
        if params.dtype != "auto":
            return EXPLICIT_DTYPE_BYTES.get(params.dtype)
        return MODEL_DTYPE_BYTES.get(str(model.torch_dtype or "auto"), 2)
    return KV_DTYPE_BYTES.get(kv)


def layer_kv_bytes_per_token(model: ModelFacts, params: Params, kind: str = "sliding") -> int | None:
    """KV bytes one layer stores per token on one GPU (vLLM 0.33 v1/kv_cache_interface.py). ``kind`` "full"
    picks a model's own full-attention shape where it has one (Gemma 4: num_global_key_value_heads of
    global_head_dim); every other layer has the common shape."""
    element = kv_dtype_bytes(model, params)
    if element is None:
        return None
    if model.is_mla:
        indexer = model.indexer_key_bytes or 0  # a sparse-MLA model's indexer keys, beside its latent
        if mla_kv_dtype(model, params) == "fp8_ds_mla":
            return 656 + indexer  # v1/attention/backends/mla/flashmla_sparse.py:79
        # One latent per token, K only (head_size_v = 0), not split by tensor parallel.
        return int(((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * element) + indexer  # 4-bit: half
    heads, head_dim = model.num_kv_heads, model.head_dim
    if kind == "full" and model.global_head_dim:  # without num_global_key_value_heads: the common KV heads (E4B)
        heads, head_dim = model.global_kv_heads or heads, model.global_head_dim
    if heads is None or head_dim is None:
        return None
    # config/model.py:1683: KV heads are replicated when TP exceeds them.
    heads_per_gpu = max(1, heads // params.tensor_parallel_size)
    return int(2 * heads_per_gpu * head_dim * element)


# vLLM (model_executor/models/config.py, DeepseekV32ForCausalLM.verify_and_update_config) stores DeepSeek-V3.2's
# cache in its custom fp8 format when an fp8 cache is asked for ("Using custom fp8 kv-cache format for
# DeepSeekV3.2"). 0.11.0 did so under "auto" too; later releases keep "auto" at the model's 16 bits, as the guard
# does. It is keyed by that architecture; another sparse-MLA model (GLM-5's GlmMoeDsaForCausalLM) keeps the usual
# dtype rule here.
DS_MLA_ARCHITECTURES = ("DeepseekV32ForCausalLM",)


def mla_kv_dtype(model: ModelFacts, params: Params) -> str:
    kv = params.kv_cache_dtype
    if model.architecture in DS_MLA_ARCHITECTURES and model.indexer_key_bytes and kv.startswith("fp8"):
        return "fp8_ds_mla"
    return kv


def layers_per_gpu(model: ModelFacts, params: Params) -> int | None:
    if model.num_layers is None:
        return None
    return math.ceil(model.num_layers / params.pipeline_parallel_size)  # the fullest stage


def draft_kv_layers(model: ModelFacts, params: Params) -> tuple[int, int | None]:
    """The drafter's attention layers in the KV pool and their bytes per token each: a known draft model's own
    heads and head size; None where they are the target's full-attention shape (MTP layers are the target's; an
    EAGLE head of unknown shape is taken to copy it). All are counted as full attention. For Laguna's DFlash
    drafter that is what vLLM 0.32 does whatever its layer types say: laguna_dflash.py clears the sliding window
    ("DFlash inserts verifier-context K/V at absolute cache slots. Keep full KV allocation"), and poolside's 6
    sliding-window drafter layers as 6 full ones give startups/067's, 121's and 122's bytes per token to 0.02%.
    qwen3_dflash.py keeps a drafter layer's window (_resolve_layer_attention): such a layer is over-counted here
    (no bundled drafter has one)."""
    spec = memory_terms.speculative(model, params.speculative_config, params.draft, 1)
    if spec is None or not spec.kv_layers:
        return 0, None
    draft = params.draft
    if draft is not None and spec.method not in memory_terms.MTP_METHODS:
        # a kind of its own when its KV shape differs from the target's full layers (vLLM groups by KV spec)
        full_shape = ((model.global_kv_heads, model.global_head_dim) if model.global_kv_heads
                      else (model.num_kv_heads, model.head_dim))
        theirs = layer_kv_bytes_per_token(draft, params)
        if theirs and (draft.num_kv_heads, draft.head_dim) != full_shape:
            return spec.kv_layers, theirs
    return spec.kv_layers, None


def state_layers_per_gpu(model: ModelFacts, params: Params) -> float:
    layers = layers_per_gpu(model, params) or 0
    types = model.layer_types or ()
    return layers * memory_terms.state_layers(model) / len(types) if types else 0.0


def layer_counts(model: ModelFacts, params: Params, grouped: bool = True) -> tuple[float, float, float]:
    """Full-attention (the drafter's included, in full-layer equivalents), sliding-window and state layers on the
    fullest stage, each kind padded as vLLM groups them.

    vLLM puts layers of one KV shape in groups of equal size, the smallest kind's count, padding the others up to
    a multiple ("Add 3 padding layers, may waste at most 10.00% KV cache memory", v1/core/kv_cache_utils.py):
    startups/032 pads 30 state layers to 33 beside 11 full ones (the MTP layer's among them), and its token count
    then matches to the token; startups/075 puts a DFlash drafter's 8 layers (4 KV heads of 128, not the target's
    2 of 256) in a kind of their own, so 10 full + 8 draft + 30 state become 16 + 8 + 32.
    """
    layers = layers_per_gpu(model, params) or 0
    types = model.layer_types
    drafter, drafter_bytes = draft_kv_layers(model, params)
    if types:
        share = layers / len(types)
        sliding = sum(1 for t in types if t == "sliding") * share if model.sliding_window is not None else 0.0
        full = sum(1 for t in types if t in ("full", "sliding")) * share - sliding
        state = state_layers_per_gpu(model, params)
    else:
        full, sliding, state = float(layers), 0.0, 0.0
    if drafter_bytes is None:
        full, drafter = full + drafter, 0
    kinds = [n for n in (full, sliding, state, float(drafter)) if n > 0]
    if len(kinds) > 1 and grouped:  # grouped=False: before vLLM's hybrid KV manager (0.10), one pool per layer
        group = min(kinds)
        full, sliding, state, padded_drafter = (math.ceil(n / group - 1e-9) * group if n > 0 else 0.0
                                                for n in (full, sliding, state, float(drafter)))
    else:
        padded_drafter = float(drafter)
    if drafter_bytes is not None:
        full += padded_drafter * drafter_bytes / (layer_kv_bytes_per_token(model, params, "full") or drafter_bytes)
    return full, sliding, state


def kv_bytes_per_token(model: ModelFacts, params: Params) -> int | None:
    """KV bytes per token per GPU, as if every attention layer attended fully (domain.md's formula)."""
    local, full = layer_kv_bytes_per_token(model, params), layer_kv_bytes_per_token(model, params, "full")
    if local is None or full is None or model.num_layers is None:
        return None
    n_full, n_sliding, _ = layer_counts(model, params)
    return int(n_full * full + n_sliding * local)


def block_size(model: ModelFacts, params: Params) -> int:
    """The block vLLM uses: the one asked for, raised for a hybrid model's state (memory_terms), else 16."""
    per_layer = layer_kv_bytes_per_token(model, params) or 0
    spec = memory_terms.speculative(model, params.speculative_config, params.draft, 1)
    hybrid = memory_terms.hybrid_block_size(model, per_layer, params.tensor_parallel_size, params.block_size,
                                            spec.tokens if spec else 0)
    return hybrid or params.block_size or DEFAULT_BLOCK_SIZE


def kv_bytes_for_length(
    model: ModelFacts, params: Params, length: int, block_size: int, max_num_batched_tokens: int
) -> int | None:
    """KV bytes one request of ``length`` tokens needs on one GPU, in whole blocks.

    Sliding-window layers keep only ``window - 1 + max_num_batched_tokens`` tokens
    plus a block (v1/kv_cache_interface.py:918-955). A state layer (Mamba, gated delta net) keeps one page per
    request whatever its length, its state padded to the attention page, and one more per speculative token:
    the shared startups/032 (Qwen3.6-35B-A3B, MTP with 3 tokens, vLLM 0.25.1) reports 3,366,051 tokens for
    74.22 GiB of 1,072-token blocks, what 245 attention blocks + 3 state groups x 4 pages per request give.
    """
    local, full = layer_kv_bytes_per_token(model, params), layer_kv_bytes_per_token(model, params, "full")
    if local is None or full is None or model.num_layers is None:
        return None
    n_full, n_sliding, n_state = layer_counts(model, params)
    full_blocks = math.ceil(length / block_size)
    spec = memory_terms.speculative(model, params.speculative_config, params.draft, 1)
    need = n_full * full_blocks * block_size * full + n_state * block_size * local * (1 + (spec.tokens if spec else 0))
    if n_sliding and model.sliding_window is not None:
        window_tokens = min(model.sliding_window - 1 + max_num_batched_tokens, length)
        sliding_blocks = min(math.ceil(window_tokens / block_size) + 1, full_blocks)
        need += n_sliding * sliding_blocks * block_size * local
    return int(need)
