"""Pure: what the GPUs hold of a checkpoint, which is not always what its files weigh.

Three things change it, each as vLLM 0.33 loads a model:
- the checkpoint's multi-token-prediction layers, which vLLM skips unless they draft (deepseek_v2.py and
  qwen3_next.py load_weights: get_spec_layer_idx_from_weight_name); the drafter term adds them back;
- the dtype it serves in: a float32 checkpoint is served in 16 bits under ``--dtype auto``
  (config/model.py _resolve_auto_dtype downcasts float32 to the platform's first half type), and ``--dtype
  float32`` doubles a 16-bit one;
- an online ``--quantization`` of a 16-bit checkpoint: vLLM loads each linear layer and quantizes it in place
  (Fp8LinearMethod / Fp8MoEMethod with is_checkpoint_fp8_serialized False), so the weights shrink to the
  scheme's bytes while the embeddings, norms and lm_head (a VocabParallelEmbedding, no LinearBase) stay 16-bit.
  startups/014 (Qwen3-30B-A3B, --quantization fp8, vLLM 0.22.1): "Model loading took 29.08 GiB" of a
  56.87 GiB bf16 checkpoint.
- a multimodal model's towers that no request can use (_towers_skipped).
The host's RAM and disk checks keep the checkpoint's own size: that is what is read from disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.memory_params import FLOAT32, Params, media_off

# Online weight schemes of --quantization (vLLM 0.33 model_executor/layers/quantization/__init__.py) -> bytes per
# weight of the linear layers they convert; scales are a fraction of a percent (one per tensor, channel or block
# of 128 x 128) except for the micro-scaled formats, whose 8-bit scale per block is counted.
# fp8 (Fp8Config) and the shorthands whose QuantizationConfigArgs set both a linear and a moe QuantSpec
# (vllm/config/quantization.py _ONLINE_SHORTHANDS: fp8_per_tensor, fp8_per_block, fp8_per_channel, mxfp8).
ONLINE_BYTES_PER_WEIGHT = {"fp8": 1.0, "fp8_per_tensor": 1.0, "fp8_per_channel": 1.0, "fp8_per_block": 1.0,
                           "mxfp8": 1 + 1 / 32}
# The routed experts only, linear layers staying 16-bit: experts_int8 (ExpertsInt8Config: FusedMoE layers) and the
# shorthands with a moe QuantSpec and no linear one (int8_per_channel_weight_only, nvfp4_per_token); on a dense
# model they change nothing.
ONLINE_EXPERTS_ONLY = {"experts_int8": 1.0, "int8_per_channel_weight_only": 1.0, "nvfp4_per_token": 0.5625}


# The media a vision tower reads, where not images and videos both (vLLM 0.32 model files: the modalities each
# passes to _mark_tower_model), and the models that build their tower whatever the limits (no _mark_tower_model).
VISION_TOWER_MEDIA: dict[str, tuple[str, ...]] = {
    **{t: ("image",) for t in ("gemma3", "llava", "llava_next", "mistral3", "pixtral", "llama4", "dots_ocr",
                               "phi4-siglip")},
    "kimi_k25": ("vision_chunk",),
}
TOWER_ALWAYS_BUILT = frozenset(("glm4v", "glm4v_moe", "idefics3"))


def vision_media(model: ModelFacts) -> tuple[str, ...]:
    """The media the model's vision tower (and its encoder) reads."""
    return VISION_TOWER_MEDIA.get(str(model.model_type), ("image", "video"))


@dataclass(frozen=True)
class Loaded:
    """The weights the GPUs hold in all (before any parallelism splits them), the routed experts' share of them
    (None: a dense model or not known), and how it was found."""

    bytes: int | None
    expert_bytes: int | None = None
    notes: tuple[str, ...] = ()

    def per_gpu(self, params: Params) -> int | None:
        """One GPU's share. Tensor and pipeline parallel split everything. Data parallel copies all but the routed
        experts: vLLM shards an MoE layer over tensor x data parallel ranks, with --enable-expert-parallel (ep_size =
        tp_size x dp_size) and without it (its tensor parallel flattened across the data-parallel ranks:
        fused_moe/config.py FusedMoEParallelConfig.make, flatten_tp_across_dp)."""
        if self.bytes is None:
            return None
        split = params.tensor_parallel_size * params.pipeline_parallel_size
        experts = min(self.expert_bytes or 0, self.bytes)  # never more experts than the checkpoint holds
        rest = self.bytes - experts
        return int(rest / split + experts / (split * params.data_parallel_size))


def loaded_weights(model: ModelFacts, params: Params) -> Loaded:
    """The bytes vLLM holds on the GPUs for this checkpoint and these options (None: the checkpoint's size is not
    known)."""
    if model.weights_bytes is None:
        return Loaded(None)
    size, experts = model.weights_bytes, model.expert_bytes
    if model.weights_source != "estimate" and model.mtp_bytes:
        size -= model.mtp_bytes  # a checkpoint's index counts the MTP layers; an estimate from config does not
    notes: list[str] = []
    size -= _towers_skipped(model, params, notes)
    if model.quant_method:  # a quantized checkpoint loads as it is stored: --dtype sets its activations only
        return Loaded(size, experts, tuple(notes))
    # bytes a weight: as config.json says (expert_bytes were counted so), as the files hold, as vLLM serves them
    said = 4 if str(model.torch_dtype or "").lower() in FLOAT32 else 2
    files = 2 if said == 4 and _sixteen_bit_files(model) else said
    served = 4 if params.dtype in FLOAT32 else 2
    if said != files:
        notes.append("config.json says float32, but the checkpoint holds about 2 bytes a parameter: sized as 16-bit")
    size = size * served // files
    experts = experts * served // said if experts else experts
    if served != files:
        why = (f"a float32 checkpoint served in 16 bits (--dtype {params.dtype})" if files == 4
               else f"--dtype {params.dtype} doubles the 16-bit checkpoint")
        notes.append(f"{why}: weights {_gib(size)}")
    if params.quantization is None:
        return Loaded(size, experts, tuple(notes))
    size, experts = _online(model, params, size, experts, served, notes)
    return Loaded(size, experts, tuple(notes))


def _online(model: ModelFacts, params: Params, size: int, experts: int | None, served: int,
            notes: list[str]) -> tuple[int, int | None]:
    """The weights after an online --quantization of the unquantized checkpoint, each converted weight going from
    ``served`` bytes to the scheme's (vLLM refuses float32 activations with these schemes; gpu.quantization says
    so)."""
    method = str(params.quantization)
    if method in ONLINE_BYTES_PER_WEIGHT:
        converted, per_weight = model.linear_params, ONLINE_BYTES_PER_WEIGHT[method]
    elif method in ONLINE_EXPERTS_ONLY:
        converted, per_weight = model.expert_params, ONLINE_EXPERTS_ONLY[method]
        if not model.num_experts:
            notes.append(f"--quantization {method} converts routed experts only; this model has none, so its "
                         "weights stay as they are")
            return size, experts
    else:
        notes.append(f"--quantization {method} on a 16-bit checkpoint: its size after loading is not modelled, the "
                     "checkpoint's is used")
        return size, experts
    if converted is None:
        notes.append(f"--quantization {method}: the model's linear layers are not known from its config, so the "
                     "checkpoint's size is used")
        return size, experts
    # a config's parameter count can outrun its checkpoint (a config that does not describe the files): never
    # convert more than the checkpoint holds
    held = min(served * converted, size)
    size = int(size - held + held / served * per_weight)
    if experts and model.expert_params:
        experts = int(min(served * model.expert_params, experts) / served * per_weight)
    notes.append(f"--quantization {method} quantizes the 16-bit checkpoint as it loads: weights {_gib(size)}")
    return size, experts


def _towers_skipped(model: ModelFacts, params: Params, notes: list[str]) -> int:
    """The checkpoint's bytes of the towers vLLM does not build: in vLLM 0.32 (read) and 0.33 a multimodal model
    builds each tower inside SupportsMultiModal._mark_tower_model, which leaves it on the meta device "when
    --limit-mm-per-prompt is set to zero for all of their modalities" (models/interfaces.py; --language-model-only
    sets every limit to 0, config/multimodal.py); Qwen's VL models set ``visual = None`` so since 0.11. A vision
    tower goes when the media it reads are all at 0 (images and videos, or images alone for Gemma 3 and the others
    in VISION_TOWER_MEDIA), the audio encoder with audio at 0. Real start-ups: gemma-4-31B-it loaded 58.99 GiB with
    its tower (startups/119, 120) and 57.91 under --language-model-only (073, 107-117); gemma-4-E4B-it 15.16 (011)
    and 14.28 (108, 109); Qwen3-VL-Embedding-2B 3.46 with images and videos at 0 (054, "running in text-only
    mode"). A tower is held in 16 bits (modelopt's and AWQ's recipes leave it out): 2 bytes a parameter, as the
    estimate counts."""
    skipped = []
    if (model.vision_params and model.model_type not in TOWER_ALWAYS_BUILT
            and media_off(params, *vision_media(model))):
        skipped.append(("vision tower", model.vision_params))
    if model.audio_params and media_off(params, "audio"):
        skipped.append(("audio encoder", model.audio_params))
    if not skipped:
        return 0
    size = min(2 * sum(n for _, n in skipped), model.weights_bytes or 0)
    names = " and ".join(name for name, _ in skipped)
    notes.append(f"no request can send the media it reads, so vLLM builds no {names}: weights {_gib(size)} lighter")
    return size


def _sixteen_bit_files(model: ModelFacts) -> bool:
    """Whether the checkpoint's files, where their size is known, hold about 2 bytes a parameter (under 3) whatever
    config.json's torch_dtype says."""
    files, parameters = model.weights_bytes, model.parameters
    measured = model.weights_source not in (None, "estimate")
    return bool(measured and files and parameters and files < 3 * parameters)


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"
