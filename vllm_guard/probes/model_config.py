"""Pure: a Hugging Face config.json -> the fields of ModelFacts, as vLLM 0.33 reads them.

vLLM reads the *text* config of multimodal wrappers (``text_config`` and its
cousins); a key that sits one level down must be found there, never replaced by
a default. Where a value is missing the field stays None and a note says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_guard.probes import model_arch

# vLLM 0.33 transformers_utils/model_arch_config_convertor.py:376-396: the derived
# maximum length is the smallest of these keys present in the text config.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose factor does not multiply the length: their max_position_embeddings is
# already the extended length (vLLM 0.33 config/model.py, _get_and_verify_max_len).
ROPE_TYPES_NOT_SCALED = ("su", "longrope", "llama3")
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")
DEFAULT_MAX_LEN = 2048  # vLLM's fallback, with a warning, when no length key exists

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1}


def text_config(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The language-model part of a config, and whether it was nested (multimodal)."""
    for key in TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict) and nested:
            return nested, True
    return config, False


def _int(cfg: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def normalize(config: Mapping[str, Any], *, disable_sliding_window: bool = False) -> dict[str, Any]:
    """The ModelFacts fields that come from config.json, plus ``notes``."""
    notes: list[str] = []
    text, nested = text_config(config)
    archs = config.get("architectures") or text.get("architectures") or []
    heads = _int(text, "num_attention_heads", "n_head", "num_heads")
    hidden = _int(text, "hidden_size", "n_embd", "d_model")
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers")
    kv_heads = _int(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
    if kv_heads is None and heads is not None:
        kv_heads = heads  # no GQA key: every head has its own K and V (Llama-2 13B)
    head_dim = _int(text, "head_dim")
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    dtype = text.get("torch_dtype") or config.get("torch_dtype") or text.get("dtype") or config.get("dtype")
    quant = config.get("quantization_config") or text.get("quantization_config") or {}
    sliding = _int(text, "sliding_window")
    if text.get("use_sliding_window") is False:
        sliding = None  # Qwen2.5 lists a window it does not use
    derived, key = derived_max_len(text, notes)
    if disable_sliding_window and sliding and derived:
        derived, key = min(derived, sliding), "sliding_window"
    fields: dict[str, Any] = {
        "architecture": archs[0] if archs else None,
        "model_type": config.get("model_type") or text.get("model_type"),
        "num_layers": layers,
        "num_attention_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden_size": hidden,
        "intermediate_size": _int(text, "intermediate_size", "ffn_dim", "n_inner"),
        "vocab_size": _int(text, "vocab_size") or _int(config, "vocab_size"),
        "torch_dtype": dtype if isinstance(dtype, str) else None,
        "derived_max_len": derived,
        "derived_max_len_key": key,
        "sliding_window": sliding,
        "layer_types": model_arch.layer_kinds(text, layers, sliding, disable_sliding_window),
        "state_bytes_per_layer": model_arch.state_bytes_per_layer(text),
        "mtp_layers": model_arch.mtp_layers(text),
        "num_experts": model_arch.experts(text)[0],
        "moe_intermediate_size": model_arch.experts(text)[1],
        "vision_params": model_arch.vision_params(config),
        "mm_tokens_per_item": model_arch.mm_tokens_per_item(config),
        "kv_lora_rank": _int(text, "kv_lora_rank"),
        "qk_rope_head_dim": _int(text, "qk_rope_head_dim"),
        "quant_method": quant.get("quant_method") if isinstance(quant, dict) else None,
        "quant_bits": _int(quant, "bits", "w_bit") if isinstance(quant, dict) else None,
        "quant_group_size": _int(quant, "group_size", "q_group_size") if isinstance(quant, dict) else None,
        "is_multimodal": nested or "vision_config" in config,
    }
    for name in ("num_layers", "num_attention_heads", "hidden_size", "vocab_size"):
        if fields[name] is None:
            notes.append(f"config.json has no {name}; estimates that need it are unknown")
    fields["notes"] = tuple(notes)
    return fields


def derived_max_len(text: Mapping[str, Any], notes: list[str]) -> tuple[int, str]:
    """vLLM's derived max_model_len (vllm-reference §2g): min over length keys, RoPE-scaled."""
    found = [(v, k) for k in MAX_LEN_KEYS if (v := _int(text, k)) is not None]
    if not found:
        notes.append(f"config.json has no length key; vLLM assumes {DEFAULT_MAX_LEN}")
        return DEFAULT_MAX_LEN, "default"
    value, key = min(found)
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    if isinstance(rope, dict):
        rope_type = rope.get("rope_type") or rope.get("type")
        factor = rope.get("factor")
        # Gemma 3's factor scales only its global layers; vLLM keeps the configured length.
        if (
            isinstance(factor, (int, float))
            and rope_type not in ROPE_TYPES_NOT_SCALED
            and text.get("model_type") != "gemma3_text"
        ):
            if rope_type == "yarn":
                # YaRN extends the *original* length: DeepSeek-V2-Lite 4096 x 40 = 163840;
                # Qwen2.5 with YaRN factor 4 over 32768 = 131072.
                value = _int(rope, "original_max_position_embeddings") or value
            value = int(value * factor)
    return value, key


def estimate_parameters(f: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """Parameter count of a decoder from its config: the fallback when no weight metadata exists.

    Dense and MoE MLPs, standard and MLA attention. Exact for Llama-3.1-8B
    (8,030,261,248, the safetensors index's 16,060,522,496 bytes in bf16).
    """
    text, _ = text_config(config)
    shape = [f.get(k) for k in ("hidden_size", "num_layers", "vocab_size", "num_attention_heads", "num_kv_heads",
                                "head_dim", "intermediate_size")]
    if not all(isinstance(v, int) for v in shape):
        return None
    hidden, layers, vocab, heads, kv_heads, head_dim, inter = (int(v or 0) for v in shape)
    if f.get("kv_lora_rank") is not None:
        attn = _mla_params(text, hidden, heads)
    else:
        attn = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
        if text.get("attention_bias") or text.get("model_type", "").startswith("qwen2"):
            attn += heads * head_dim + 2 * kv_heads * head_dim
    gated = 3 if text.get("hidden_act", "silu") != "gelu" or text.get("model_type") in ("gemma2", "gemma") else 2
    dense_mlp = gated * hidden * inter
    experts = _int(text, "n_routed_experts", "num_experts", "num_local_experts")
    total = 0
    if experts:
        moe_inter = _int(text, "moe_intermediate_size") or inter
        shared = _int(text, "n_shared_experts") or 0
        first_dense = _int(text, "first_k_dense_replace") or 0
        moe_mlp = gated * hidden * moe_inter * (experts + shared) + hidden * experts  # + router
        # Qwen2-MoE / Qwen3-Next: one shared expert of its own size and its sigmoid gate
        if (shared_inter := _int(text, "shared_expert_intermediate_size")):
            moe_mlp += gated * hidden * shared_inter + hidden
        total += first_dense * dense_mlp + (layers - first_dense) * moe_mlp
    else:
        # Nemotron-H's blocks are one thing each: "M" a Mamba mixer, "*" attention, "-" an MLP
        pattern = text.get("hybrid_override_pattern")
        total += (pattern.count("-") if isinstance(pattern, str) and pattern else layers) * dense_mlp
    # Per layer: its mixer (attention, or a Mamba / gated-delta-net state layer, or none) and two norms.
    kinds = f.get("layer_types") or ()
    state_layers = sum(1 for k in kinds if k == model_arch.STATE)
    no_mixer = sum(1 for k in kinds if k == model_arch.NONE)
    state_mixer = model_arch.state_layer_params(text) if state_layers else 0
    if state_mixer is None:
        return None
    total += (layers - state_layers - no_mixer) * attn + state_layers * state_mixer + layers * 2 * hidden
    total += vocab * hidden * (1 if _tied(config) else 2) + hidden
    total += f.get("vision_params") or 0  # a multimodal wrapper's vision tower (model_arch.vision_params)
    return int(total)


def _tied(config: Mapping[str, Any]) -> bool:
    text, _ = text_config(config)
    return bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))


def _mla_params(text: Mapping[str, Any], hidden: int, heads: int) -> int:
    rank = _int(text, "kv_lora_rank") or 0
    rope = _int(text, "qk_rope_head_dim") or 0
    nope = _int(text, "qk_nope_head_dim") or 0
    v_dim = _int(text, "v_head_dim") or nope
    q_rank = _int(text, "q_lora_rank")
    q = hidden * heads * (nope + rope) if not q_rank else hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    kv = hidden * (rank + rope) + rank + rank * heads * (nope + v_dim)
    return q + kv + heads * v_dim * hidden


def estimate_weights_bytes(f: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """Bytes of the checkpoint, from the parameter estimate and the weight format."""
    params = estimate_parameters(f, config)
    if params is None:
        return None
    bits = f.get("quant_bits")
    method = (f.get("quant_method") or "").lower()
    embed = f["vocab_size"] * f["hidden_size"] * (1 if _tied(config) else 2)  # embeddings and lm_head
    if method in ("fp8", "fbgemm_fp8"):
        # One byte per linear weight; the embeddings and lm_head stay 16-bit. Without them the estimate
        # was 5.2% low on a real start-up: DeepSeek-R1-Distill-Qwen-32B-FP8, "Model loading took
        # 32.1993 GiB" (vLLM 0.11.0, shared startups/019), and 2.2% low on Qwen3-30B-A3B with
        # --quantization fp8, "29.08 GiB" (vLLM 0.22.1, startups/014).
        return (params - embed) + embed * 2
    if method == "mxfp4":
        # gpt-oss: the experts' weights in MXFP4 (4-bit values, one 8-bit scale per 32), everything else 16-bit
        # (quantization_config.modules_to_not_convert of openai/gpt-oss-120b's config.json).
        text, _ = text_config(config)
        experts = _int(text, "num_local_experts", "num_experts") or 0
        inter = _int(text, "moe_intermediate_size", "intermediate_size") or 0
        expert_params = (f.get("num_layers") or 0) * experts * 3 * f["hidden_size"] * inter
        return int((params - expert_params) * 2 + expert_params * (4 + 8 / 32) / 8)
    if bits and method in ("awq", "gptq", "auto_gptq", "awq_marlin", "gptq_marlin", "compressed-tensors"):
        # Packed weights plus a 16-bit scale (and packed zero) per group; embeddings and head stay 16-bit.
        group = f.get("quant_group_size") or 128
        linear = params - embed
        return int(linear * bits / 8 + linear / group * (2 + bits / 8) + embed * 2)
    dtype_bytes = DTYPE_BYTES.get(str(f.get("torch_dtype")), 2)
    return params * dtype_bytes
