"""Pure: what a config.json says about a model's layers beyond plain attention (issue 27).

Read by the config's fields, never by the model's name, so an unknown architecture with the same fields is
planned the same way: which layers slide or keep a fixed state (Mamba, gated delta net), the size of that
state, the experts, the speculative (MTP) layers a checkpoint carries, and a multimodal wrapper's vision tower.
Each rule names the vLLM code it follows; where a value is missing the answer is None, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

FULL, SLIDING, STATE, NONE = "full", "sliding", "state", "none"  # NONE: an MLP-only layer, no cache
# An attention layer that reads an earlier layer's cache and keeps none: Gemma 3n / 4's last num_kv_shared_layers
# (vLLM gemma3n.py / gemma4.py pass kv_sharing_target_layer_name, 0.10+, and allocate no KV for them).
SHARED = "-shared"  # a suffix: "full-shared", "sliding-shared"
STATE_ELEMENT_BYTES = 2  # vLLM's mamba_ssm_cache_dtype "auto": the model's 16-bit dtype (config/cache.py)
# a config's own dtype for the temporal (SSM) state: Qwen3.5 / 3.6 say "mamba_ssm_dtype": "float32"
SSM_DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2}


def int_field(cfg: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` that holds an integer (a bool is not one); None when none does."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def layer_kinds(text: Mapping[str, Any], layers: int | None, sliding: int | None,
                disable_sliding_window: bool) -> tuple[str, ...] | None:
    """"full" | "sliding" | "state" | "none" per layer; None when every layer attends fully.

    - an explicit ``layer_types`` (transformers >= 4.53: gemma-3, gpt-oss, Qwen3-Next's "linear_attention",
      Granite-4's "mamba"); Llama-4's chunked local layers count as full: vLLM 0.10+ turns the hybrid KV manager
      off for chunked local attention unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1, so every
      layer gets a full-length cache;
    - Nemotron-H's ``hybrid_override_pattern`` ("M" Mamba, "*" attention, "-" MLP or "E" MoE only: no cache);
    - Qwen3-Next's ``full_attention_interval`` (every n-th layer full, the others gated-DeltaNet state);
    - Jamba's ``attn_layer_period`` / ``attn_layer_offset`` (the other layers are Mamba);
    - gemma-3's ``sliding_window_pattern`` (layer i slides unless (i + 1) % pattern == 0, vLLM gemma3.py);
    - gemma-2 alternates (even layers slide), and a window with nothing else slides every layer (Mistral v0.1).
    """
    if not layers:
        return None
    kinds: list[str] | None = None
    explicit = text.get("layer_types")
    pattern = text.get("hybrid_override_pattern")
    if isinstance(explicit, list) and len(explicit) == layers:
        kinds = [_kind(str(t)) for t in explicit]
    elif isinstance(pattern, str) and pattern:
        kinds = [STATE if c == "M" else FULL if c == "*" else NONE for c in pattern]
        if len(kinds) != layers:
            return None
    elif interval := int_field(text, "full_attention_interval"):
        # Qwen3-Next without an explicit layer_types: transformers' Qwen3NextConfig makes layer i full attention
        # when (i + 1) % full_attention_interval == 0 and gated-DeltaNet linear attention otherwise
        kinds = [FULL if (i + 1) % interval == 0 else STATE for i in range(layers)]
    elif int_field(text, "attn_layer_period") and text.get("model_type") == "jamba":
        period, offset = int_field(text, "attn_layer_period") or 1, int_field(text, "attn_layer_offset") or 0
        kinds = [FULL if i % period == offset else STATE for i in range(layers)]
    elif sliding and (step := int_field(text, "sliding_window_pattern")):
        kinds = [FULL if (i + 1) % step == 0 else SLIDING for i in range(layers)]
    elif sliding and text.get("model_type") == "gemma2":
        kinds = [SLIDING if i % 2 == 0 else FULL for i in range(layers)]
    elif sliding:
        kinds = [SLIDING] * layers
    shared = int_field(text, "num_kv_shared_layers") or 0
    if kinds is None and not shared:
        return None
    kinds = kinds or [FULL] * layers
    if disable_sliding_window or not sliding:
        kinds = [FULL if k == SLIDING else k for k in kinds]
    if 0 < shared < layers:
        kinds = kinds[:layers - shared] + [k + SHARED if k in (FULL, SLIDING) else k for k in kinds[layers - shared:]]
    return tuple(kinds) if any(k != FULL for k in kinds) else None


def _kind(name: str) -> str:
    name = name.lower()
    if "sliding" in name:
        return SLIDING
    if "mamba" in name or "linear" in name or name in ("conv", "ssm"):
        return STATE
    return FULL


def state_bytes_per_layer(text: Mapping[str, Any]) -> int | None:
    """Bytes of one sequence's fixed state in one state layer, at tensor parallel 1 (it splits by heads).

    vLLM's MambaStateShapeCalculator (model_executor/layers/mamba/mamba_utils.py): a conv state of
    (kernel - 1) x conv_dim and a temporal state, both in the model dtype by default:
    - gated delta net (Qwen3-Next, Qwen3.5): conv_dim = 2 x key heads x key dim + value heads x value dim,
      temporal = value heads x key dim x value dim;
    - Mamba-2 (Granite-4, Nemotron-H): conv_dim = intermediate + 2 x groups x state, temporal = heads x head dim
      x state;
    - Mamba-1 (Jamba): conv_dim = intermediate, temporal = intermediate x state.
    The temporal state is in the config's ``mamba_ssm_dtype`` where it names one. Speculative decoding adds a conv
    row per speculative token (``state_conv_row_bytes``): the shared startups/032 (Qwen3.6-35B-A3B, MTP with 3
    tokens, vLLM 0.25.1) printed "Setting attention block size to 1072 tokens": (3 + 3) x 8192 x 2 + 32 x 128 x
    128 x 4 bytes = 67 pages of 16 tokens x 2048 bytes.
    """
    # Nemotron-H's own mamba_ssm_cache_dtype is what vLLM's "auto" takes (NemotronHForCausalLMConfig
    # .verify_and_update_config, model_executor/models/config.py)
    ssm_dtype = text.get("mamba_ssm_dtype") or text.get("mamba_ssm_cache_dtype")
    temporal_bytes = SSM_DTYPE_BYTES.get(str(ssm_dtype), STATE_ELEMENT_BYTES)
    if (k_heads := int_field(text, "linear_num_key_heads")) and (v_heads := int_field(text, "linear_num_value_heads")):
        k_dim, v_dim = int_field(text, "linear_key_head_dim"), int_field(text, "linear_value_head_dim")
        kernel = int_field(text, "linear_conv_kernel_dim")
        if not (k_dim and v_dim and kernel):
            return None
        conv = (kernel - 1) * (2 * k_heads * k_dim + v_heads * v_dim)
        return conv * STATE_ELEMENT_BYTES + v_heads * k_dim * v_dim * temporal_bytes
    hidden = int_field(text, "hidden_size")
    state = int_field(text, "mamba_d_state", "ssm_state_size", "state_size")
    kernel = int_field(text, "mamba_d_conv", "conv_kernel", "mamba_conv_kernel")
    heads = int_field(text, "mamba_n_heads", "mamba_num_heads")
    head_dim = int_field(text, "mamba_d_head", "mamba_head_dim")
    if not (state and kernel):
        return None
    if heads and head_dim:  # Mamba-2
        groups = int_field(text, "mamba_n_groups", "n_groups") or 1
        inter = heads * head_dim
        return (kernel - 1) * (inter + 2 * groups * state) * STATE_ELEMENT_BYTES + inter * state * temporal_bytes
    expand = int_field(text, "mamba_expand", "expand")
    if not (hidden and expand):
        return None
    inter = expand * hidden  # Mamba-1
    return (kernel - 1) * inter * STATE_ELEMENT_BYTES + inter * state * temporal_bytes


def state_conv_row_bytes(text: Mapping[str, Any]) -> int | None:
    """One row of a state layer's conv state (conv_dim elements, 16-bit): what each speculative token adds."""
    if (k_heads := int_field(text, "linear_num_key_heads")) and (v_heads := int_field(text, "linear_num_value_heads")):
        k_dim, v_dim = int_field(text, "linear_key_head_dim"), int_field(text, "linear_value_head_dim")
        return (2 * k_heads * k_dim + v_heads * v_dim) * STATE_ELEMENT_BYTES if k_dim and v_dim else None
    heads = int_field(text, "mamba_n_heads", "mamba_num_heads")
    head_dim = int_field(text, "mamba_d_head", "mamba_head_dim")
    state = int_field(text, "mamba_d_state", "ssm_state_size", "state_size")
    if heads and head_dim and state:
        groups = int_field(text, "mamba_n_groups", "n_groups") or 1
        return (heads * head_dim + 2 * groups * state) * STATE_ELEMENT_BYTES
    hidden, expand = int_field(text, "hidden_size"), int_field(text, "mamba_expand", "expand")
    return expand * hidden * STATE_ELEMENT_BYTES if hidden and expand else None


def state_layer_params(text: Mapping[str, Any]) -> int | None:
    """Parameters of one state layer's mixer (it replaces attention there), from the same fields."""
    hidden = int_field(text, "hidden_size")
    if not hidden:
        return None
    if (k_heads := int_field(text, "linear_num_key_heads")) and (v_heads := int_field(text, "linear_num_value_heads")):
        k_dim, v_dim = int_field(text, "linear_key_head_dim") or 0, int_field(text, "linear_value_head_dim") or 0
        kernel = int_field(text, "linear_conv_kernel_dim") or 0
        key, value = k_heads * k_dim, v_heads * v_dim
        # in_proj_qkvz, in_proj_ba, conv1d, A_log + dt_bias, the gated norm, out_proj (vLLM qwen3_next.py)
        return (hidden * (2 * key + 2 * value) + hidden * 2 * v_heads + (2 * key + value) * kernel
                + 2 * v_heads + v_dim + value * hidden)
    state = int_field(text, "mamba_d_state", "ssm_state_size", "state_size") or 0
    kernel = int_field(text, "mamba_d_conv", "conv_kernel", "mamba_conv_kernel") or 0
    heads = int_field(text, "mamba_n_heads", "mamba_num_heads")
    head_dim = int_field(text, "mamba_d_head", "mamba_head_dim")
    if heads and head_dim:  # Mamba-2: in_proj (z, x, B, C, dt), conv1d, A, D, dt_bias, norm, out_proj
        groups = int_field(text, "mamba_n_groups", "n_groups") or 1
        inter = heads * head_dim
        conv_dim = inter + 2 * groups * state
        return hidden * (inter + conv_dim + heads) + conv_dim * kernel + 3 * heads + inter + inter * hidden
    expand = int_field(text, "mamba_expand", "expand")
    if not expand:
        return None
    inter = expand * hidden  # Mamba-1: in_proj, conv1d, x_proj, dt_proj, A, D, out_proj
    dt_rank = int_field(text, "mamba_dt_rank") or math.ceil(hidden / 16)
    return (2 * hidden * inter + inter * kernel + inter * (dt_rank + 2 * state) + dt_rank * inter + inter
            + inter * state + inter + inter * hidden)


def mtp_layers(text: Mapping[str, Any]) -> int:
    """Multi-token-prediction layers the checkpoint carries (DeepSeek-V3 ``num_nextn_predict_layers``,
    Qwen3-Next ``mtp_num_hidden_layers``, GLM-4.5 ``num_nextn_predict_layers``); vLLM loads them only as the
    drafter of ``--speculative-config '{"method": "mtp"}'``."""
    return int_field(text, "num_nextn_predict_layers", "mtp_num_hidden_layers") or 0


# Vision towers with a gated MLP whose vision_config names no activation: dots.ocr's DotsSwiGLUFFN (fc1, fc3, fc2;
# vLLM model_executor/models/dots_ocr.py, 0.11+).
GATED_VISION_TYPES = frozenset(("dots_ocr",))


def vision_params(config: Mapping[str, Any]) -> int | None:
    """Parameters of a multimodal wrapper's vision tower and projector, from ``vision_config`` (a ViT: per block
    qkv + output projection and a two-matrix MLP, patch embedding, and a projector into the text hidden size).
    None when the config names no vision tower or lacks its sizes. An estimate: towers differ in details
    (gated MLPs, window attention, mergers) that change the count by a few percent of the tower."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    width = int_field(vision, "hidden_size", "embed_dim", "width")
    depth = int_field(vision, "num_hidden_layers", "depth", "layers")
    if not (width and depth):
        return None
    inter = int_field(vision, "intermediate_size", "mlp_dim") or 4 * width
    patch = int_field(vision, "patch_size") or 14
    channels = int_field(vision, "in_channels", "num_channels", "in_chans") or 3
    temporal = int_field(vision, "temporal_patch_size") or 1
    gated = 3 if (str(vision.get("hidden_act", "")).lower() in ("silu", "swiglu")
                  or config.get("model_type") in GATED_VISION_TYPES) else 2
    block = 4 * width * width + gated * width * inter + 4 * width
    embed = channels * temporal * patch * patch * width
    text_hidden = int_field(config.get("text_config") or {}, "hidden_size") or int_field(config, "hidden_size") or width
    out = int_field(vision, "out_hidden_size") or text_hidden
    merge = int_field(vision, "spatial_merge_size") or 1
    projector = (width * merge * merge) * (width * merge * merge) + (width * merge * merge) * out
    return depth * block + embed + projector


def audio_params(config: Mapping[str, Any]) -> int | None:
    """Parameters of an ``audio_config``'s Conformer encoder (Gemma 3n / 4's USM; transformers
    Gemma3nAudioConformerBlock): per block two macaron feed-forwards of 4x the width (16 w^2), attention (4 w^2) and
    a light convolution module (3 w^2), then the projection into the text width. An estimate, as for the vision
    tower; None without an audio_config or its sizes."""
    audio = config.get("audio_config")
    if not isinstance(audio, Mapping):
        return None
    width = int_field(audio, "hidden_size")
    depth = int_field(audio, "num_hidden_layers", "conf_num_hidden_layers")
    if not (width and depth):
        return None
    out = int_field(audio, "output_proj_dims") or width
    text_hidden = int_field(config.get("text_config") or {}, "hidden_size") or out
    return depth * 23 * width * width + width * out + out * text_hidden


# Qwen's vision wrappers size an image by their processor's max_pixels, not by config.json: its default over
# (patch x merge)^2 is 16,384 tokens, what vLLM printed for Qwen3.5-27B, Qwen3.6-27B and Qwen3.8-27B ("Encoder cache
# will be initialized with a budget of 16384 tokens", startups/048, 063, 068; vLLM 0.19-0.27).
QWEN_VL_TOKENS_PER_IMAGE = 16384
QWEN_VL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe")


def mm_tokens_per_item(config: Mapping[str, Any]) -> int | None:
    """The most tokens one image becomes in the language model: gemma-3's ``mm_tokens_per_image``, LLaVA's
    (image_size / patch_size)^2, the Qwen-VL processors' default; None where only the processor knows."""
    if (n := int_field(config, "mm_tokens_per_image")) is not None:
        return n
    if config.get("model_type") in QWEN_VL_TYPES and isinstance(config.get("vision_config"), Mapping):
        return QWEN_VL_TOKENS_PER_IMAGE
    vision = config.get("vision_config")
    if isinstance(vision, Mapping) and config.get("model_type") in ("llava", "llava_next"):
        size, patch = int_field(vision, "image_size"), int_field(vision, "patch_size")
        if size and patch:
            return (size // patch) ** 2
    return None


def moe_layer_flags(text: Mapping[str, Any], layers: int) -> tuple[bool, ...]:
    """Which layers hold routed experts (all False for a dense model), by the config's own placement keys:
    - Nemotron-H's ``hybrid_override_pattern``: its "E" layers (vLLM nemotron_h.py: NemotronHMoEDecoderLayer);
    - Jamba's ``expert_layer_period`` / ``expert_layer_offset``: layer i when i % period == offset (transformers
      JambaConfig.layers_num_experts, read by vLLM jamba.py), so Jamba-1.5's experts sit on every other layer;
    - Llama-4's ``interleave_moe_layer_step``: layer i when (i + 1) % step == 0 (vLLM llama4.py is_moe_layer), so
      Maverick's 128 experts sit on every other layer;
    - Qwen2/3-MoE's ``decoder_sparse_step`` and ``mlp_only_layers`` (vLLM qwen3_moe.py Qwen3MoeDecoderLayer);
    - DeepSeek / GLM's ``first_k_dense_replace`` and ``moe_layer_freq`` (vLLM deepseek_v2.py DeepseekV2DecoderLayer).
    """
    if not experts(text)[0]:
        return (False,) * layers
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) == layers:
        return tuple(c == "E" for c in pattern)
    if (period := int_field(text, "expert_layer_period")) is not None:
        offset = int_field(text, "expert_layer_offset") or 0
        return tuple(period > 0 and i % period == offset for i in range(layers))
    if (step := int_field(text, "interleave_moe_layer_step")) is not None:
        return tuple(step > 0 and (i + 1) % step == 0 for i in range(layers))
    first = int_field(text, "first_k_dense_replace") or 0
    freq = int_field(text, "moe_layer_freq") or 1
    sparse = int_field(text, "decoder_sparse_step") or 1
    dense_only = {i for i in text.get("mlp_only_layers") or () if isinstance(i, int)}
    return tuple(i >= first and i % freq == 0 and (i + 1) % sparse == 0 and i not in dense_only
                 for i in range(layers))


# DeepSeek sparse attention's indexer quantizes its keys to fp8 with one fp32 scale per 128 values (vLLM
# deepseek_v2.py Indexer: DeepseekV32IndexerCache(head_dim=head_dim + head_dim // quant_block_size * 4, uint8),
# quant_block_size 128): 132 bytes a token for index_head_dim 128, in every layer, whole on each GPU.
INDEXER_QUANT_BLOCK = 128


def indexer_key_bytes(text: Mapping[str, Any]) -> int | None:
    """The indexer's key-cache bytes per token and layer of a sparse-MLA model (``index_topk`` in its config, as
    vLLM tells DeepSeek-V3.2 apart); None for any other model."""
    head = int_field(text, "index_head_dim")
    if int_field(text, "index_topk") is None or not head:
        return None
    return head + head // INDEXER_QUANT_BLOCK * 4


def experts(text: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Routed experts and their intermediate size (None, None for a dense model)."""
    n = int_field(text, "n_routed_experts", "num_experts", "num_local_experts")
    if not n or n < 2:  # one "expert" is a dense MLP (vLLM hunyuan_v1.py builds its MLP for num_experts 1)
        return None, None
    return n, int_field(text, "moe_intermediate_size", "intermediate_size")
