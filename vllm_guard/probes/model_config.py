"""Pure: a Hugging Face config.json -> the fields of ModelFacts, as vLLM 0.33 reads them.

vLLM reads the *text* config of multimodal wrappers (``text_config`` and its
cousins); a key that sits one level down must be found there, never replaced by
a default. Where a value is missing the field stays None and a note says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_guard.probes import model_arch, model_weights
from vllm_guard.probes.model_arch import int_field

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



# A wrapper's text_config lists only what differs from its class's defaults, and transformers fills in the rest
# (llava-hf/llava-1.5-7b-hf names just model_type "llama" and its vocab): LlamaConfig's __init__ defaults; and
# Gemma3TextConfig's (transformers 4.50+), which google/gemma-3-4b-it's minimal config leaves to them.
NESTED_TEXT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "llama": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
              "max_position_embeddings": 2048, "vocab_size": 32000, "hidden_act": "silu"},
    "gemma3_text": {"vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131_072,
                    "tie_word_embeddings": True, "query_pre_attn_scalar": 256, "sliding_window": 4096,
                    "sliding_window_pattern": 6},
    # DiffusionGemma's text config omits the two flags its Gemma 4 backbone needs, which vLLM sets itself:
    # diffusion_gemma.py (text_config.attention_k_eq_v = True: its full-attention layers have no v_proj) and
    # gemma4.py (enable_moe_block from num_experts: the dense MLP runs beside the experts); lablup/mlxcel's parser
    # of the real checkpoint config forces the same two (src/models/diffusion_gemma/tests.rs).
    "diffusion_gemma_text": {"attention_k_eq_v": True, "enable_moe_block": True},
}


def text_config(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The language-model part of a config, and whether it was nested (multimodal)."""
    for key in TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict) and nested:
            return {**NESTED_TEXT_DEFAULTS.get(str(nested.get("model_type")), {}), **nested}, True
    return config, False


def normalize(config: Mapping[str, Any], *, disable_sliding_window: bool = False) -> dict[str, Any]:
    """The ModelFacts fields that come from config.json, plus ``notes``."""
    notes: list[str] = []
    text, nested = text_config(config)
    archs = config.get("architectures") or text.get("architectures") or []
    heads = int_field(text, "num_attention_heads", "n_head", "num_heads")
    hidden = int_field(text, "hidden_size", "n_embd", "d_model")
    layers = int_field(text, "num_hidden_layers", "n_layer", "num_layers")
    kv_heads = int_field(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
    if kv_heads is None and heads is not None:
        kv_heads = heads  # no GQA key: every head has its own K and V (Llama-2 13B)
    head_dim = int_field(text, "head_dim")
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    dtype = text.get("torch_dtype") or config.get("torch_dtype") or text.get("dtype") or config.get("dtype")
    quant = config.get("quantization_config") or text.get("quantization_config") or {}
    sliding = int_field(text, "sliding_window")
    if text.get("use_sliding_window") is False:
        sliding = None  # Qwen2.5 lists a window it does not use
    n_experts, moe_inter = model_arch.experts(text)
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
        "intermediate_size": int_field(text, "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size",
                                  "moe_intermediate_size") or _falcon_ffn(text, hidden),
        "vocab_size": int_field(text, "vocab_size") or int_field(config, "vocab_size"),
        "torch_dtype": dtype if isinstance(dtype, str) else None,
        "derived_max_len": derived,
        "derived_max_len_key": key,
        "sliding_window": sliding,
        "layer_types": model_arch.layer_kinds(text, layers, sliding, disable_sliding_window),
        "state_bytes_per_layer": model_arch.state_bytes_per_layer(text),
        "state_conv_row_bytes": model_arch.state_conv_row_bytes(text),
        "mtp_layers": model_arch.mtp_layers(text),
        "global_kv_heads": int_field(text, "num_global_key_value_heads"),
        "global_head_dim": int_field(text, "global_head_dim"),
        "num_experts": n_experts,
        "moe_intermediate_size": moe_inter,
        "experts_per_token": int_field(text, "num_experts_per_tok", "experts_per_token", "top_k_experts", "moe_topk")
        if n_experts else None,
        "vision_params": model_arch.vision_params(config),
        "audio_params": model_arch.audio_params(config),
        "mm_tokens_per_item": model_arch.mm_tokens_per_item(config),
        "kv_lora_rank": int_field(text, "kv_lora_rank"),
        "qk_rope_head_dim": int_field(text, "qk_rope_head_dim"),
        "indexer_key_bytes": model_arch.indexer_key_bytes(text),
        "quant_method": quant.get("quant_method") if isinstance(quant, dict) else None,
        "quant_bits": int_field(quant, "bits", "w_bit") if isinstance(quant, dict) else None,
        "quant_group_size": int_field(quant, "group_size", "q_group_size") if isinstance(quant, dict) else None,
        "checkpoint_kv_dtype": model_weights.checkpoint_kv_dtype(quant),
        "is_multimodal": nested or "vision_config" in config,
    }
    for name in ("num_layers", "num_attention_heads", "hidden_size", "vocab_size"):
        if fields[name] is None:
            notes.append(f"config.json has no {name}; estimates that need it are unknown")
    found = model_weights.parts(fields, text, _tied(config))
    fields["mtp_bytes"] = model_weights.mtp_layer_bytes(found, fields, text) if found is not None else None
    fields["parameters"] = found.total if found is not None else None
    fields["linear_params"] = found.linear if found is not None else None
    fields["expert_params"] = found.experts if found is not None else None
    fields["expert_bytes"] = model_weights.expert_bytes(found, quant, fields["torch_dtype"]) if found else None
    fields["notes"] = tuple(notes)
    return fields


def _falcon_ffn(text: Mapping[str, Any], hidden: int | None) -> int | None:
    """FalconConfig's default ffn_hidden_size: four times the hidden size."""
    return 4 * hidden if hidden and text.get("model_type") == "falcon" else None


def derived_max_len(text: Mapping[str, Any], notes: list[str]) -> tuple[int, str]:
    """vLLM's derived max_model_len (vllm-reference §2g): min over length keys, RoPE-scaled."""
    found = [(v, k) for k in MAX_LEN_KEYS if (v := int_field(text, k)) is not None]
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
                value = int_field(rope, "original_max_position_embeddings") or value
            value = int(value * factor)
    return value, key


def estimate_parameters(f: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """Parameter count of a model from its config: the fallback when no weight metadata exists
    (model_weights.parts: dense and MoE MLPs, standard, MLA and state-layer mixers, a vision tower)."""
    text, _ = text_config(config)
    found = model_weights.parts(f, text, _tied(config))
    return found.total if found is not None else None


# Model types whose transformers config class ties the lm_head to the embeddings unless told otherwise
# (GemmaConfig, Gemma2Config, Gemma3TextConfig, FalconConfig: tie_word_embeddings=True): counting the head twice
# put google/gemma-2b-it 20.9% over its safetensors index and medgemma-27b-it 5.1% over.
TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "falcon")


def _tied(config: Mapping[str, Any]) -> bool:
    text, _ = text_config(config)
    default = str(text.get("model_type") or config.get("model_type")) in TIED_BY_DEFAULT
    return bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", default)))


def estimate_weights_bytes(f: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """Bytes of the checkpoint, from the parameters by part and the weight format.

    The config's quantization_config decides the format; without one, the fields' quant_method (an online
    ``--quantization fp8``, or a format known from the repository's name). FP8 keeps the embeddings and lm_head in
    16 bits: without that the estimate was 5.2% low on DeepSeek-R1-Distill-Qwen-32B-FP8, "Model loading took
    32.1993 GiB" (vLLM 0.11.0, shared startups/019), and 2.2% low on Qwen3-30B-A3B with --quantization fp8,
    "29.08 GiB" (vLLM 0.22.1, startups/014). gpt-oss keeps all but its experts in 16 bits
    (quantization_config.modules_to_not_convert of openai/gpt-oss-120b).
    """
    text, _ = text_config(config)
    found = model_weights.parts(f, text, _tied(config))
    if found is None:
        return None
    quant = config.get("quantization_config") or text.get("quantization_config")
    if not quant and f.get("quant_method"):
        quant = {"quant_method": f.get("quant_method"), "bits": f.get("quant_bits"),
                 "group_size": f.get("quant_group_size")}
    dtype_bytes = model_weights.DTYPE_BYTES.get(str(f.get("torch_dtype")), 2)
    return model_weights.bytes_of(found, model_weights.weight_format(quant), dtype_bytes)
