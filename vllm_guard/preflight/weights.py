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
The host's RAM and disk checks keep the checkpoint's own size: that is what is read from disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.memory_params import Params

FLOAT32 = ("float32", "float")
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


@dataclass(frozen=True)
class Loaded:
    """The weights the GPUs hold in all (before tensor or pipeline parallel splits them), the routed experts'
    share of them (None: a dense model or not known), and how it was found."""

    bytes: int | None
    expert_bytes: int | None = None
    notes: tuple[str, ...] = ()

    def per_gpu(self, params: Params) -> int | None:
        """One GPU's share. Tensor and pipeline parallel split everything; with --enable-expert-parallel the
        routed experts split over tensor x data parallel ranks too (vLLM FusedMoEParallelConfig.make: ep_size =
        tp_size x dp_size), while each data-parallel rank keeps its own copy of the rest."""
        if self.bytes is None:
            return None
        split = params.tensor_parallel_size * params.pipeline_parallel_size
        share = self.bytes / split
        if params.enable_expert_parallel and params.data_parallel_size > 1 and self.expert_bytes:
            experts = min(self.expert_bytes, self.bytes)  # never more experts than the checkpoint holds
            share -= experts / split * (1 - 1 / params.data_parallel_size)
        return int(share)


def loaded_weights(model: ModelFacts, params: Params) -> Loaded:
    """The bytes vLLM holds on the GPUs for this checkpoint and these options (None: the checkpoint's size is not
    known)."""
    if model.weights_bytes is None:
        return Loaded(None)
    size, experts = model.weights_bytes, model.expert_bytes
    if model.weights_source != "estimate" and model.mtp_bytes:
        size -= model.mtp_bytes  # a checkpoint's index counts the MTP layers; an estimate from config does not
    notes: list[str] = []
    quantized = bool(model.quant_method)
    checkpoint_fp32 = _float32_files(model, notes)
    if not quantized and checkpoint_fp32 and params.dtype not in FLOAT32:
        size, experts = size // 2, experts // 2 if experts else experts
        notes.append(f"a float32 checkpoint served in 16 bits (--dtype {params.dtype}): weights {_gib(size)}")
    elif not quantized and not checkpoint_fp32 and params.dtype in FLOAT32:
        size, experts = size * 2, experts * 2 if experts else experts
        notes.append(f"--dtype {params.dtype} doubles the 16-bit checkpoint: weights {_gib(size)}")
    method = params.quantization
    if method is None or quantized:
        return Loaded(size, experts, tuple(notes))
    element = 4 if params.dtype in FLOAT32 else 2
    if method in ONLINE_BYTES_PER_WEIGHT:
        converted, per_weight = model.linear_params, ONLINE_BYTES_PER_WEIGHT[method]
    elif method in ONLINE_EXPERTS_ONLY:
        converted, per_weight = model.expert_params, ONLINE_EXPERTS_ONLY[method]
    else:
        notes.append(f"--quantization {method} on a 16-bit checkpoint: its size after loading is not modelled, the "
                     "checkpoint's is used")
        return Loaded(size, experts, tuple(notes))
    if converted is None:
        notes.append(f"--quantization {method}: the model's linear layers are not known from its config, so the "
                     "checkpoint's size is used")
        return Loaded(size, experts, tuple(notes))
    # a config's parameter count can outrun its checkpoint (a config that does not describe the files): never
    # convert more than the checkpoint holds
    held = min(converted * element, size)
    size = int(size - held + held / element * per_weight)
    if experts and model.expert_params:
        experts = int(min(model.expert_params * element, experts) / element * per_weight)
    notes.append(f"--quantization {method} quantizes the 16-bit checkpoint as it loads: weights {_gib(size)}")
    return Loaded(size, experts, tuple(notes))


def _float32_files(model: ModelFacts, notes: list[str]) -> bool:
    """Whether the checkpoint's files hold float32 weights: its config says so, and where the files' own size is
    known, it is about 4 bytes a parameter, not 2 (a config left at float32 over bf16 files would otherwise have
    them halved)."""
    if str(model.torch_dtype or "").lower() not in FLOAT32:
        return False
    files, parameters = model.weights_bytes, model.parameters
    if model.weights_source not in (None, "estimate") and files and parameters and files < 3 * parameters:
        notes.append("config.json says float32, but the checkpoint holds about 2 bytes a parameter: sized as 16-bit")
        return False
    return True


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"
