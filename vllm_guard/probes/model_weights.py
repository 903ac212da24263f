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
from vllm_guard.probes.model_arch import int_field

DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1}


@dataclass(frozen=True)
class Parts:
    embed: int  # the input embeddings (and the lm_head when tied to them)
    attention: int  # attention projections and state-layer mixers
    mlp: int  # dense MLPs
    experts: int  # routed experts and their routers
    shared: int  # shared experts
    norms: int
    vision: int  # a multimodal wrapper's vision tower and projector
    head: int = 0  # an untied lm_head

    @property
    def linear(self) -> int:
        """The linear layers a weight quantization converts (the lm_head is an embedding to vLLM)."""
        return self.attention + self.mlp + self.experts + self.shared

    @property
    def total(self) -> int:
        return (self.embed + self.attention + self.mlp + self.experts + self.shared + self.norms + self.vision
                + self.head)


def parts(f: Mapping[str, Any], text: Mapping[str, Any], tied: bool) -> Parts | None:
    """The parameters by part; None when a shape the count needs is missing."""
    shape = [f.get(k) for k in ("hidden_size", "num_layers", "vocab_size", "num_attention_heads", "num_kv_heads",
                                "head_dim", "intermediate_size")]
    if not all(isinstance(v, int) for v in shape):
        return None
    hidden, layers, vocab, heads, kv_heads, head_dim, inter = (int(v or 0) for v in shape)
    kinds = f.get("layer_types") or ()
    if f.get("kv_lora_rank") is not None:
        attn = global_attn = _mla_params(text, hidden, heads)
    else:
        attn = _attention_params(text, hidden, heads, kv_heads, head_dim)
        # Gemma 4's full layers have their own shape: global_head_dim, num_global_key_value_heads, and K doubling
        # as V where attention_k_eq_v (transformers Gemma4TextAttention)
        g_dim, g_kv = f.get("global_head_dim"), f.get("global_kv_heads") or kv_heads
        global_attn = (_attention_params(text, hidden, heads, g_kv, g_dim, k_eq_v=bool(text.get("attention_k_eq_v")))
                       if isinstance(g_dim, int) else attn)
    gated = _mlp_matrices(text)
    moe_layers = sum(model_arch.moe_layer_flags(text, layers))
    # Llama-4's dense layers have their own width (intermediate_size_mlp; intermediate_size is an expert's)
    dense_inter = int_field(text, "intermediate_size_mlp") or inter
    mlp, experts, shared = gated * hidden * dense_inter * _dense_mlp_layers(text, layers, moe_layers), 0, 0
    if n_experts := model_arch.experts(text)[0]:
        moe_inter = int_field(text, "moe_intermediate_size") or inter
        experts = moe_layers * (gated * hidden * moe_inter * n_experts + hidden * n_experts)  # + router
        shared = moe_layers * gated * hidden * _shared_expert_width(text, moe_inter)
        # Qwen2-MoE / Qwen3-Next: the shared expert's sigmoid gate
        if int_field(text, "shared_expert_intermediate_size"):
            shared += moe_layers * hidden
    state_layers = sum(1 for k in kinds if k == model_arch.STATE)
    no_mixer = sum(1 for k in kinds if k == model_arch.NONE)
    full_layers = sum(1 for k in kinds if k.startswith(model_arch.FULL)) if kinds else layers
    state_mixer = model_arch.state_layer_params(text) if state_layers else 0
    if state_mixer is None:
        return None
    per_layer_heads = text.get("num_attention_heads_per_layer")
    if isinstance(per_layer_heads, list) and len(per_layer_heads) == layers and not state_layers:
        # Laguna: a head count per layer (vLLM 0.32 laguna.py; Laguna-S-2.1: 48 on full layers, 72 on sliding)
        mixers = sum(_attention_params(text, hidden, int(n), kv_heads, head_dim) for n in per_layer_heads)
    else:
        mixers = ((layers - state_layers - no_mixer - full_layers) * attn + full_layers * global_attn
                  + state_layers * state_mixer)
    norms = layers * 2 * hidden + hidden
    per_layer_embed, per_layer_linear = _per_layer_inputs(text, hidden, layers)
    mlp += _dflash_fc(text, hidden)
    return Parts(vocab * hidden + per_layer_embed, mixers, mlp + per_layer_linear, experts, shared, norms,
                 (f.get("vision_params") or 0) + (f.get("audio_params") or 0), 0 if tied else vocab * hidden)


def _dflash_fc(text: Mapping[str, Any], hidden: int) -> int:
    """A DFlash drafter's fc, which fuses the target's hidden states at its dflash_config.target_layer_ids into
    one (vLLM 0.32 qwen3_dflash.py and laguna_dflash.py: ReplicatedLinear(target hidden x len(ids) -> hidden)).
    The target's hidden size is the config's target_hidden_size, else the drafter's own (z-lab's, poolside's).
    Without it poolside/Laguna-S-2.1-DFlash came to 1.97 GiB against the 2.08 GiB checkpoint vLLM read
    (startups/067, line 68)."""
    dflash = text.get("dflash_config")
    ids = dflash.get("target_layer_ids") if isinstance(dflash, Mapping) else None
    target_hidden = int_field(text, "target_hidden_size") or hidden  # qwen3_dflash.py reads it first where set
    return len(ids) * target_hidden * hidden if isinstance(ids, list) else 0


# MLP activations without a gate (two matrices, up and down): Nemotron's and Nemotron-H's squared ReLU (vLLM
# nemotron_h.py NemotronHMLP, and its experts' "relu2_no_mul"), OPT's relu, and every gelu variant (Falcon's gelu,
# GPT-2 and Phi's gelu_new: phi.py fc1/fc2, StarCoder2's gelu_pytorch_tanh: starcoder2.py c_fc/c_proj) except in
# the Gemma family (DiffusionGemma's backbone is Gemma 4's), whose GeGLU is gated (gemma*.py gate_up_proj)
UNGATED_ACTIVATIONS = ("relu2", "relu")


def _mlp_matrices(text: Mapping[str, Any]) -> int:
    """3 for a gated MLP (gate, up, down), 2 for an ungated one."""
    act = str(text.get("mlp_hidden_act") or text.get("hidden_act") or text.get("activation_function")
              or text.get("hidden_activation") or ("gelu" if text.get("model_type") == "falcon" else "silu"))
    if str(text.get("model_type") or "").startswith(("gemma", "diffusion_gemma")):
        return 3
    return 2 if act in UNGATED_ACTIVATIONS or act.startswith("gelu") else 3


def _dense_mlp_layers(text: Mapping[str, Any], layers: int, moe_layers: int) -> int:
    """The layers that hold a dense MLP: Nemotron-H's "-" blocks (its blocks are one thing each: "M" a Mamba mixer,
    "*" attention, "-" an MLP, "E" an MoE); every layer of Gemma 4's MoE, whose decoder layer runs its MLP beside the
    experts (enable_moe_block: vLLM gemma4.py, transformers Gemma4TextDecoderLayer); else the layers without experts.
    """
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and len(pattern) == layers:
        return pattern.count("-")
    if text.get("enable_moe_block"):
        return layers
    return layers - moe_layers


def _shared_expert_width(text: Mapping[str, Any], moe_inter: int) -> int:
    """The summed width of an MoE layer's shared experts (0: none)."""
    count = int_field(text, "n_shared_experts") or 0
    if (width := int_field(text, "moe_shared_expert_intermediate_size")) is not None:
        return width * max(count, 1)  # Nemotron-H: intermediate_size = this x n_shared_experts (nemotron_h.py)
    if (width := int_field(text, "shared_expert_intermediate_size")) is not None:
        return width  # Qwen2-MoE / Qwen3-Next: one shared expert of its own size
    if text.get("model_type") == "llama4_text":
        return moe_inter  # Llama4MoE always adds one shared expert of intermediate_size (vLLM llama4.py)
    return count * moe_inter  # DeepSeek / GLM: n_shared_experts of the routed experts' size


def _attention_params(text: Mapping[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int,
                      k_eq_v: bool = False) -> int:
    q_out = heads * head_dim * (2 if text.get("attn_output_gate") else 1)  # Qwen3-Next / 3.5: a gated output
    attn = hidden * q_out + (1 if k_eq_v else 2) * hidden * kv_heads * head_dim + heads * head_dim * hidden
    if text.get("attention_bias") or str(text.get("model_type", "")).startswith("qwen2"):
        attn += heads * head_dim + 2 * kv_heads * head_dim
    gating = text.get("gating")
    if gating:  # Laguna's softplus output gate, g_proj: one per head, or per channel (vLLM 0.32 laguna.py)
        attn += hidden * heads * (1 if gating is True or gating == "per-head" else head_dim)
    return attn


def _per_layer_inputs(text: Mapping[str, Any], hidden: int, layers: int) -> tuple[int, int]:
    """Gemma 3n / 4's per-layer inputs (transformers Gemma3nTextModel): an embedding of
    hidden_size_per_layer_input per layer over vocab_size_per_layer_input (embed_tokens_per_layer, on the GPU in
    vLLM gemma3n.py), the model's projection into them, and each layer's gate and projection back."""
    width = int_field(text, "hidden_size_per_layer_input")
    if not width:
        return 0, 0
    vocab = int_field(text, "vocab_size_per_layer_input", "vocab_size") or 0
    return vocab * layers * width, hidden * layers * width + layers * 2 * hidden * width


def _mla_params(text: Mapping[str, Any], hidden: int, heads: int) -> int:
    rank = int_field(text, "kv_lora_rank") or 0
    rope = int_field(text, "qk_rope_head_dim") or 0
    nope = int_field(text, "qk_nope_head_dim") or 0
    v_dim = int_field(text, "v_head_dim") or nope
    q_rank = int_field(text, "q_lora_rank")
    q = hidden * heads * (nope + rope) if not q_rank else hidden * q_rank + q_rank + q_rank * heads * (nope + rope)
    kv = hidden * (rank + rope) + rank + rank * heads * (nope + v_dim)
    return q + kv + heads * v_dim * hidden


def mtp_layer_bytes(p: Parts, f: Mapping[str, Any], text: Mapping[str, Any]) -> int | None:
    """Bytes of the checkpoint's multi-token-prediction layers, in 16 bits (checkpoints leave them unquantized:
    nvidia/Qwen3.6-35B-A3B-NVFP4 ignores "mtp*"): each one decoder layer with full attention and the MoE or MLP
    of the last layer, plus its projection of [embedding; hidden] (2 x hidden x hidden) and norms."""
    n, layers, hidden = model_arch.mtp_layers(text), f.get("num_layers"), f.get("hidden_size")
    if not n or not layers or not hidden:
        return None
    heads, kv_heads, head_dim = f.get("num_attention_heads") or 0, f.get("num_kv_heads") or 0, f.get("head_dim") or 0
    q_out = heads * head_dim * (2 if text.get("attn_output_gate") else 1)
    attn = hidden * q_out + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
    moe_layers = sum(model_arch.moe_layer_flags(text, layers))
    ffn = (p.experts + p.shared) / moe_layers if p.experts and moe_layers else p.mlp / layers
    return int(n * (attn + ffn + 2 * hidden * hidden + 4 * hidden) * 2)


# --- the weight format ---------------------------------------------------------------------------------------

LINEAR_PARTS = ("attention", "mlp", "experts", "shared", "head")


@dataclass(frozen=True)
class Scheme:
    method: str  # fp8 | mxfp4 | nvfp4 | int (AWQ, GPTQ, compressed-tensors integers)
    bits: int = 16
    group: int | None = None

    def bytes_per_weight(self) -> float:
        if self.method == "fp8":
            return 1.0  # block scales are negligible
        if self.method in ("mxfp4", "nvfp4"):
            return (4 + 8 / (self.group or 16)) / 8  # one 8-bit scale per 32 (MXFP4) or 16 (NVFP4) values
        return self.bits / 8 + (2 + self.bits / 8) / (self.group or 128)  # a 16-bit scale and a packed zero


@dataclass(frozen=True)
class Format:
    """The scheme of each linear part (attention, mlp, experts, shared, head); a part not named stays 16-bit."""

    parts: tuple[tuple[str, Scheme], ...] = ()

    @property
    def method(self) -> str:
        return next((scheme.method for _, scheme in self.parts), "")

    def scheme(self, part: str) -> Scheme | None:
        return dict(self.parts).get(part)


_PART_PATTERNS = (("shared", re.compile(r"shared_expert")), ("experts", re.compile(r"experts")),
                  ("attention", re.compile(r"self_attn|linear_attn|\.attn\b|attention|mixer")),
                  ("head", re.compile(r"lm_head")), ("mlp", re.compile(r"\.mlp\b|mlp\*|mlp\.")))


def _parts_named(names: list[str]) -> set[str]:
    """The linear parts a list of module names or patterns covers ("Linear": every linear layer)."""
    found: set[str] = set()
    for name in names:
        if name == "Linear":
            found.update(LINEAR_PARTS[:-1])  # the lm_head only where named
            continue
        part = next((p for p, pattern in _PART_PATTERNS if pattern.search(name)), None)
        if part is not None:
            found.add(part)
    return found


def _scheme(weights: Mapping[str, Any]) -> Scheme:
    bits, kind = int_field(weights, "num_bits") or 4, str(weights.get("type") or "int")
    group = int_field(weights, "group_size")
    if kind == "float" and bits == 4:
        return Scheme("nvfp4", 4, group or 16)
    if kind == "float" and bits == 8:
        return Scheme("fp8", 8)
    return Scheme("int", bits, group or 128)


def weight_format(quant: Mapping[str, Any] | None) -> Format:
    """Which linear parts a quantization_config stores in which scheme; the ones it ignores stay 16-bit.
    compressed-tensors and ModelOpt name a scheme per group of targets (nvidia/Qwen3.6-35B-A3B-NVFP4: FP8
    attention, NVFP4 experts and lm_head); AWQ, GPTQ, FP8 and MXFP4 one scheme for all."""
    if not isinstance(quant, Mapping) or not quant:
        return Format()
    method = str(quant.get("quant_method") or "").lower()
    ignored = _parts_named([str(x) for x in (quant.get("ignore") or quant.get("modules_to_not_convert") or [])])
    body = [p for p in LINEAR_PARTS[:-1] if p not in ignored]
    if method in ("fp8", "fbgemm_fp8"):
        return Format(tuple((p, Scheme("fp8", 8)) for p in body))
    if method == "mxfp4":  # gpt-oss: its experts only (modules_to_not_convert: attention, router, embeddings, head)
        return Format((("experts", Scheme("mxfp4", 4, 32)),))
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping) and groups:
        chosen: dict[str, Scheme] = {}
        # specific targets first, then "Linear" for the rest
        ordered = sorted(groups.values(), key=lambda g: "Linear" in (g.get("targets") or []) if isinstance(g, Mapping)
                         else True)
        for group in ordered:
            if not isinstance(group, Mapping) or not isinstance(group.get("weights"), Mapping):
                continue
            for part in _parts_named([str(t) for t in group.get("targets") or []]):
                if part not in ignored or part == "head":
                    chosen.setdefault(part, _scheme(group["weights"]))
        return Format(tuple(chosen.items()))
    if method == "modelopt":
        algo = str(quant.get("quant_algo") or "").upper()
        scheme = Scheme("nvfp4", 4, 16) if "FP4" in algo else Scheme("fp8", 8)
        return Format(tuple((p, scheme) for p in body))
    bits = int_field(quant, "bits", "w_bit")
    if bits:
        scheme = Scheme("int", bits, int_field(quant, "group_size", "q_group_size") or 128)
        return Format(tuple((p, scheme) for p in body))
    return Format()


def checkpoint_kv_dtype(quant: Mapping[str, Any] | None) -> str | None:
    """The KV cache dtype a checkpoint declares: ModelOpt's kv_cache_quant_algo "FP8" (vLLM reads it since 0.13,
    vllm PR #29980) or a compressed-tensors kv_cache_scheme of 8-bit floats (llm-compressor's; vLLM sets its cache
    to fp8 for one). With --kv-cache-dtype auto vLLM stores the cache so: startups/069 (0.25.1, an NVFP4
    checkpoint, kv_cache_dtype=auto) runs "kv_cache_dtype=torch.float8_e4m3fn", half the bf16 bytes per token."""
    if not isinstance(quant, Mapping):
        return None
    algo = quant.get("kv_cache_quant_algo")
    if isinstance(algo, str) and "FP8" in algo.upper():
        return "fp8"
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, Mapping) and scheme.get("num_bits") == 8 and scheme.get("type") == "float":
        return "fp8"
    return None


def bytes_of(p: Parts, fmt: Format, dtype_bytes: float) -> int:
    """The checkpoint's bytes: embeddings, norms, the vision tower and every part the format does not name in
    16 bits; each named part in its scheme, scales included."""
    if not fmt.parts:
        return int(p.total * dtype_bytes)
    linear = {"attention": p.attention, "mlp": p.mlp, "experts": p.experts, "shared": p.shared, "head": p.head}
    total = (p.embed + p.norms + p.vision) * 2.0
    for part, n in linear.items():
        scheme = fmt.scheme(part)
        total += n * (scheme.bytes_per_weight() if scheme else 2.0)
    return int(total)


def expert_bytes(p: Parts, quant: Mapping[str, Any] | None, torch_dtype: str | None) -> int | None:
    """Bytes of the routed experts in the checkpoint's format (None for a dense model)."""
    if not p.experts:
        return None
    scheme = weight_format(quant).scheme("experts")
    per_weight = scheme.bytes_per_weight() if scheme else DTYPE_BYTES.get(str(torch_dtype), 2)
    return int(p.experts * per_weight)
