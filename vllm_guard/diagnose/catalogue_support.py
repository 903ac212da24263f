"""Where the evidence of the readings no rule of rules.py makes comes from: the functions that raise one failure
only (read by fallback.raised_in), the supporting evidence said when nothing decisive follows (fallback.supported,
classify), and the waiting lines of a start that hangs (hang.py). catalogue.py holds the rules' own sources."""

from __future__ import annotations

# Functions that raise one failure only: a traceback whose innermost frame is one of them names its class even when
# the paste cuts the exception's message (read by fallback.raised_in, not by a rule of rules.py).
FRAME_SOURCES: dict[str, tuple[str, str, str]] = {
    # func -> (class, stage, source)
    "validate_parsed_serve_args": ("usage_error", "before_start",
                                   "vLLM 0.6-0.34 entrypoints/*/cli_args.py validate_parsed_serve_args: it raises only "
                                   "for vllm serve's own flags ('Error: --X requires --Y', '... cannot be enabled at "
                                   "the same time')"),
    "resolve_trust_remote_code": ("remote_code_required", "before_start",
                                  "transformers 4.3x-4.5x dynamic_module_utils.py resolve_trust_remote_code: it raises "
                                  "ValueError only to ask for trust_remote_code=True"),
    "_check_if_gpu_supports_dtype": ("dtype_unsupported", "before_start",
                                     "vLLM 0.2-0.6 (V0) worker/worker.py _check_if_gpu_supports_dtype: it raises only "
                                     "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0'"),
    "is_layer_skipped_ascend": ("quant_unsupported", "weight_loading",
                                "vllm-ascend quantization/quant_config.py AscendQuantConfig.is_layer_skipped_ascend: "
                                "it looks each layer's weight up in the checkpoint's quant_model_description.json, "
                                "raising KeyError for a layer the description lacks and ValueError when only some "
                                "shards of a fused layer are quantized: a quantization description this vllm-ascend "
                                "does not read"),
    "resolve_transformers_arch": ("unsupported_architecture", "before_start",
                                  "vLLM 0.8-0.9 model_executor/model_loader/utils.py resolve_transformers_arch: it "
                                  "raises only 'Cannot find model module. 'X' is not a registered model in the "
                                  "Transformers library', 'The Transformers implementation of X is not compatible with "
                                  "vLLM.' and 'X has no vLLM implementation and the Transformers implementation is not "
                                  "compatible with vLLM.'"),
    "_check_scheme_supported": ("quant_unsupported", "weight_loading",
                                "vLLM 0.5-0.33 compressed_tensors.py CompressedTensorsConfig._check_scheme_supported: "
                                "it raises only 'Quantization scheme is not supported for the current GPU. Min "
                                "capability: N. Current capability: M.'"),
}

# Readings no rule of rules.py makes: said only when no decisive line follows (fallback.supported: vLLM's own line
# says that something failed and which part, the cause is in another process's output), and the reading of an OOM's
# figures (classify: other processes hold the GPU).
SUPPORT_SOURCES: dict[str, str] = {
    "oom_other_process": "PyTorch 2.1+ CUDACachingAllocator's OOM message, which lists the GPU's processes ('Process "
                         "N has X GiB memory in use') and this one's ('Including non-PyTorch memory, this process has "
                         "Y GiB memory in use'): another holds half the GPU or more, and at least twice what this "
                         "process holds; or, when the OOM came as vLLM allocated the KV cache it had sized, more than "
                         "a tenth of the GPU (V0 sizes it without counting other processes)",
    "vllm_api": "the Python interpreter, when a program that drives vLLM (FastChat, OpenRLHF, verl, unsloth, Triton's "
                "vllm backend, LLaMA-Factory) calls it as another release spelled it: \"AttributeError: 'LLMEngine' "
                "object has no attribute 'model_executor'\" (V1's LLMEngine, 0.8+), \"TypeError: __init__() got an "
                "unexpected keyword argument 'limit_mm_per_prompt'\" from vLLM's EngineArgs",
    "library_signature": "the Python interpreter's binding errors ('f() takes 1 positional argument but 2 were "
                         "given', 'missing 1 required positional argument', 'got an unexpected keyword argument') on a "
                         "call from vLLM's own code: the callee is a library vLLM depends on (transformers, torch) at "
                         "another release than the one this vLLM was written for",
    "library_patch": "Python's unittest.mock (mock.py _patch.get_original, read at 3.11): 'AttributeError: <module "
                     "...> does not have the attribute 'x'' where vLLM's own code patches a library's internals while "
                     "it compiles (compilation/compiler_interface.py, cuda_graph.py, read at 0.9.2-0.34): a module's "
                     "or class's name missing is the library (torch) at another release than the one this vLLM was "
                     "written for; a function's (<function standalone_compile ...>) is Python 3.10's resolution of "
                     "vLLM's dotted patch target, which vLLM 0.20.2-0.34 avoid",
    "hub_stalled": "vLLM 0.4-0.33 entrypoints/openai/api_server.py signal_handler: 'KeyboardInterrupt: terminated' "
                   "(SIGTERM), its traceback inside a socket read (ssl.py, httpcore, urllib3) under a huggingface_hub "
                   "or transformers call: the start waited for the Hub until it was stopped",
    "multiple_values": "the Python interpreter's TypeError 'f() got multiple values for argument 'x'', read where the "
                       "start never got ready: a caller passes positionally an argument its callee's installed "
                       "release moved or renamed (transformers' processors' __init__ under vLLM 0.9's "
                       "Qwen2_5_VLProcessor and GLM-4.1V, vLLM's own get_attn_backend under a platform plugin written "
                       "for another vLLM); no such message comes from a settings or memory check",
    "package_missing": "Python's import system: 'ModuleNotFoundError: No module named X' raised in an installed "
                       "package's own import (under site-packages, a vLLM platform plugin's package such as "
                       "vllm_ascend/, or vLLM's own code), as the last error of a start that never got ready",
    "module_missing": "Python's import system: 'ModuleNotFoundError: No module named X' as the last line of a "
                      "start that never got ready, in a paste that keeps no traceback frame (not vLLM itself, not "
                      "transformers' remote-code modules)",
    "pybind_signature": "pybind11 (pybind11.h, its dispatcher's TypeError): 'f(): incompatible function arguments. "
                        "The following argument types are supported: ... Invoked with: ...' ('incompatible "
                        "constructor arguments' for __init__), read where the start never got ready: the Python "
                        "calling a compiled library (a platform's runtime, a vLLM fork's device API) is at another "
                        "release than the library",
    "vllm_c_undefined": "vLLM 0.4-0.33 _custom_ops.py's warning 'Failed to import from vllm._C with ImportError('..."
                        "_C.abi3.so: undefined symbol: ...')' (the extension was built for another torch) or "
                        "'libcudart.so.12: cannot open shared object file' (a CUDA build without its CUDA) or "
                        "'version `GLIBC_2.32' not found' (a wheel for a newer glibc), and "
                        "vllm-ascend's 'Failed to import vllm_ascend_C: ... undefined symbol', read where the start "
                        "failed and nothing decisive followed",
    "no_driver": "vLLM 0.10-0.33 platforms/__init__.py 'No platform detected, vLLM is running on "
                 "UnspecifiedPlatform' with the dynamic loader's 'libcuda.so.1: cannot open shared object file' (the "
                 "NVIDIA driver's library, present wherever a GPU is given to the process)",
    "usage_cut": "argparse (vllm serve's parser, the api_server modules' before it): the usage text it prints before "
                 "'PROG: error: ...' and exit status 2, where a paste stops inside it",
    "vllm_metadata": "vLLM 0.10-0.34 platforms/__init__.py: 'No platform detected, vLLM is running on "
                     "UnspecifiedPlatform' after vllm_version_matches_substr's 'The vLLM package was not found, so its "
                     "version could not be inspected. This may cause platform detection to fail.'",
    "config_check": "vLLM 0.4-0.33 settings checks: a ValueError raised in vllm/config.py (0.4-0.9), vllm/config/*.py "
                    "(0.10-0.33, re-raised by pydantic as '1 validation error for SchedulerConfig' and the like), "
                    "engine/arg_utils.py create_engine_config or a platform's checks (platforms/*.py), whose message "
                    "no rule knows; a ModelConfig or VllmConfig refusal only when it names one of vLLM's settings "
                    "('Value error, ... supports max_num_seqs 1 through 4'); or, with no frames, a paste's last "
                    "exception a ValueError naming one of vLLM's options ('Set --max_model_len to 32768 or lower')",
    "inspection_failed": "vLLM 0.6.4-0.33 model_executor/models/registry.py _try_inspect_model_cls: 'Error in "
                         "inspecting model architecture 'X'' (the registry's subprocess could not import the model "
                         "class), then 'Model architectures [...] failed to be inspected' (0.7+) or '... are not "
                         "supported for now' (before)",
}

# The waiting lines of a start that hangs (issue 24), read by diagnose/hang.py rather than by a rule of rules.py:
# a waiting line is a failure only when nothing follows it.
HANG_SOURCES: dict[str, str] = {
    "hang_dp_coordinator": "vLLM 0.32 v1/engine/core.py EngineCoreProc.__init__ (data parallel): 'Waiting for "
                           "READY message from DP Coordinator...' every 10 s until the coordinator answers",
    "hang_engine_handshake": "vLLM 0.32 v1/engine/utils.py wait_for_engine_startup (debug level): 'Waiting for N "
                             "local, M remote core engine proc(s) to start.' / '... to connect.'",
    "hang_ray_placement": "vLLM 0.32 v1/executor/ray_utils.py _wait_until_pg_ready: 'Waiting for creating a "
                          "placement group of specs for N seconds', with backoff",
    "hang_shm_broadcast": "vLLM 0.32 distributed/device_communicators/shm_broadcast.py LONG_WAIT_TIME_LOG_MSG: 'No "
                          "available shared memory broadcast block found in N seconds', every N s while a reader "
                          "or writer of the message queue is stuck",
    "hang_stops": "a log with no error and no exit that stops right after NCCL's set-up lines or vLLM's P2P check "
                  "(all_reduce_utils.py in 0.32), the steps that hang without a line; a paste cut short reads the same",
    "hang_guard": "the guard's own stall detector (guard.stall-timeout): no progress for the limit, the stage read "
                  "from py-spy's stacks of the launch's processes and its last lines",
}

# The processors transformers itself gives _get_num_multimodal_tokens, the method vLLM's Transformers backend counts a
# multimodal item's tokens with (read from transformers 4.55, 4.57 and 5.25; 4.52 gave it to none, 4.55 to 21, 4.57
# to 23): a processor of these that lacks it is a transformers older than the release that gave it the method,
# another one is a processor transformers never gave it (a model's own code, run with --trust-remote-code).
TRANSFORMERS_MM_TOKEN_PROCESSORS = frozenset({
    "Apertus1p5Processor", "AriaProcessor", "AyaVisionProcessor", "Blip2Processor", "ChameleonProcessor",
    "Cohere2VisionProcessor", "CohereCompassProcessor", "ColModernVBertProcessor", "ColPaliProcessor",
    "ColQwen2Processor", "Cosmos3EdgeProcessor", "DeepseekOcr2Processor", "DeepseekVLHybridProcessor",
    "DeepseekVLProcessor", "Dots3NoteProcessor", "EmbeddingGemma2Processor", "Emu3Processor",
    "Ernie4_5_VLMoeProcessor", "Exaone4_5_Processor", "Florence2Processor", "FuyuProcessor", "Gemma3Processor",
    "Gemma3nProcessor", "Gemma4Processor", "Gemma4UnifiedProcessor", "Glm46VProcessor", "Glm4vProcessor",
    "Glm5NextProcessor", "GotOcr2Processor", "Granite4VisionProcessor", "GraniteDoclingProcessor", "HYV4VLProcessor",
    "HunYuanVLProcessor", "HyperCLOVAXVisionV2Processor", "Idefics2Processor", "Idefics3Processor",
    "InklingProcessor", "InstructBlipProcessor", "InternVLProcessor", "Kimi_K25Processor", "Lfm2VlProcessor",
    "Lfm3VlProcessor", "LightOnOcrProcessor", "Llama4Processor", "LlavaNextProcessor", "LlavaNextVideoProcessor",
    "LlavaOnevisionProcessor", "LlavaProcessor", "MiniMaxM3VLProcessor", "Molmo2Processor", "MuseGlimmerProcessor",
    "MuseSparkProcessor", "NemotronH_Omni_Reasoning_V3Processor", "Ovis2Processor", "Ovis2_5Processor",
    "PaddleOCRVLProcessor", "PaliGemmaProcessor", "PerceptionLMProcessor", "Phi4MultimodalProcessor",
    "PixtralProcessor", "QianfanOCRProcessor", "Qwen2VLProcessor", "Qwen2_5OmniProcessor", "Qwen2_5_VLProcessor",
    "Qwen3OmniMoeProcessor", "Qwen3VLProcessor", "ShieldGemma2Processor", "SmolVLMProcessor", "Step3p7Processor",
    "UnlimitedOcrProcessor", "VideoLlama3Processor", "VideoLlavaProcessor"
})
