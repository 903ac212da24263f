"""The failure rules about dtypes and quantization a GPU, a platform or a model's class cannot run: bfloat16 below
compute capability 8.0, float8 (Triton's fp8e4nv, an FP8 KV cache), a method the platform or the checkpoint's
layers lack. Read in their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.markers import BEFORE_START, LOADING, PROFILING
from vllm_guard.diagnose.rule import Rule

DTYPE_QUANT_RULES: tuple[Rule, ...] = (
    # ROCm's AITER refusing a MoE kernel combination it has none for (aiter/fused_moe.py): MXFP4 weights with an
    # activation, layout or expert parallelism its CK and FlyDSL kernels lack. vLLM takes AITER's MoE on ROCm with
    # VLLM_ROCM_USE_AITER=1 (VLLM_ROCM_USE_AITER_MOE on by default) and for gpt-oss's MXFP4 first on gfx950 (0.20
    # fused_moe/oracle/mxfp4.py); blind179/b179-004: gpt-oss-20b MXFP4 at TP 2 on MI355X under vLLM 0.21.
    Rule("quant_unsupported", re.compile(r"NotImplementedError: (?:CK 2-stage MoE has no \w{1,20}\+MXFP4|a16w4 "
                                         r"\(bf16 A x MXFP4 W\) SiTUv2 is not supported|MXFP4 a4w4 FlyDSL port does "
                                         r"not support expert-parallel)"),
         detail="aiter_moe", when=conditions.never_ready, source=SOURCES["aiter_moe"]),
    # vLLM's compiled extension without a quantization kernel its Python code calls (torch.ops._C.awq_dequantize,
    # gptq_marlin_repack, cutlass_scaled_mm...): a platform's build that leaves it out (ROCm's and the CPU build's
    # omit AWQ's, Marlin's and CUTLASS's kernels: blind153/b153-015 on a Radeon, b153-019 on the CPU build,
    # blind103/b103-004 on MI300X), or an obsolete build, as vLLM 0.5-0.6's _custom_ops.py itself says ("Possibly you
    # have built or installed an obsolete version of vllm")
    # (a quantization kernel by its name: a scheme's or a number format's word anywhere in it, in any of vLLM's
    # extensions, _C, _moe_C, _rocm_C; not the sparse indexer's fp8_paged_mqa_logits, an attention op)
    Rule("quant_unsupported", re.compile(r"'_OpNamespace' '_\w{0,30}C\w{0,20}' object has no attribute "
                                         r"'(?P<op>(?!\w{0,60}paged_mqa)\w{0,60}(?:awq|gptq|marlin|machete|ggml|aqlm|"
                                         r"allspark|squeezellm|fp8|fp4|int8|int4|wna16|w4a8|w8a8|scaled_mm|_quant)"
                                         r"\w{0,60})'"),
         detail="quant_kernel_missing", when=conditions.op_missing_alone, source=SOURCES["op_missing"]),
    # FusedMoE built for a quantization that gives it no method (fused_moe/layer.py FusedMoE.__init__ in 0.5: "assert
    # self.quant_method is not None", a bare AssertionError; 0.11 puts the unquantized method in its place): the
    # checkpoint's method has no MoE kernels in this vLLM (0.5.5's FusedMoE takes FP8 and int8 experts only;
    # blind154/b154-018, DeepSeek-Coder-V2 AWQ on 0.5.3). linear.py has the same line: the frame decides.
    Rule("quant_unsupported", re.compile(r"assert self\.quant_method is not None$"),
         detail="moe_quant", when=conditions.in_fused_moe, source=SOURCES["moe_quant"]),
    # vLLM's FP8 MoE methods refusing a checkpoint's scale layout (compressed_tensors_moe.py as 0.8.3 logs it: "only
    # per-tensor scales"; quark_moe.py 0.11-0.34: "only per-tensor and per-channel" / "per-tensor, per-channel and
    # per-block"): a channel- or block-scaled FP8 MoE checkpoint on a release whose MoE kernels do not take it
    # (blind157/b157-006, Llama 4 Maverick FP8 on ROCm under V0)
    Rule("quant_unsupported", re.compile(r"For FP8 Fused MoE layers, only per-tensor[\w ,-]{0,60} scales for weights "
                                         r"and activations are supported"), LOADING, detail="fp8_moe_scales",
         source=SOURCES["fp8_moe_scales"]),
    # --moe-backend naming a backend the checkpoint's MoE quantization has no kernels for: vLLM's MoE oracles map the
    # option per scheme (model_executor/layers/fused_moe/oracle/fp8.py, nvfp4.py, unquantized.py, w4a8.py, 0.20-0.34:
    # "moe_backend='triton' is not supported for NvFP4 MoE. Expected one of [...]"; blind151/b151-007)
    Rule("usage_error", re.compile(r"moe_backend=['\"]?(?P<backend>\w{1,64})['\"]? is not supported for "
                                   r"(?P<scheme>[\w-]{1,40}(?: MoE)?)"), LOADING, detail="moe_backend",
         source=SOURCES["moe_backend"]),
    # FlashInfer's per-tensor FP8 MoE path (VLLM_USE_FLASHINFER_MOE_FP8=1) takes only Llama 4's routing (vLLM
    # 0.10-0.13; blind62/b62-002, DeepSeek-R1 on B200), asserted in the forward pass the profiling run is the first of
    Rule("quant_unsupported", re.compile(r"FusedMoE flashinfer kernels are only supported for Llama4"), PROFILING,
         detail="flashinfer_moe_model", source=SOURCES["flashinfer_moe_model"]),
    Rule("dtype_unsupported", re.compile(r"Bfloat16 is only supported on GPUs with compute capability of at least "
                                         r"(?P<min_capability>\d+(?:\.\d+)?)\. Your (?P<gpu>.{1,100}?) GPU has compute "
                                         r"capability (?P<current_capability>\d+(?:\.\d+)?)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "min_capability", "current_capability"), source=SOURCES["bf16"]),
    # The same message's second sentence, where a paste kept only its tail (its wording is the raise site's own).
    Rule("dtype_unsupported", re.compile(r"You can use float16 instead by explicitly setting the ?`dtype` flag in CLI"),
         BEFORE_START, source=SOURCES["bf16"]),
    # vLLM 0.7-0.33 config (_FLOAT16_NOT_SUPPORTED_MODELS: gemma2, gemma3, plamo2, glm4): "The model type 'gemma3'
    # does not support float16. Reason: Numerical instability. Please use bfloat16 or float32 instead."
    Rule("dtype_unsupported", re.compile(r"The model type '?(?P<model_type>[\w-]{1,64})'? does not support "
                                         r"(?P<dtype>float16|half|bfloat16|float32)\. Reason"), BEFORE_START,
         detail="model_dtype", source=SOURCES["model_dtype"]),
    Rule("dtype_unsupported", re.compile(r"(?<!\S)(?P<dtype>\S{1,64}) is not supported for quantization method "
                                         r"(?P<method>\S{1,64})\. "
                                         r"Supported dtypes"), BEFORE_START, detail="quant_dtype",
         source=SOURCES["quant_dtype"]),
    # The current capability may be cut or wrapped away: a paste re-wrapped at 80 columns puts its figure on a third
    # line (blind93/b93-001); the minimum is enough to say which GPUs run the method.
    Rule("quant_unsupported", re.compile(r"(?:The quantization method (?P<method>\S{1,64})|Quantization scheme) is "
                                         r"not supported for the current "
                                         r"GPU\. Min(?:imum)? capability: (?P<min_capability>\d+)\."
                                         r"(?: Current capability: (?P<current_capability>\d+))?"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "min_capability", "current_capability"), source=SOURCES["quant_capability"]),
    # transformers' FP8 quantizers (4.45-4.5x fbgemm_fp8 and finegrained_fp8 validate_environment) raise it; later
    # releases warn with the same words and dequantize, so only the exception counts.
    Rule("quant_unsupported", re.compile(r"ValueError: FP8 quantized models is only supported on GPUs with compute "
                                         r"capability >= (?P<min_capability>\d{1,2}\.\d)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "min_capability"),
         source=SOURCES["transformers_fp8"]),
    # vLLM's CUTLASS entry points (csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu) in a build without kernels for
    # this GPU: "No compiled get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel for CUDA device capability: 120.
    # Required capability: 90, 100, or 120" (blind124/b124-001, an FP8 MoE checkpoint on an RTX 50-series build that
    # lacked sm_120's)
    Rule("quant_unsupported", re.compile(r"no cutlass_scaled_mm kernel for CUDA device capability: "
                                         r"(?P<current_capability>\d{2,3})"), detail="cutlass_capability",
         numbers=lambda m: numbers_of(m, "current_capability"), source=SOURCES["cutlass_capability"]),
    Rule("quant_unsupported", re.compile(r"FP8 KV cache is not supported by the \S{1,64} (?:attention|MLA) backend on "
                                         r".{0,200}?compute "
                                         r"capability (?P<current_capability>\d+(?:\.\d+)?)"), LOADING,
         detail="kv_cache_dtype", numbers=lambda m: numbers_of(m, "current_capability"),
         source=SOURCES["fp8_kv_backend"]),
    # Triton compiles float8_e4m3fn (its fp8e4nv) only from compute capability 8.9: an fp8 KV cache (--kv-cache-dtype
    # fp8 is e4m3 on CUDA) through a Triton attention kernel, or an FP8 checkpoint's Triton kernels (block-FP8
    # matmul, fused MoE, per-token-group quant) on an A100, V100 or T4 fail so when the kernel first compiles
    # (blind30/b30-002). The float8 type is a dtype this GPU's compute capability lacks, as both real reports are
    # labelled (b30-002, blind40/b40-001), whichever kernel asked for it; vLLM's own refusals above name the KV cache
    # and stay quant_unsupported, as blind21/b21-004 is labelled.
    Rule("dtype_unsupported", re.compile(r"type fp8e4nv not supported in this architecture\. The supported fp8 "
                                         r"dtypes are"), detail="fp8_e4m3", when=conditions.never_ready,
         source=SOURCES["triton_fp8e4nv"]),
    # (the reasons follow the whole AttentionSelectorConfig(...), which runs past 500 characters)
    Rule("quant_unsupported", re.compile(r"No valid attention backend found.{0,4000}?kv_cache_dtype not supported"),
         LOADING,
         detail="kv_cache_dtype", source=SOURCES["no_backend"]),
    # a backend chosen by name that refuses the KV-cache dtype (a profile pinning FLASH_ATTN, and an fp8 KV cache the
    # ladder set): the dtype is what a setting undoes
    Rule("quant_unsupported", re.compile(r"Selected backend \S{1,64} is not valid for this configuration\. Reason: "
                                         r"\[[^\]]{0,1000}kv_cache_dtype not supported"), LOADING,
         detail="kv_cache_dtype", source=SOURCES["selected_backend"]),
    # FlashInfer's MLA planner refusing the KV cache's dtype (flashinfer mla plan(): "MLA kv_data_type torch.uint8
    # is not supported. Supported dtypes: [...]"), an fp8 KV cache handed to it as raw bytes (blind48/b48-008)
    Rule("quant_unsupported", re.compile(r"MLA kv_data_type torch\.\w{1,32} is not supported"), LOADING,
         detail="kv_cache_dtype", source=SOURCES["flashinfer_mla_kv"]),
    # vLLM's reader of Mistral-format checkpoints (params.json; transformers_utils/configs/mistral.py, 0.9.2-0.34)
    # meeting a quantization entry it does not map to vLLM's config ("Found unknown quantization='{...}' in config";
    # blind177/b177-007, Voxtral FP8 under a cherry-pick that lost the mapping): the format, not the settings
    Rule("quant_unsupported", re.compile(r"Found unknown quantization='"), BEFORE_START,
         detail="mistral_quant", source=SOURCES["mistral_quant"]),
)
