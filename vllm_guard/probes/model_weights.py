"""Pure: a checkpoint's size from its config.json when no safetensors index says it: the parameters by part
(embeddings, attention or state mixers, dense MLPs, routed and shared experts, norms, a vision tower), each part
in the format the quantization_config gives it.

Exact for plain dense decoders (Llama-3.1-8B: 8,030,261,248 parameters, the index's 16,060,522,496 bytes);
tests/test_bundled_models.py holds every bundled config with a real index total against its estimate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_guard.probes import model_arch

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1}


def _int(cfg: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


@dataclass(frozen=True)
class Parts:
    embed: int  # embeddings and lm_head (once when tied)
    attention: int  # attention projections and state-layer mixers
    mlp: int  # dense MLPs
    experts: int  # routed experts and their routers
    shared: int  # shared experts
    norms: int
    vision: int  # a multimodal wrapper's vision tower and projector

    @property
    def total(self) -> int:
        return self.embed + self.attention + self.mlp + self.experts + self.shared + self.norms + self.vision


def parts(f: Mapping[str, Any], text: Mapping[str, Any], tied: bool) -> Parts | None:
    """The parameters by part; None when a shape the count needs is missing."""
    shape = [f.get(k) for k in ("hidden_size", "num_layers", "vocab_size", "num_attention_heads", "num_kv_heads",
                                "head_dim", "intermediate_size")]
    if not all(isinstance(v, int) for v in shape):
        return None
    hidden, layers, vocab, heads, kv_heads, head_dim, inter = (int(v or 0) for v in shape)
    if f.get("kv_lora_rank") is not None:
        attn = _mla_params(text, hidden, heads)
    else:
        q_out = heads * head_dim * (2 if text.get("attn_output_gate") else 1)  # Qwen3-Next / 3.5: a gated output
        attn = hidden * q_out + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
        if text.get("attention_bias") or str(text.get("model_type", "")).startswith("qwen2"):
            attn += heads * head_dim + 2 * kv_heads * head_dim
    # Gemma's gelu MLP is gated (gate, up, down); Falcon's default activation is an ungated gelu (FalconConfig)
    act = text.get("hidden_act", "gelu" if text.get("model_type") == "falcon" else "silu")
    gated = 3 if act != "gelu" or text.get("model_type") in ("gemma2", "gemma") else 2
    dense_mlp = gated * hidden * inter
    n_experts = _int(text, "n_routed_experts", "num_experts", "num_local_experts")
    mlp = experts = shared = 0
    if n_experts:
        moe_inter = _int(text, "moe_intermediate_size") or inter
        first_dense = _int(text, "first_k_dense_replace") or 0
        moe_layers = layers - first_dense
        mlp = first_dense * dense_mlp
        experts = moe_layers * (gated * hidden * moe_inter * n_experts + hidden * n_experts)  # + router
        shared = moe_layers * gated * hidden * moe_inter * (_int(text, "n_shared_experts") or 0)
        # Qwen2-MoE / Qwen3-Next: one shared expert of its own size and its sigmoid gate
        if (shared_inter := _int(text, "shared_expert_intermediate_size")):
            shared += moe_layers * (gated * hidden * shared_inter + hidden)
    else:
        # Nemotron-H's blocks are one thing each: "M" a Mamba mixer, "*" attention, "-" an MLP
        pattern = text.get("hybrid_override_pattern")
        mlp = (pattern.count("-") if isinstance(pattern, str) and pattern else layers) * dense_mlp
    kinds = f.get("layer_types") or ()
    state_layers = sum(1 for k in kinds if k == model_arch.STATE)
    no_mixer = sum(1 for k in kinds if k == model_arch.NONE)
    state_mixer = model_arch.state_layer_params(text) if state_layers else 0
    if state_mixer is None:
        return None
    mixers = (layers - state_layers - no_mixer) * attn + state_layers * state_mixer
    embed = vocab * hidden * (1 if tied else 2)
    return Parts(embed, mixers, mlp, experts, shared, layers * 2 * hidden + hidden, f.get("vision_params") or 0)


def _mla_params(text: Mapping[str, Any], hidden: int, heads: int) -> int:
    rank = _int(text, "kv_lora_rank") or 0
    rope = _int(text, "qk_rope_head_dim") or 0
    nope = _int(text, "qk_nope_head_dim") or 0
    v_dim = _int(text, "v_head_dim") or nope
    q_rank = _int(text, "q_lora_rank")
    q = hidden * heads * (nope + rope) if not q_rank else hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    kv = hidden * (rank + rope) + rank + rank * heads * (nope + v_dim)
    return q + kv + heads * v_dim * hidden


# --- the weight format ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    method: str  # "" (16-bit) | fp8 | mxfp4 | nvfp4 | int (AWQ, GPTQ, compressed-tensors integers)
    bits: int | None = None
    group: int | None = None
    keeps: frozenset[str] = frozenset()  # parts the checkpoint leaves in 16 bits (its ignore list)


_KEEP_PATTERNS = {"attention": re.compile(r"self_attn|linear_attn|\.attn\b|attention"),
                  "shared": re.compile(r"shared_expert"), "mlp": re.compile(r"\.mlp\*?$|\.mlp\.(?:gate|up|down)")}


def weight_format(quant: Mapping[str, Any] | None) -> Format:
    """The format of the linear weights a quantization_config names, and the parts it leaves in 16 bits."""
    if not isinstance(quant, Mapping) or not quant:
        return Format("")
    method = str(quant.get("quant_method") or "").lower()
    ignored = [str(x) for x in (quant.get("ignore") or quant.get("modules_to_not_convert") or [])]
    keeps = frozenset(part for part, pattern in _KEEP_PATTERNS.items() if any(pattern.search(x) for x in ignored))
    if method in ("fp8", "fbgemm_fp8"):
        return Format("fp8", 8, keeps=keeps)
    if method == "mxfp4":
        return Format("mxfp4", 4, 32, keeps=keeps | {"attention", "mlp", "shared"})  # gpt-oss: experts only
    if method == "modelopt":
        algo = str(quant.get("quant_algo") or "").upper()
        return Format("nvfp4", 4, 16, keeps) if "FP4" in algo else Format("fp8", 8, keeps=keeps)
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping) and groups:
        # the group for plain "Linear" targets, else the first: the others name a few modules each
        chosen = next((g for g in groups.values() if isinstance(g, Mapping) and "Linear" in (g.get("targets") or [])),
                      next(iter(groups.values())))
        weights = chosen.get("weights") if isinstance(chosen, Mapping) else None
        if isinstance(weights, Mapping):
            bits, kind = _int(weights, "num_bits"), str(weights.get("type") or "int")
            group = _int(weights, "group_size")
            if kind == "float" and bits == 4:
                return Format("nvfp4", 4, group or 16, keeps)
            if kind == "float" and bits == 8:
                return Format("fp8", 8, keeps=keeps)
            return Format("int", bits, group or 128, keeps)
    bits = _int(quant, "bits", "w_bit")
    if bits:
        return Format("int", bits, _int(quant, "group_size", "q_group_size") or 128, keeps)
    return Format("")


def bytes_of(p: Parts, fmt: Format, dtype_bytes: float) -> int:
    """The checkpoint's bytes: embeddings, norms, the vision tower and the parts the format keeps in 16 bits;
    the rest in the format, with its scales (fp8 block scales are negligible; MXFP4 one byte per 32 values,
    NVFP4 one per 16; integer formats a 16-bit scale and a packed zero per group)."""
    if not fmt.method:
        return int(p.total * dtype_bytes)
    linear = {"attention": p.attention, "mlp": p.mlp, "experts": p.experts, "shared": p.shared}
    wide = p.embed + p.norms + p.vision + sum(v for k, v in linear.items() if k in fmt.keeps)
    narrow = sum(v for k, v in linear.items() if k not in fmt.keeps)
    if fmt.method == "fp8":
        per = 1.0
    elif fmt.method in ("mxfp4", "nvfp4"):
        per = (4 + 8 / (fmt.group or 16)) / 8
    else:
        bits = fmt.bits or 4
        per = bits / 8 + (2 + bits / 8) / (fmt.group or 128)
    return int(wide * 2 + narrow * per)
