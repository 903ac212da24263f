"""Pure: the memory terms beyond weights, activations, graphs and KV (issue 27): LoRA buffers, a speculative
drafter's weights and KV, a multimodal encoder's cache, and the fixed state of hybrid (Mamba, gated delta net)
layers with the block size vLLM raises to match it.

Each term says where vLLM spends it, because that decides how it enters the budget: vLLM's "Model loading took
X GiB" is measured around get_model, the drafter's load_model and load_lora_model together (v1/worker/
gpu_model_runner.py load_model, one DeviceMemoryProfiler), so LoRA buffers and draft weights are *in the weights
figure*; the drafter's attention layers get KV caches from the same pool, so they are *in the KV bytes per
token*; the encoder's outputs are held during the profile run, so they are *in the activation peak*.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.memory_params import Params, media_off
from vllm_guard.preflight.weights import vision_media

IN_WEIGHTS, IN_KV, IN_ACTIVATION = "weights", "kv", "activation"
# --speculative-config methods that load no model and keep no KV: n-gram / suffix matching over the prompt
NO_MODEL_METHODS = ("ngram", "suffix", "ngram_gpu")
MTP_METHODS = ("mtp", "deepseek_mtp", "qwen3_next_mtp", "glm4_moe_mtp", "ernie_mtp", "mimo_mtp", "longcat_flash_mtp")
EAGLE_METHODS = ("eagle", "eagle3", "medusa", "mlp_speculator", "dflash")
DEFAULT_EAGLE_LAYERS = 1  # an EAGLE / EAGLE-3 head is one decoder layer (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)


@dataclass(frozen=True)
class Term:
    """One extra term on one GPU. ``bytes_per_gpu`` None: unknown, and ``how`` says why."""

    name: str
    bytes_per_gpu: int | None
    where: str  # IN_WEIGHTS | IN_KV | IN_ACTIVATION: which of vLLM's figures holds it
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bytes_per_gpu": self.bytes_per_gpu, "where": self.where, "how": self.how}


# --- LoRA ------------------------------------------------------------------------------------------------------


def lora(model: ModelFacts, max_loras: int, max_rank: int, element_bytes: float, tp: int) -> Term:
    """The stacked A and B buffers vLLM allocates for every LoRA-capable linear layer at start, whatever the
    adapters later loaded use (vllm/lora/layers: create_lora_weights): per slot and layer, A is rank x input and
    B output x rank, the parallel side split by tensor parallel (column-parallel qkv / gate_up keep A whole and
    split B; row-parallel o / down split A and keep B). MoE experts get the same per expert (fused_moe LoRA)."""
    h, layers = model.hidden_size, model.num_layers
    heads, kv_heads, head_dim = model.num_attention_heads, model.num_kv_heads, model.head_dim
    inter = model.intermediate_size
    if not (h and layers and heads and kv_heads and head_dim and inter):
        return Term("LoRA buffers", None, IN_WEIGHTS, "the model's shape is not known")
    q, kv = heads * head_dim, kv_heads * head_dim
    qkv = 3 * h + (q + 2 * kv) / tp  # three A slices of rank x h; B slices split by TP
    o = q / tp + h
    mlp_inter = model.moe_intermediate_size if model.num_experts else inter
    per_mlp = 2 * h + 2 * (mlp_inter or inter) / tp + (mlp_inter or inter) / tp + h  # gate_up A x2, B x2; down
    mlps = model.num_experts or 1
    elements = max_loras * max_rank * layers * (qkv + o + mlps * per_mlp)
    how = (f"{max_loras} adapter slot(s) x rank {max_rank} over {layers} layers"
           + (f" and {model.num_experts} experts each" if model.num_experts else "")
           + "; in vLLM's model loading figure")
    return Term("LoRA buffers", int(elements * element_bytes), IN_WEIGHTS, how)


# --- speculative decoding ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Speculative:
    method: str
    tokens: int  # num_speculative_tokens
    kv_layers: int  # attention layers the drafter adds to the KV pool (kv_cache.draft_kv_layers sizes them)
    weights: Term


def method_of(config: Mapping[str, Any], draft: ModelFacts | None) -> str:
    """The speculative method vLLM runs. Without one (or as "draft_model") vLLM 0.32 reads it from the draft
    model's name and type (config/speculative.py): "eagle-" is EAGLE, "eagle3" EAGLE-3, "dflash" DFlash, a
    medusa or mlp_speculator config type its own; a model named "ngram" is n-gram. startups/067, 121 and 122
    give poolside/Laguna-S-2.1-DFlash-INT4 with no method, and vLLM ran it as DFlash."""
    method = str(config.get("method") or "").lower()
    name = str(config.get("model") or "").lower()
    if method not in ("", "draft_model") or not name:
        return method
    if name in ("ngram", "[ngram]"):
        return "ngram"
    for word, found in (("eagle-", "eagle"), ("eagle3", "eagle3"), ("dflash", "dflash")):
        if word in name:
            return found
    if draft is not None and draft.model_type in ("medusa", "mlp_speculator"):
        return draft.model_type
    return "draft_model"


def speculative(model: ModelFacts, config: Mapping[str, Any] | None, draft: ModelFacts | None,
                parallel: int) -> Speculative | None:
    """What ``--speculative-config`` adds; None without one."""
    if not config:
        return None
    method = method_of(config, draft)
    tokens = int(config.get("num_speculative_tokens") or 1)
    if method in NO_MODEL_METHODS:
        return Speculative(method, tokens, 0, Term("draft model", 0, IN_WEIGHTS, f"{method}: no model, no KV"))
    if method in MTP_METHODS or method.endswith("_mtp"):
        layers = model.mtp_layers or 1
        size = None if model.mtp_bytes is None else int(model.mtp_bytes / parallel)
        return Speculative(method, tokens, layers, Term(
            "MTP layers", size, IN_WEIGHTS, f"{layers} MTP layer(s) of the checkpoint in 16 bits, which vLLM loads "
            "only as this drafter; in vLLM's model loading figure"))
    name = str(config.get("model") or "")
    if draft is not None and draft.weights_bytes is not None:
        layers = draft.num_layers or DEFAULT_EAGLE_LAYERS
        size = draft.weights_bytes
        how = f"{name}: {layers} layer(s); in vLLM's model loading figure"
        if method == "dflash" and draft.vocab_size and draft.hidden_size:
            # a DFlash drafter decodes with the target's embeddings and lm_head (z-lab/dflash), not its own
            size = max(size - 2 * draft.vocab_size * draft.hidden_size * 2, 0)
            how = f"{name}: {layers} layer(s), with the target's embeddings and lm_head; in vLLM's model loading figure"
        return Speculative(method, tokens, layers, Term("draft model", int(size / parallel), IN_WEIGHTS, how))
    layers = DEFAULT_EAGLE_LAYERS if method in EAGLE_METHODS else 0
    return Speculative(method, tokens, layers, Term(
        "draft model", None, IN_WEIGHTS, f"{name or method}: its size is not known here (not bundled, not cached)"))


# --- multimodal encoder cache ------------------------------------------------------------------------------------


def encoder_cache(model: ModelFacts, params: Params, batched_tokens: int, element_bytes: float) -> Term | None:
    """The encoder cache vLLM sizes at start (v1/core/encoder_cache_manager.py compute_encoder_budget: the larger
    of max-num-batched-tokens and one item's most tokens) and fills with dummy items in the profile run: that many
    language-model embeddings, held at the activation peak. Zero when no medium the model may read is accepted
    (--language-model-only, or images, videos and, where it has an audio encoder, audio all limited to 0: a
    modality left out keeps vLLM's default of 999); then vLLM profiles no encoder."""
    if not model.is_multimodal:
        return None
    if media_off(params, *vision_media(model), *(("audio",) if model.audio_params else ())):
        return Term("encoder cache", 0, IN_ACTIVATION, "no images or other media accepted: no encoder profiled")
    if model.hidden_size is None:
        return Term("encoder cache", None, IN_ACTIVATION, "the model's hidden size is not known")
    budget = max(batched_tokens, model.mm_tokens_per_item or 0)
    how = (f"a budget of {budget:,} tokens x hidden {model.hidden_size}; in the profile run's peak"
           + ("" if model.mm_tokens_per_item else " (one item's most tokens come from its processor, not config)"))
    return Term("encoder cache", int(budget * model.hidden_size * element_bytes), IN_ACTIVATION, how)


# --- hybrid state layers -----------------------------------------------------------------------------------------


def state_layers(model: ModelFacts) -> int:
    return sum(1 for k in model.layer_types or () if k == "state")


def hybrid_block_size(model: ModelFacts, attn_bytes_per_token_layer: int, tp: int, asked: int | None,
                      spec_tokens: int = 0) -> int | None:
    """vLLM's block size for a hybrid model: the attention page must hold a state layer's page, so the block is
    raised to 16 x ceil(state / (16 x attention bytes per token)) unless the one asked for is larger
    (model_executor/models/config.py HybridAttentionMambaModelConfig: "Setting attention block size to N
    tokens to ensure that attention page size is >= mamba page size"). None for a model without state layers."""
    if not state_layers(model) or not model.state_bytes_per_layer or not attn_bytes_per_token_layer:
        return None
    state = math.ceil((model.state_bytes_per_layer + spec_tokens * (model.state_conv_row_bytes or 0)) / tp)
    block = 16 * math.ceil(state / (16 * attn_bytes_per_token_layer))
    return max(block, asked or 0)
