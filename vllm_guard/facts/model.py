"""The model's facts: frozen, unit-named data normalised from its config.json (probes/model_config.py) and its
weight files (probes/model.py). Unknown is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class ModelFacts:
    """What the guard knows about a model, normalised from its config.json (text part)."""

    model: str
    source: str  # local | cache | hub | bundled
    architecture: str | None = None
    model_type: str | None = None
    num_layers: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    torch_dtype: str | None = None
    derived_max_len: int | None = None
    derived_max_len_key: str | None = None
    sliding_window: int | None = None
    layer_types: tuple[str, ...] | None = None  # "full" | "sliding" | "state" | "none" per layer, when they differ
    state_bytes_per_layer: int | None = None  # one sequence's Mamba / linear-attention state per state layer, TP 1
    state_conv_row_bytes: int | None = None  # a conv-state row: one more per speculative token, TP 1
    global_kv_heads: int | None = None  # Gemma 4: its full-attention layers' own KV heads and head size
    global_head_dim: int | None = None
    mtp_layers: int = 0  # multi-token-prediction layers in the checkpoint (the MTP drafter's)
    mtp_bytes: int | None = None  # those layers' bytes in 16 bits (model_weights.mtp_layer_bytes)
    num_experts: int | None = None
    moe_intermediate_size: int | None = None
    experts_per_token: int | None = None
    vision_params: int | None = None  # the vision tower and projector of a multimodal wrapper (an estimate)
    audio_params: int | None = None  # its audio encoder, where the config has one (an estimate)
    mm_tokens_per_item: int | None = None  # the most language-model tokens one image becomes, where config says
    kv_lora_rank: int | None = None  # MLA (DeepSeek-style) latent
    qk_rope_head_dim: int | None = None
    # sparse MLA (DeepSeek-V3.2, GLM-5: config index_topk): the lightning indexer's key cache per token and layer
    indexer_key_bytes: int | None = None
    quant_method: str | None = None
    # parameters of the linear layers (attention or state mixers, MLPs, experts) and of the routed experts alone,
    # from config.json: what an online --quantization converts (preflight/weights.py); None: not known
    parameters: int | None = None  # all parameters, from config.json (model_weights.parts); None: not known
    linear_params: int | None = None
    expert_params: int | None = None
    expert_bytes: int | None = None  # the routed experts in the checkpoint's own format (expert parallel splits them)
    quant_bits: int | None = None
    quant_group_size: int | None = None
    # The KV cache dtype the checkpoint itself declares ("fp8"): what vLLM's --kv-cache-dtype auto uses
    checkpoint_kv_dtype: str | None = None
    is_multimodal: bool = False
    weights_bytes: int | None = None
    weights_source: str | None = None  # index | safetensors | hub-metadata | files | estimate
    weights_local: bool | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
