"""The memory model against real start-ups: predicted beside what vLLM reported (issue 18).

Reads ``tests/data/real-logs/startups/index.json`` (27 successful start-ups from public reports,
each with vLLM's own figures and the settings it ran with), runs the guard's memory model
(`vllm_guard.preflight.memory.estimate`) on the bundled facts of each start-up's model, and prints, per
quantity, predicted against reported with the error in percent, the median and the worst, and the
vLLM version of each figure. Run: python benchmarks/memory_calibration.py

How vLLM versions are treated:
- weights per GPU ("Model loading took X GiB") and KV bytes per token (vLLM's KV GiB over its token
  count) are accounted the same way in V0 and V1: both are compared for every version;
- the KV budget: V0 and V1 before v0.21 capture CUDA graphs *after* sizing the KV cache (graphs come
  out of the 1 - utilization margin), v0.21 and later subtract the graph estimate first
  (vllm-reference §"KV budget"); the prediction follows the version of the log;
- CUDA-graph memory ("Graph capturing finished ..., took X GiB") is compared for every version, with the capture
  sizes and graph mode each log shows (log_settings): 67 piecewise sizes up to 0.11, 51 piecewise + 35 full decode
  graphs from 0.13; the figures the rule misses by more than 15% are explained from their own logs (WHY);
- "Available KV cache memory" is printed with two decimals, so the per-token figure carries up to
  0.005 GiB / KV GiB of rounding (0.1% at 5 GiB).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.facts.machine import Gpu  # noqa: E402
from vllm_guard.facts.model import ModelFacts  # noqa: E402
from vllm_guard.preflight import kv_cache, memory, memory_params  # noqa: E402
from vllm_guard.probes import bundled, model_config  # noqa: E402

GIB = 2**30
STARTUPS = ROOT / "tests" / "data" / "real-logs" / "startups"

# Start-up -> (bundled facts, why that entry, weight format). Matched by hand from the index's `model`
# field and the log's own lines; a start-up not listed is one the guard cannot model offline (SKIPPED).
SAME_SHAPES = "same shapes as the bundled base (a fine-tune or instruct variant of it)"
# poolside/Laguna-S-2.1-INT4 with its DFlash drafter (vLLM 0.25.1, one DGX Spark)
LAGUNA_INT4_DFLASH = ("067-laguna-s-2.1-int4-dflash.log", "121-laguna-s-2.1-int4-dflash.log",
                      "122-laguna-s-2.1-int4-dflash.log")
MODELS: dict[str, tuple[str, str, str | None]] = {
    "001-qwen2-7b-instruct.log": ("Qwen/Qwen2-7B-Instruct", "the model itself", None),
    "002-qwen2-7b-instruct.log": ("Qwen/Qwen2-7B-Instruct", "the model itself", None),
    "004-qwen2-7b-instruct.log": ("Qwen/Qwen2-7B-Instruct", "the model itself", None),
    "007-deepseek-r1-14b.log": ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "the model itself (an alias of its "
                                                                "Qwen2.5-14B base)", None),
    "013-llama-3.1-8b-instruct.log": ("meta-llama/Llama-3.1-8B-Instruct", "the model itself", None),
    "014-qwen3-30b-a3b-instruct-2507.log": ("Qwen/Qwen3-30B-A3B", "the -Instruct-2507 " + SAME_SHAPES,
                                            "fp8-online"),
    "017-qwen2.5-7b-instruct.log": ("Qwen/Qwen2.5-7B-Instruct", "the model itself", None),
    "019-deepseek-r1-distill-qwen-32b-fp8.log": ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
                                                 "its FP8 checkpoint (an alias of the Qwen2.5-32B base)", "fp8"),
    "005-gpt-oss-120b.log": ("openai/gpt-oss-120b", "the model itself (MXFP4 experts)", None),
    "020-meta-llama-3-8b-instruct.log": ("meta-llama/Meta-Llama-3-8B-Instruct", "the model itself", None),
    "022-qwen2.5-14b-instruct-awq.log": ("Qwen/Qwen2.5-14B", "the -Instruct-AWQ " + SAME_SHAPES, "awq"),
    "023-qwen2.5-32b-instruct.log": ("Qwen/Qwen2.5-32B", "the -Instruct " + SAME_SHAPES, None),
    "026-phi-3-mini-4k-instruct.log": ("microsoft/Phi-3-mini-4k-instruct", "the model itself", None),
    "028-meta-llama-3-8b-instruct.log": ("meta-llama/Meta-Llama-3-8B-Instruct", "the model itself", None),
    "029-qwen2.5-14b-instruct.log": ("Qwen/Qwen2.5-14B", "the -Instruct " + SAME_SHAPES, None),
    "031-qwen3-4b.log": ("Qwen/Qwen3-4B", "the model itself", None),
    "034-qwen3-30b-a3b-instruct-2507.log": ("Qwen/Qwen3-30B-A3B", "the -Instruct-2507 " + SAME_SHAPES, None),
    "040-qwen2.5-0.5b-instruct-awq.log": ("Qwen/Qwen2.5-0.5B-Instruct", "the -AWQ of the bundled alias", "awq"),
}
# Start-ups gathered for issue 27 (entries from 041 carry the exact Hugging Face id the log loaded, `hf_id`):
# those whose id is bundled are matched by it (resolve below); these are the ones whose own config is not
# bundled, matched by hand to a bundled config of the same shapes, with the evidence.
MEDGEMMA = ("MedGemma 27B is Gemma 3 27B trained further (its card), and its config has gemma-3-27b's shapes: 62 "
            "layers of 5,376, 32 query / 16 KV heads of 128, MLP 21,504, vocab 262,208, window 1,024")
NEW_MODELS: dict[str, tuple[str, str, str | None]] = {
    "041-qwen3-coder-30b-a3b-instruct.log": ("Qwen/Qwen3-30B-A3B", "Qwen3-Coder-30B-A3B's card gives its shapes: "
                                             "48 layers, 32 query / 4 KV heads, 128 experts, 8 active", None),
    "045-huihui-gpt-oss-20b-mxfp4-abliterated.log": ("openai/gpt-oss-20b", "an abliterated gpt-oss-20b: the "
                                                     "weights edited, not the shapes (MXFP4, as the log says)", None),
    "050-qwen3-30b-a3b-instruct-2507-int4-w4a16.log": ("Qwen/Qwen3-30B-A3B-Instruct-2507", "a W4A16 "
                                                       "compressed-tensors quantization of it (the path's name)",
                                                       "w4a16"),
    "052-meta-llama-3.1-8b-instruct.log": ("meta-llama/Llama-3.1-8B-Instruct", "the same repository under its "
                                           "earlier Hub name", None),
    "057-qwen3-30b-a3b-thinking-2507-awq.log": ("Qwen/Qwen3-30B-A3B-Instruct-2507", "the -Thinking-2507 twin "
                                                "of the bundled -Instruct-2507, AWQ 4-bit (compressed-tensors)",
                                                "w4a16"),
    "060-qwen3-4b-instruct-2507.log": ("Qwen/Qwen3-4B-Thinking-2507", "the -Instruct-2507 twin of the bundled "
                                       "-Thinking-2507", None),
    "062-qwen2.5-coder-14b-instruct.log": ("Qwen/Qwen2.5-14B", "Qwen2.5-Coder-14B's card gives Qwen2.5-14B's "
                                           "shapes: 48 layers, 40 query / 8 KV heads", None),
    "063-qwen3.6-27b.log": ("nvidia/Qwen3.6-27B-NVFP4", "the bf16 model nvidia's NVFP4 checkpoint quantizes "
                            "(its config less the quantization_config)", "bf16"),
    "066-gemma-4-26b-a4b-it-nvfp4.log": ("nvidia/Gemma-4-26B-A4B-NVFP4", "RedHatAI's NVFP4 of the same model",
                                         None),
    "016-typhoon-ocr-7b.log": ("Qwen/Qwen2.5-VL-7B-Instruct", "typhoon-ocr-7b is a fine-tune of Qwen2.5-VL-7B-"
                               "Instruct (its card); the log's engine line names Qwen2_5_VLForConditionalGeneration",
                               None),
    "025-llava-1.5-7b-hf-awq.log": ("llava-hf/llava-1.5-7b-hf", "ybelkada's AWQ of it (the log's path)", "awq"),
    "032-qwen3.6-35b-a3b-nvfp4.log": ("nvidia/Qwen3.6-35B-A3B-NVFP4", "RedHatAI's NVFP4 of the same model: nvidia's "
                                      "config gives its shapes; which modules RedHat left in 16 bits may differ",
                                      None),
    "053-deepseek-r1-distill-qwen-14b-awq.log": ("Qwen/Qwen2.5-14B", "casperhansen's AWQ of DeepSeek-R1-Distill-"
                                                 "Qwen-14B, whose shapes are Qwen2.5-14B's (the bundled alias)",
                                                 "awq"),
    "065-gemma-4-26b-a4b-it-qat-awq-int4.log": ("google/gemma-4-26B-A4B", "cyankiwi's QAT AWQ INT4 "
                                                "(compressed-tensors) of its -it; which modules stay 16-bit is "
                                                "not known", "w4a16"),
    "118-qwen3.6-35b-heretic.log": ("Qwen/Qwen3.6-35B-A3B", "the same /models/target as 075 (served as "
                                    "qwen36-35b-heretic, Qwen3_5MoeForConditionalGeneration, line 9), NVFP4 weights by "
                                    "vLLM's Marlin FP4 warning: which modules stay 16-bit is not known", "nvfp4"),
    **{name: ("poolside/Laguna-S-2.1-FP8", "poolside's INT4 of the same model (the log's 'Using "
              "CompressedTensorsWNA16MarlinMoEMethod'): its own config was not found, so it is planned as the FP8 "
              "sibling's recipe at W4A16 (the same ignore list and FP8 KV scheme, int4 in groups of 128)",
              "w4a16-sibling")
       for name in LAGUNA_INT4_DFLASH},
    "075-qwen3.6-dflash.log": ("Qwen/Qwen3.6-35B-A3B", "a compressed-tensors fine-tune of it at /models/target "
                               "(Qwen3_5MoeForConditionalGeneration, line 24); its format is not known, so only its "
                               "shapes are planned", "unknown"),
    "038-gemma-3-27b-it.log": ("google/medgemma-27b-it", MEDGEMMA, None),
    "081-gemma-3-27b-it.log": ("google/medgemma-27b-it", MEDGEMMA, None),
    "080-gemma-4-26b-a4b-it.log": ("google/gemma-4-26B-A4B", "the instruction-tuned model of the bundled base: "
                                   "the same shapes", None),
    "073-gemma-4-31b-it.log": ("nvidia/Gemma-4-31B-IT-NVFP4", "the bf16 model nvidia's NVFP4 checkpoint "
                               "quantizes (its config less the quantization_config)", "bf16"),
    "068-qwen3.8-27b-int4-mtp.log": ("Qwen/Qwen3.8-27B", "RedHatAI's INT4 of it (compressed-tensors W4A16, as "
                                     "RedHatAI's INT4 checkpoints are): its own config was not found, so which "
                                     "modules stay 16-bit is not known", "w4a16"),
    "069-qwen3.8-27b-nvfp4-mtp.log": ("Qwen/Qwen3.8-27B", "unsloth's NVFP4 of it: its own config was not found, so "
                                      "which modules stay 16-bit is not known", "nvfp4"),
    "054-qwen3-vl-embedding-2b.log": ("Qwen/Qwen3-VL-Embedding-2B", "the bundled alias: Qwen3-VL-2B-Instruct's "
                                      "shapes, the base the embedding model was trained from", None),
    "072-gemma-3-12b-it.log": ("google/gemma-3-12b-it-qat-q4_0-unquantized", "Google's QAT checkpoint of "
                               "gemma-3-12b-it, unquantized: the same model trained further, the same shapes", None),
    "011-gemma-4-e4b-it.log": ("google/gemma-4-E4B-it", "the model itself (the log's google/gemma-4-E4b-it; the "
                               "Hub's ids are case-insensitive)", None),
    "008-dotsocr.log": ("hexiydev/dots.ocr", "a local copy of dots.ocr (DotsOCR, its weights folder)", None),
    "010-dots.ocr.log": ("hexiydev/dots.ocr", "hexiydev's copy of rednote-hilab/dots.ocr on the Hub", None),
}
SKIPPED = {
    "035-gte-qwen2-7b-instruct.log": "gte-Qwen2-7B: an embedding model; no config found (and V0 0.5 prints "
                                     "no KV GiB)",
    "037-qwen2-vl-7b-instruct-awq.log": "Qwen2-VL-7B AWQ: no config found; the vision tower is not in a text config",
    "046-qwen3-vl-30b-a3b-instruct.log": "Qwen3-VL-30B-A3B: only a trimmed copy of its config was found",
    "061-gemma-3-12b-it-qat-autoawq.log": "gemma-3-12b-it: no public copy of its config.json was found",
    "074-gemma-4-26b-a4b-nvfp4-dflash.log": "a fine-tune at /models/target with a DFlash drafter: neither known",
    "076-nemotron-3-nano-4b-bf16.log": "Nemotron-3-Nano-4B: no config found",
    "103-gemma-3-270m-it.log": "gemma-3-270m-it: no public copy of its config.json was found",
    "070-laguna-s-2.1-nvfp4-dflash.log": "Laguna-S-2.1 NVFP4: a 92.85 GiB checkpoint (line 38) with MoE layers "
                                         "left unquantized (line 36: the 'Unquantized MoE backend' beside the "
                                         "NVFP4 one); which ones only its own config, not found, would say",
    "077-nemotron-3-super-120b-a12b-nvfp4-mtp.log": "Nemotron-3-Super NVFP4: only configs without their "
                                                    "quantization_config were found",
}


# Start-up -> (the KV cache dtype its checkpoint declares, the evidence), where the bundled config is a stand-in for
# the checkpoint loaded: vLLM's --kv-cache-dtype auto follows the checkpoint's own declaration.
CHECKPOINT_KV: dict[str, tuple[str | None, str]] = {
    "066-gemma-4-26b-a4b-it-nvfp4.log": (None, "RedHatAI's checkpoint, unlike nvidia's config of the same model, "
                                         "declares no FP8 KV cache: the log's 23,242 bytes per token are bf16's"),
    "069-qwen3.8-27b-nvfp4-mtp.log": ("fp8", "line 75: kv_cache_dtype=torch.float8_e4m3fn while the engine's "
                                      "config says kv_cache_dtype=auto"),
}


# The total memory NVML reports for a card model (what the guard's probe reads), from a real source each. vLLM
# sizes its budget from CUDA's total instead (torch.cuda.mem_get_info), which is smaller by the driver's
# reservation: an 80 GB card shows "total capacity of 79.25 GiB" (shared failures/017), a T4 14.56 GiB
# (failures/022) against NVML's 15360 MiB; the comparison below shows what that costs the prediction.
NVML_TOTAL_MIB = {
    "A100-SXM4-80GB": (81920, "profiles/machines/a100-80gb-x2.json (nvidia-smi, NVIDIA A100-SXM4-80GB)"),
    "H100 80GB HBM3": (81559, "profiles/machines/h100-80gb-shared.json (nvidia-smi, NVIDIA H100 80GB HBM3)"),
    "RTX A6000": (46068, "vllm-project/vllm#16141: nvidia-smi 46068MiB (shared startups/040's own source)"),
    "L4": (23034, "profiles/machines/l4-24gb.json (nvidia-smi, NVIDIA L4: 24,152,899,584 bytes)"),
}
# Start-up -> (card, why that card): only where the source names the GPU.
GPU_OF = {
    "001-qwen2-7b-instruct.log": ("A100-SXM4-80GB", "README: A100 80GB (form factor not said: the SXM4 total is used)"),
    "002-qwen2-7b-instruct.log": ("A100-SXM4-80GB", "README: A100 80GB (form factor not said: the SXM4 total is used)"),
    "005-gpt-oss-120b.log": ("A100-SXM4-80GB", "README: 4x A100 80GB via Ray"),
    "014-qwen3-30b-a3b-instruct-2507.log": ("H100 80GB HBM3",
                                            "the log's MoE config lookup: device_name=NVIDIA_H100_80GB_HBM3"),
    "040-qwen2.5-0.5b-instruct-awq.log": ("RTX A6000", "the issue's nvidia-smi output"),
    "042-qwen3-235b-a22b-fp8.log": ("H100 80GB HBM3", "the log's MoE config lookup: NVIDIA_H100_80GB_HBM3"),
    "047-qwen3-30b-a3b.log": ("H100 80GB HBM3", "the log's MoE config lookup: NVIDIA_H100_80GB_HBM3"),
    "052-meta-llama-3.1-8b-instruct.log": ("L4", "the repository's name, demo_env_l4"),
}


# Why the worst figures are off, from each log's own text (printed under its quantity's table). A figure named here
# stays in the medians and worst cases: the notes explain it, the constants are not bent to it.
WHY: dict[tuple[str, str], str] = {
    ("079-gemma-3-4b-it.log", "weights_gib"):
        "8.61 GiB loaded where 4.30B parameters in bf16 are 8.00 (text 3.88B, SigLIP 0.42B): not explained by the "
        "log; the same source build (0.1.dev1+g6adc00f70.sm120a, a Blackwell 12.0 card) loads gemma-3-1b-it "
        "(startups/102, 104: 1.96 GiB where its bundled config's 1.00B parameters are 1.86) and -270m-it (103, no "
        "config bundled: 0.53 against 0.50) 5-6% above their parameters too, so the build, not the config, is the "
        "likelier cause",
    ("102-gemma-3-1b-it.log", "weights_gib"): "the same build as 079 (5% above the parameters): see 079",
    ("104-gemma-3-1b-it.log", "weights_gib"): "the same build as 079 (5% above the parameters): see 079",
    ("105-gemma-3-4b-it.log", "weights_gib"):
        "the same build and model as 079 (8.61 GiB loaded, 8.00 planned): see 079",
    ("118-qwen3.6-35b-heretic.log", "weights_gib"):
        "a fine-tune at /models/target whose own config was not found, planned as NVFP4 on every linear layer of "
        "Qwen3.6-35B-A3B's shapes (vLLM's Marlin FP4 warning names the format): the modules it kept in 16 bits "
        "are not known",
    **{(name, "weights_gib"): "poolside's INT4 planned as its FP8 sibling's recipe at W4A16 (attention, the dense "
       "layer, shared experts and head in 16 bits, the routed experts int4 in groups of 128), its own config not "
       "found: the checkpoint vLLM read is 66.97 GiB (line 33 of 067), 4.6 more than that plan's 62.37, which only "
       "its config would place; the drafter is counted to 2.08 GiB, the size of its checkpoint (line 68)"
       for name in LAGUNA_INT4_DFLASH},
    ("069-qwen3.8-27b-nvfp4-mtp.log", "weights_gib"):
        "unsloth's NVFP4 planned as NVFP4 on every linear layer but the head (its own config was not found): 3 GiB "
        "more loaded than that: modules unsloth kept in 16 bits, which only its config would name",
    ("032-qwen3.6-35b-a3b-nvfp4.log", "weights_gib"):
        "RedHatAI's NVFP4 planned with nvidia's config of the same model (FP8 attention, NVFP4 experts and lm_head, "
        "16-bit MTP layer, counted): which modules RedHat left in 16 bits is not in any config found",
    ("045-huihui-gpt-oss-20b-mxfp4-abliterated.log", "weights_gib"):
        "GB10 (SM 12.1, NGC 26.01 build): 13.72 GiB loaded for a 12.82 GiB MXFP4 checkpoint; the log names no "
        "MoE kernel (line 96 only \"TRITON_ATTN\"), so the padding or dequantized copy behind the +0.9 GiB is not "
        "shown",
    ("072-gemma-3-12b-it.log", "weights_gib"):
        "22.62 GiB loaded under --language-model-only, where the plan leaves out Gemma 3's 0.42B-parameter SigLIP "
        "tower (vLLM 0.33 builds no tower whose media are all at 0): 21.92, or 22.69 with the tower; the log does "
        "not say whether this 2026 source build kept it, and Gemma 3 loads above its parameters in other builds too "
        "(079)",
    ("054-qwen3-vl-embedding-2b.log", "weights_gib"):
        "3.46 GiB loaded where Qwen3-VL-2B's language model is 3.20 (1.72B parameters in float16; vLLM 0.11's "
        "qwen3_vl.py builds no vision tower with images and videos limited to 0, and the log says 'running in "
        "text-only mode'): 0.25 GiB that the log does not explain; the KV cache matches the shapes to 0.02%",
    ("123-diffusiongemma-26b-a4b-it-nvfp4.log", "weights_gib"):
        "18.16 GiB loaded where the checkpoint's two shards hold 17.53 (r0b0tlab's header audit: 10,002,097,536 and "
        "8,821,758,352 bytes) and the plan 17.19 (its 0.03 GiB self-conditioning MLP left out): vLLM holds 0.6 GiB "
        "more than the files, with the FLASHINFER_CUTLASS NVFP4 MoE backend (line 38); not explained by the log",
    ("124-diffusiongemma-26b-a4b-it-nvfp4.log", "weights_gib"): "the same checkpoint and build as 123: see 123",
    ("066-gemma-4-26b-a4b-it-nvfp4.log", "weights_gib"):
        "RedHat's NVFP4 planned with nvidia's config of the same model, whose ignore list keeps every layer's dense "
        "MLP (model.language_model.layers.N.mlp*) and attention in bf16: RedHat's checkpoint, 1.3 GiB lighter, "
        "quantizes some of them; since the dense MLP beside each MoE block is counted (vLLM gemma4.py runs it "
        "unconditionally), those 535M parameters weigh 1 GiB in nvidia's bf16",
    ("065-gemma-4-26b-a4b-it-qat-awq-int4.log", "weights_gib"):
        "cyankiwi's QAT AWQ INT4 (line 27: \"Using MarlinLinearKernel for CompressedTensorsWNA16\") planned as if "
        "every linear layer were 4-bit; its config, with the modules it keeps in 16 bits, was not found",
    ("038-gemma-3-27b-it.log", "weights_gib"):
        "V0 0.8.2 at TP 8: 6.74 GiB loaded per T4 where the 51.1 GiB checkpoint over 8 is 6.39; the vision tower "
        "(0.4B parameters) is not split the way the language model is, and the log does not say how it was placed",
    ("038-gemma-3-27b-it.log", "kv_gib"):
        "line 152: \"PyTorch activation peak memory takes 1.66GiB\" (V0's multimodal profile run with dummy images "
        "at max-num-seqs 16), where the model counts 0.4; and the weights above",
    ("081-gemma-3-27b-it.log", "kv_gib"):
        "line 1231: 101.69 GiB asked, 51.54 for weights, 1.72 peak activation, 0.09 non-torch and 2.11 of CUDA "
        "graphs measured (the model: 0.90), with 1,024 sequences of a 262,208-token vocabulary in the sampler "
        "warm-up; 44.61 GiB left for the KV cache",
    ("031-qwen3-4b.log", "kv_gib"):
        "line 32: \"5.59 GiB for peak activation\" at 8,192 batched tokens and 1,024 sequences (H100 defaults); "
        "the model predicts 1.8: vLLM 0.10.2's sampler warm-up over 1,024 dummy rows of 151,936 fp32 logits held "
        "about eight copies, where 001/002 (0.10.1.1, 256 rows) fit the two the model counts",
    ("031-qwen3-4b.log", "longest_len"): "the KV GiB above: the same 3.8 GiB of peak activation",
    ("042-qwen3-235b-a22b-fp8.log", "kv_gib_nvml"):
        "TP 8 with expert parallel: a 71.7 GiB budget (0.9 x the H100's NVML 79.6) less 27.7 loaded and 35.7 KV "
        "leaves 8.3 GiB of non-KV memory per GPU that the log does not split (0.10.0 prints no peak or non-torch "
        "figure); the model counts 2.2 (the fused-MoE workspace, 1,024 sampler rows, 0.5 non-torch)",
    ("052-meta-llama-3.1-8b-instruct.log", "kv_gib_nvml"):
        "the card is known only from the repository's name (demo_env_l4); vLLM sizes its budget from CUDA's total, "
        "which is below NVML's on every card the corpus shows both for (an 80 GB A100: 80.00 against 79.25 GiB, "
        "startups/041), and the guard's NVML probe does not subtract that; an L4's own pair is not in the corpus, "
        "but at the A100's 0.75 GiB, 0.92 x it would be more than the 0.52 GiB over",
    ("005-gpt-oss-120b.log", "weights_gib"):
        "line 79: \"Your GPU does not have native support for FP4 ... leveraging the Marlin kernel\" (A100, SM80); "
        "vLLM's Marlin MXFP4 path pads each expert (intermediate per GPU 720 -> 768, hidden 2880 -> 3072 at TP 4: "
        "vLLM 0.32 fused_moe/oracle/mxfp4.py:851-852), 17.13 GiB per GPU against the 17.22 loaded (line 89); "
        "not modelled: the padding follows the MoE backend vLLM picks per GPU",
    ("005-gpt-oss-120b.log", "kv_gib_nvml"):
        "+2.57 GiB, of which 2.05 GiB is the weights' Marlin padding above (17.22 GiB loaded, line 89, against "
        "15.17 predicted); the other +0.52 GiB (+1.1%) the log does not split (0.10.1.1 prints no non-torch or "
        "activation figure), and the card's form factor is not said (the SXM4 total is used)",
    ("017-qwen2.5-7b-instruct.log", "cudagraph_gib"):
        "ROCm, not CUDA: line 1 \"Using legacy triton_kernels on ROCm\", line 20 rocm.py \"Using Triton Attention "
        "backend\"; HIP graphs took 3.19 GiB where the same 51 + 35 sizes took 0.46-0.50 on NVIDIA (013, 026)",
    ("005-gpt-oss-120b.log", "cudagraph_gib"):
        "Ray across nodes (workers at 10.42.9.224, 10.42.9.225, 10.42.11.243): \"Custom allreduce is disabled "
        "because this process group spans across nodes\" "
        "(line 70): NCCL all-reduce is captured in every graph, about twice the single-node figure",
    ("004-qwen2-7b-instruct.log", "cudagraph_gib"):
        "Ray across nodes (a worker at 10.254.6.219): \"Custom allreduce is disabled because this process group "
        "spans across nodes\" "
        "(lines 73-74): 1.00 GiB where the same model at TP 1 took 0.50 (001, 002)",
    ("022-qwen2.5-14b-instruct-awq.log", "cudagraph_gib"):
        "line 8: \"you specified quantization=awq explicitly, so forcing awq\": the legacy AWQ kernel, not Marlin "
        "(vLLM's awq.py dequantizes whole weights to 16 bits for batches of 256+ tokens, so the large captured "
        "sizes likely hold those temporaries: a reading of vLLM's code, not a measurement)",
    ("014-qwen3-30b-a3b-instruct-2507.log", "cudagraph_gib"):
        "few sizes (19 piecewise + 11 full at max-num-seqs 64), where the fixed part weighs most; vLLM's own "
        "estimate missed too: \"CUDA graph pool memory: 0.22 GiB (actual), 0.14 GiB (estimated)\" (line 75)",
}


@dataclass(frozen=True)
class Row:
    file: str
    version: str
    quantity: str  # weights_gib | kv_bytes_per_token | kv_gib | cudagraph_gib
    predicted: float
    reported: float
    family: str = ""

    @property
    def error_pct(self) -> float:
        return (self.predicted - self.reported) / self.reported * 100


def version_tuple(version: str) -> tuple[int, int]:
    """(major, minor); a source build printing "0.1.dev" (startups/072, 079, 081, 082: 2026 builds whose own lines
    call v0.21.0 past) counts as newer than every release in the set."""
    if version.startswith("0.1.dev"):
        return (0, 999)
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def facts_for(model_id: str, weight_format: str | None) -> ModelFacts:
    """The bundled facts, with the weight size of the checkpoint that start-up really loaded ("unknown": a
    checkpoint whose format is not known, so only its shapes are planned)."""
    entry = bundled.entries()[model_id]
    if weight_format == "unknown":
        config = dict(entry["config"])
        config.pop("quantization_config", None)
        return ModelFacts(model=model_id, source="bundled", **model_config.normalize(config))
    config = dict(entry["config"])
    if weight_format == "bf16":  # the unquantized model a bundled quantized checkpoint was made from
        config.pop("quantization_config", None)
    elif weight_format == "w4a16":  # compressed-tensors W4A16 (int4, group 128), as llm-compressor writes it
        config["quantization_config"] = {"quant_method": "compressed-tensors", "bits": 4, "group_size": 128}
    elif weight_format == "w4a16-sibling":  # the bundled checkpoint's own recipe (ignore list, KV scheme), int4
        quant = copy.deepcopy(config["quantization_config"])
        for group in quant["config_groups"].values():
            group["weights"] = {"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group"}
            group["input_activations"] = None
        config["quantization_config"] = quant
    elif weight_format == "nvfp4":  # NVFP4 (4-bit, an FP8 scale per 16) on every linear layer but the head
        config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    if weight_format == "awq":  # AWQ 4-bit, group 128: the format of Qwen's own -AWQ checkpoints
        config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128}
    elif weight_format == "fp8":  # a pre-quantized FP8 checkpoint (compressed-tensors FP8-dynamic)
        config["quantization_config"] = {"quant_method": "fp8"}
    fields = model_config.normalize(config)
    weights = entry.get("weights_bytes") if weight_format not in ("bf16", "w4a16", "w4a16-sibling", "nvfp4") else None
    if weight_format in ("fp8", "fp8-online"):
        fields["quant_method"] = "fp8"
        weights = model_config.estimate_weights_bytes(fields, config)
    if weights is None:
        weights = model_config.estimate_weights_bytes(fields, config)
    source = "index" if weights is not None and weights == entry.get("weights_bytes") else "estimate"
    if weights is None:
        return ModelFacts(model=model_id, source="bundled", **fields)
    return ModelFacts(model=model_id, source="bundled", weights_bytes=weights, weights_source=source, **fields)


def log_settings(log: str, version: str = "") -> dict[str, Any]:
    """What the log itself says the start-up ran with, where the index does not record it.

    - max_num_seqs / max_num_batched_tokens from vLLM's own "non-default args: {...}" line (startups/014, vLLM
      0.22.1, line 9: max_num_seqs 64, max_num_batched_tokens 8192: the CUDA-graph sizes follow from them);
    - the utilization vLLM used when none was given, from its own line: "The current
      --gpu-memory-utilization=0.9200 is equivalent to ..." (V1 since v0.21, startups/014 line 67: 0.92 was
      already the default in 0.22.1) or "Desired GPU memory utilization is (0.9, ...)" (startups/031, 0.10.2);
    - the CUDA-graph sizes it captured: the compilation_config's "cudagraph_capture_sizes" list where printed
      (0.8-0.11: 67 sizes, 1, 2, 4 and every 8 to 512; 83 to 1024 for gpt-oss, startups/005); 0.10.1.1 prints only
      "max_capture_size":512 (001, 002, 004), whose list is the same 67 that 0.10.2 and 0.11.0 print (031, 019).
      Later logs print no list; their "Capturing CUDA graphs (...): N/N" bars match the guard's 0.33 default (51
      piecewise, 35 full decode at max-num-seqs 256: 013, 017, 022, 026; 19 and 11 at 64: 014);
    - the graph mode: "cudagraph_mode":1 is PIECEWISE (0.10: 001-005, 031), [2,1] FULL_AND_PIECEWISE (019, 0.11.0);
      before 0.10 V1 captured piecewise graphs only (007, 029, 040 print no mode).
    """
    found: dict[str, Any] = {}
    m = re.search(r"non-default args: (\{.*\})", log)
    if m:
        try:
            args = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):  # a truncated or redacted line: nothing is taken from it
            args = {}
        for key in ("max_num_seqs", "max_num_batched_tokens"):
            if isinstance(args.get(key), int):
                found[key] = args[key]
        # chunked prefill off makes a step's token budget the whole max-model-len, and a sliding-window layer keeps
        # window - 1 + that budget (startups/101: every layer at full length where max-model-len is 4,096)
        if args.get("enable_chunked_prefill") is False:
            found["enable_chunked_prefill"] = False
    m = (re.search(r"current --gpu-memory-utilization=([0-9.]+) is equivalent", log)
         or re.search(r"Desired GPU memory utilization is \(([0-9.]+),", log))
    if m:
        found["utilization"] = float(m.group(1))
    m = re.search(r'"cudagraph_capture_sizes":\[([0-9, ]+)\]', log)
    if m:
        found["cudagraph_capture_sizes"] = tuple(int(x) for x in m.group(1).split(","))
    elif (m := re.search(r'"max_capture_size":(\d+)', log)) and version_tuple(version) < (0, 12):
        found["cudagraph_capture_sizes"] = (1, 2, 4, *range(8, int(m.group(1)) + 1, 8))
    # the extra terms' settings (issue 27), one key at a time: the args line also holds objects literal_eval
    # cannot read (startups/044: LoRAModulePath(...))
    for key in ("enable_lora", "language_model_only"):
        if re.search(rf"'{key}': True", log):
            found[key] = True
    for key in ("max_loras", "max_lora_rank"):
        if (m := re.search(rf"'{key}': (\d+)", log)):
            found[key] = int(m.group(1))
    for key in ("speculative_config", "limit_mm_per_prompt"):
        if (m := re.search(rf"'{key}': (\{{[^{{}}]*\}})", log)):
            with contextlib.suppress(ValueError, SyntaxError):
                found[key] = ast.literal_eval(m.group(1))
    # vLLM's own total (CUDA's, not NVML's): "Free memory on device (78.84/79.25 GiB) on startup"
    if (m := re.search(r"Free memory on device \(([0-9.]+)/([0-9.]+) GiB\)", log)):
        found["gpu_total_gib"] = float(m.group(2))
    if (m := re.search(r"Setting attention block size to (\d+) tokens", log)):
        found["attention_block_size"] = int(m.group(1))
    m = re.search(r'"cudagraph_mode":(\d|\[[0-9, ]+\])', log)
    if m:
        found["cudagraph_mode"] = "PIECEWISE" if m.group(1) == "1" else "FULL_AND_PIECEWISE"
    elif version and version_tuple(version) < (0, 10):
        found["cudagraph_mode"] = "PIECEWISE"
    return found


def params_for(entry: dict[str, Any], log: str = "") -> memory_params.Params:
    dtype = entry.get("dtype") or "auto"
    said = log_settings(log, entry.get("vllm_version") or "")
    utilization = entry.get("gpu_memory_utilization") or said.get("utilization")
    return memory_params.Params(
        utilization=utilization,
        max_model_len=entry.get("max_model_len"),
        max_num_seqs=said.get("max_num_seqs"),
        max_num_batched_tokens=said.get("max_num_batched_tokens"),
        enable_chunked_prefill=said.get("enable_chunked_prefill"),
        enforce_eager=bool(entry.get("enforce_eager")),
        kv_cache_dtype=entry.get("kv_cache_dtype") or "auto",
        dtype=dtype,
        tensor_parallel_size=entry.get("tp") or 1,
        pipeline_parallel_size=entry.get("pp") or 1,
        cudagraph_capture_sizes=said.get("cudagraph_capture_sizes"),
        cudagraph_mode=said.get("cudagraph_mode"),
        enable_lora=bool(said.get("enable_lora")),
        max_loras=said.get("max_loras", 1),
        max_lora_rank=said.get("max_lora_rank", 16),
        speculative_config=said.get("speculative_config"),
        limit_mm_per_prompt=said.get("limit_mm_per_prompt"),
        language_model_only=bool(said.get("language_model_only")),
        enable_expert_parallel=bool((entry.get("extra") or {}).get("enable_expert_parallel")),
        draft=facts_for(DRAFTS[entry["file"]], None) if entry.get("file") in DRAFTS else None,
    )


# Start-up -> the draft model its --speculative-config loaded, where its config is bundled.
DRAFTS = {
    "075-qwen3.6-dflash.log": "z-lab/Qwen3.6-35B-A3B-DFlash",  # line 26: DFlashDraftModel at /models/drafter
    # poolside/Laguna-S-2.1-DFlash-INT4 (line 7): a bf16 drafter despite its name, 2.08 GiB of checkpoint (line 68)
    # as the bundled poolside/Laguna-S-2.1-DFlash's 1,114,977,792 parameters in bf16 are
    **{name: "poolside/Laguna-S-2.1-DFlash" for name in LAGUNA_INT4_DFLASH},
}


def resolve(entry: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """The bundled config a start-up is planned from: the hand-matched tables, else its exact Hub id."""
    name = entry["file"]
    if name in MODELS:
        return MODELS[name]
    if name in NEW_MODELS:
        return NEW_MODELS[name]
    # bundled configs and aliases (DiffusionGemma's, whose evidence the alias's source records)
    by_lower = {m.lower(): m for m in bundled.entries()}
    model_id = by_lower.get(str(entry.get("hf_id") or "").lower())
    return (model_id, "the model itself (its Hub id)", None) if model_id else None


def reported_per_token(model: ModelFacts, params: memory_params.Params, est: memory.Estimate,
                       version: str) -> float | None:
    """What "KV cache GiB / GPU KV cache size tokens" means in the log's version, predicted.

    For full attention every version gives the plain per-token figure. With sliding-window or state layers the
    token count changed meaning: through 0.19 it was (blocks per layer group) x block size, so GiB / tokens is
    every cache layer's per-token bytes, a state layer counted as an attention layer (its page padded to one):
    startups/048, 049 (0.19.0, Qwen3.5-27B at TP 4: 64 layers x 1,024 bytes), 078 (0.19.2rc1, 40 x 2,048) and
    080 (0.20.0).
    From 0.21 (between 080's 0.20.0 and 073's 0.22.1rc1) it is concurrency x max-model-len, so GiB / tokens
    is one request's bytes per token of it: 073
    (0.22.1rc1, gemma-4-31B), 066 and 032 (0.25.1).
    """
    _, n_sliding, n_state = kv_cache.layer_counts(model, params)
    if not (n_sliding or n_state):
        return est.kv_bytes_per_token
    if version_tuple(version) >= (0, 21) and est.max_model_len:
        need = kv_cache.kv_bytes_for_length(model, params, est.max_model_len, est.block_size,
                                            est.max_num_batched_tokens)
        return need / est.max_model_len if need else None
    # every cache layer with the largest page: 080 (0.20.0, gemma-4-26B-A4B: 30 layers x 8,192 bytes, its five
    # full-attention layers' 4,096 padded to the sliding layers' page)
    # before the hybrid KV manager (0.10) no kind was padded to a group: startups/038 (V0 0.8.2, gemma-3-27b at
    # TP 8) holds all 62 layers x 1,024 bytes
    n_full, n_sliding, n_state = kv_cache.layer_counts(model, params, grouped=version_tuple(version) >= (0, 10))
    pages = [kv_cache.layer_kv_bytes_per_token(model, params, kind) or 0 for kind in ("sliding", "full")]
    return (n_full + n_sliding + n_state) * max(pages)


def family(model: ModelFacts) -> str:
    """A family name from the architecture: "Qwen3Moe", "Gemma3", "GptOss", ..."""
    arch = model.architecture or "unknown"
    return re.sub(r"For(?:CausalLM|ConditionalGeneration)$", "", arch)


def calibrate(startups: Path = STARTUPS) -> tuple[list[Row], dict[str, str]]:
    """Every comparable figure of every start-up the guard can model; and the rest, with why not."""
    index = json.loads((startups / "index.json").read_text())
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    for entry in index:
        name = entry["file"]
        matched = resolve(entry)
        if matched is None:
            skipped[name] = SKIPPED.get(name, "not matched to a bundled model")
            continue
        model_id, _why, weight_format = matched
        model = facts_for(model_id, weight_format)
        if name in CHECKPOINT_KV:  # the loaded checkpoint's own KV cache dtype, where its config is a stand-in
            model = dataclasses.replace(model, checkpoint_kv_dtype=CHECKPOINT_KV[name][0])
        log = (startups / name).read_text(errors="replace")
        params = params_for(entry, log)
        said = log_settings(log, entry.get("vllm_version") or "")
        version = entry["vllm_version"]
        # vLLM's own total where the log or the index says it; else the NVML total of a named card (below)
        total_gib = entry.get("gpu_total_gib") or said.get("gpu_total_gib")
        gpu = Gpu(index=0, uuid="", name=entry.get("gpu"), pci_bus_id=None,
                  memory_total_bytes=int(total_gib * GIB) if total_gib else None, memory_used_bytes=None,
                  memory_free_bytes=None, compute_capability=None, mig_enabled=None, processes=None)
        est = memory.estimate(model, gpu, params)
        fam = family(model)
        if not total_gib and name in GPU_OF:  # the NVML total of the named card, as the guard would probe it
            card = GPU_OF[name][0]
            nvml = Gpu(index=0, uuid="", name=card, pci_bus_id=None,
                       memory_total_bytes=NVML_TOTAL_MIB[card][0] * 2**20, memory_used_bytes=None,
                       memory_free_bytes=None, compute_capability=None, mig_enabled=None, processes=None)
            if version_tuple(entry["vllm_version"]) < (0, 33) and params.utilization is None:
                # Not printed by this log: 0.9, the default of the versions whose logs print it (031, 0.10.2).
                params = dataclasses.replace(params, utilization=0.9)
            est_nvml = memory.estimate(model, nvml, params)
            if est_nvml.kv_budget_bytes is not None and entry["reported"].get("kv_cache_gib"):
                kv = est_nvml.kv_budget_bytes
                if version_tuple(entry["vllm_version"]) < (0, 21):
                    kv += est_nvml.cudagraph_bytes
                rows.append(Row(name, entry["vllm_version"], "kv_gib_nvml", kv / GIB,
                                float(entry["reported"]["kv_cache_gib"]), fam))
        rep = entry["reported"]

        def add(quantity: str, predicted: float | None, reported: float | None,
                file: str = name, version: str = version, fam: str = fam) -> None:
            if predicted is not None and reported:
                rows.append(Row(file, version, quantity, float(predicted), float(reported), fam))

        if est.weights_bytes_per_gpu is not None:
            # vLLM's "Model loading took" holds the LoRA slots and the drafter too (memory_terms.py)
            add("weights_gib", (est.weights_bytes_per_gpu + est.terms_bytes("weights")) / GIB,
                rep.get("model_loading_gib"))
        per_token = None
        if rep.get("kv_cache_gib") and rep.get("kv_cache_tokens"):
            per_token = rep["kv_cache_gib"] * GIB / rep["kv_cache_tokens"]
        elif rep.get("kv_cache_gib") and rep.get("gpu_blocks"):  # V0: blocks of 16 tokens
            per_token = rep["kv_cache_gib"] * GIB / (rep["gpu_blocks"] * kv_cache.DEFAULT_BLOCK_SIZE)
        add("kv_bytes_per_token", reported_per_token(model, params, est, version), per_token)
        if total_gib and est.kv_budget_bytes is not None:
            kv = est.kv_budget_bytes
            if version_tuple(version) < (0, 21):
                kv += est.cudagraph_bytes  # graphs were not in the budget before v0.21
            add("kv_gib", kv / GIB, rep.get("kv_cache_gib"))
            # the longest max-model-len one request could have: for full attention, the tokens the cache holds
            if not model.layer_types and rep.get("kv_cache_tokens"):
                add("longest_len", memory.max_fitting_len(model, params, kv, est.block_size,
                                                          est.max_num_batched_tokens), rep["kv_cache_tokens"])
        if not params.enforce_eager:
            add("cudagraph_gib", est.cudagraph_bytes / GIB, rep.get("cudagraph_gib"))
        if said.get("attention_block_size"):
            add("attention_block_size", est.block_size, said["attention_block_size"])
    return rows, skipped


def summary(rows: list[Row], quantity: str) -> tuple[int, float, Row] | None:
    """Count, median absolute error in percent, and the worst row of one quantity."""
    mine = [r for r in rows if r.quantity == quantity]
    if not mine:
        return None
    worst = max(mine, key=lambda r: abs(r.error_pct))
    return len(mine), statistics.median(abs(r.error_pct) for r in mine), worst


QUANTITIES = ("weights_gib", "kv_bytes_per_token", "kv_gib", "kv_gib_nvml", "longest_len", "cudagraph_gib",
              "attention_block_size")


def modelled_files(rows: list[Row]) -> set[str]:
    """Start-ups planned offline: both their weights and their KV bytes per token predicted."""
    weights = {r.file for r in rows if r.quantity == "weights_gib"}
    return weights & {r.file for r in rows if r.quantity == "kv_bytes_per_token"}


def in_issue_set(entry: dict[str, Any]) -> bool:
    """Issue 27's set: vLLM 0.8 or later (or a 2026 source build printing "0.1.dev", whose lines call v0.21 past:
    startups/072, 079, 081, 082) whose log prints the weights, the KV cache GiB and its tokens (or V0 blocks)."""
    rep, version = entry["reported"], entry.get("vllm_version") or ""
    recent = version_tuple(version) >= (0, 8)
    kv = rep.get("kv_cache_gib") and (rep.get("kv_cache_tokens") or rep.get("gpu_blocks"))
    return bool(recent and rep.get("model_loading_gib") and kv)


# The issue's bars (issue 27, "Done when"): medians of |error| in percent.
DONE_WHEN = {"weights_gib": 3.0, "kv_bytes_per_token": 1.0, "kv_gib+kv_gib_nvml": 5.0}


def done_when(rows: list[Row], skipped: dict[str, str], startups: Path = STARTUPS) -> list[str]:
    """The issue's figures over its set: how many are modelled offline, and each median against its bar."""
    index = json.loads((startups / "index.json").read_text())
    wanted = {e["file"] for e in index if in_issue_set(e)}
    modelled = modelled_files(rows) & wanted
    lines = [f"issue 27's set (vLLM >= 0.8, weights, KV GiB and tokens printed): {len(wanted)} start-ups, "
             f"{len(modelled)} modelled offline ({100 * len(modelled) / max(len(wanted), 1):.1f}%; bar 90%)"]
    for key, bar in DONE_WHEN.items():
        mine = [r for r in rows if r.quantity in key.split("+") and r.file in wanted]
        if mine:
            median = statistics.median(abs(r.error_pct) for r in mine)
            lines.append(f"  {key:<22} {len(mine):>3} figures, median |error| {median:.2f}% (bar {bar:g}%)")
    return lines


def by_family(rows: list[Row]) -> list[str]:
    lines = []
    for fam in sorted({r.family for r in rows}):
        cells = []
        for quantity in ("weights_gib", "kv_bytes_per_token", "kv_gib", "kv_gib_nvml"):
            mine = [r for r in rows if r.family == fam and r.quantity == quantity]
            if mine:
                worst = max(mine, key=lambda r: abs(r.error_pct))
                cells.append(f"{quantity} {len(mine)}: median {statistics.median(abs(r.error_pct) for r in mine):.1f}%"
                             f" worst {worst.error_pct:+.1f}%")
        lines.append(f"  {fam:<28} " + "; ".join(cells))
    return lines


def main() -> None:
    rows, skipped = calibrate()
    files = sorted({r.file for r in rows})
    print(f"modelled offline: {len(files)} of {len(files) + len(skipped)} start-ups")
    print("\n".join(done_when(rows, skipped)) + "\n")
    print("by family (the architecture of the bundled config):")
    print("\n".join(by_family(rows)) + "\n")
    for quantity in QUANTITIES:
        mine = [r for r in rows if r.quantity == quantity]
        print(f"== {quantity}")
        for r in mine:
            print(f"  {r.file:<42} vLLM {r.version:<28} predicted {r.predicted:>12.2f} "
                  f"reported {r.reported:>12.2f}  {r.error_pct:+6.1f}%")
        for r in mine:
            if (r.file, quantity) in WHY:
                print(f"    {r.file[:3]} {r.error_pct:+.1f}%: {WHY[r.file, quantity]}")
        s = summary(rows, quantity)
        if s:
            n, median, worst = s
            print(f"  -> {n} figures, median |error| {median:.2f}%, worst {worst.error_pct:+.1f}% ({worst.file})\n")
        else:
            print("  -> no comparable figure among the modelled start-ups\n")
    print("not modelled offline:")
    for name, why in sorted(skipped.items()):
        print(f"  {name:<42} {why}")


if __name__ == "__main__":
    main()
