"""What helps for a reading about the checkpoint's quantization that this vLLM or its build cannot run (a Diagnosis's
detail): --quantization against the checkpoint's own method, a method this vLLM or platform does not know, a MoE
backend the scheme lacks, a method without MoE kernels, a kernel the platform's build leaves out. The rules are
rules_quant.py and rules.py."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

MOE_BACKEND = Advice(
    "--moe-backend names a backend that the checkpoint's MoE quantization (FP8, NvFP4, unquantized) has no kernels "
    "for; vLLM lists the ones it has after 'Expected one of'.",
    ("one of the backends the message lists, or no --moe-backend (vLLM picks one for the GPU)",),
    ("changing memory settings", "retrying unchanged"),
)

MOE_QUANT = Advice(
    "The checkpoint's quantization method has no kernels for the model's MoE layers in this vLLM, so the fused-MoE "
    "layer was built without a method (vLLM 0.5.5's FusedMoE takes FP8 and int8 experts only).",
    ("a newer vLLM release, whose MoE layers take more methods (its quantization support table)",
     "an FP8 checkpoint of the model, where this release must stay"),
    ("changing memory settings", "retrying unchanged"),
)

QUANT_KERNEL_MISSING = Advice(
    "vLLM's compiled extension has no kernel for the checkpoint's quantization: builds for ROCm, the CPU and other "
    "platforms leave out some of them (AWQ's, Marlin's, CUTLASS's), and an obsolete or partial build can lack one "
    "too (vLLM 0.5-0.6 then says 'Possibly you have built or installed an obsolete version of vllm').",
    ("a checkpoint in a quantization this platform's build runs (vLLM's quantization support table), or the "
     "unquantized model", "on NVIDIA GPUs: a clean install of a release wheel"),
    ("changing memory settings", "retrying unchanged"),
)

QUANT_MISMATCH = Advice(
    "--quantization names another method than the checkpoint's own (its config.json's quantization_config).",
    ("drop --quantization: vLLM reads the method from the checkpoint", "or set it to the checkpoint's method"),
    ("retrying unchanged",),
)

UNKNOWN_QUANT = Advice(
    "This vLLM does not know the quantization method named (a typo, or a method added in a later release).",
    ("a method from the list the error prints, or drop --quantization to use the checkpoint's own",
     "a newer vLLM for a newer method"), ("retrying unchanged",),
)

MISTRAL_QUANT = Advice(
    "vLLM read the checkpoint in Mistral's own format (params.json: --config-format mistral, or auto where this vLLM "
    "prefers params.json) and does not map the quantization entry it found there to one of its methods.",
    ("read the checkpoint's Hugging Face files instead, where the repository has config.json and weights in that "
     "layout: --config-format hf, and --load-format safetensors (or auto) in place of mistral",
     "a vLLM release that maps this entry"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

QUANT_PLATFORM = Advice(
    "This platform's vLLM (ROCm, XPU, Ascend, CPU) does not run the checkpoint's quantization method.",
    ("a checkpoint in a method the platform lists", "--quantization naming a supported kernel for the same format "
     "(gptq for gptq_bitblas, for example)"), ("retrying unchanged",),
)

FP8_MOE_SCALES = Advice(
    "The checkpoint's FP8 scales for its MoE layers are of a layout this vLLM's FP8 MoE method does not take: the "
    "message says which layouts it takes and which it found. Early releases took per-tensor scales only; later ones "
    "also per-channel and per-block, with weights and activations of the same layout.",
    ("a checkpoint whose MoE scales are of a layout the message lists, weights and activations alike",
     "a newer vLLM, where the message lists per-tensor only"), ("changing memory settings", "retrying unchanged"),
)

QUANT_ADVICE: dict[str, Advice] = {
    "fp8_moe_scales": FP8_MOE_SCALES,
    "quantization_mismatch": QUANT_MISMATCH,
    "unknown_method": UNKNOWN_QUANT,
    "mistral_quant": MISTRAL_QUANT,
    "platform": QUANT_PLATFORM,
    "moe_backend": MOE_BACKEND,
    "moe_quant": MOE_QUANT,
    "quant_kernel_missing": QUANT_KERNEL_MISSING,
}
