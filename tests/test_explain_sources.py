"""Issue 26, item 2: start-up raise sites read from vLLM's and PyTorch's source, each message as its source writes
it (the f-string filled in as a user's paste shows it), with the reading, the ladder's stop and the advice.

The wordings were checked in the source files diagnose/catalogue.py cites; the filled-in forms are those public
pastes quote (the hard-wrapped multimodal budget is a user's note of vLLM 0.20, quoted as wrapped there).
"""

from __future__ import annotations

import pytest

from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.knowledge import ADVICE
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step

HEAD = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n"


@pytest.mark.parametrize(("text", "cls", "detail", "numbers"), [
    ("ValueError: Total number of hidden layers (61) must be divisible by pipeline parallel size (4).",
     "tp_indivisible", "pp_layers", {"layers": 61, "pp_size": 4}),
    ("ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (4608). This effectively limits the "
     "maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
     "max_num_batched_tokens or decrease max_model_len.", "usage_error", "batched_tokens",
     {"max_num_batched_tokens": 4096, "max_model_len": 4608}),
    ("ValueError: max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256).", "usage_error",
     "batched_tokens", {"max_num_batched_tokens": 128, "max_num_seqs": 256}),
    # hard-wrapped at the reporter's width, the number of the second half on the next line
    ("ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496)\nis larger than max_num_batched_tokens "
     "(2048). Please increase\nmax_num_batched_tokens.", "usage_error", "mm_budget", {"max_tokens_per_mm_item": 2496}),
    ("TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser", "usage_error", "tool_parser", {}),
    ("KeyError: 'invalid tool call parser: qwen3_xml (chose from { hermes,llama3_json,mistral })'", "usage_error",
     "tool_parser", {}),
    ("ValueError: GPU memory utilization must be less than 1.0. Got 1.5.", "usage_error", None,
     {"gpu_memory_utilization": 1.5}),
    ("ValueError: Unknown quantization method: mxfp4. Must be one of ['aqlm', 'awq', 'deepspeedfp', 'fp8'].",
     "quant_unsupported", "unknown_method", {}),
    ("RuntimeError: No CUDA GPUs are available", "too_few_gpus", "no_gpu", {}),
    # Ray refusing a node of another Ray or Python (ray/_private/utils.py check_version_info)
    ("RuntimeError: Version mismatch: The cluster was started with:\n    Ray: 2.40.0\n    Python: 3.10.12\nThis "
     "process on node 10.0.0.2 was started with:\n    Ray: 2.41.0\n    Python: 3.10.12\n", "version_mismatch", None,
     {}),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non "
     "supported HW", "version_mismatch", "driver", {}),
    ("ImportError: cannot import name 'Qwen2_5_VLForConditionalGeneration' from 'transformers' "
     "(/usr/local/lib/python3.10/site-packages/transformers/__init__.py)", "version_mismatch", "python_package", {}),
    ("ModuleNotFoundError: No module named 'transformers.models.qwen3_moe'", "version_mismatch", "python_package", {}),
    ("ValueError: GGUF model with architecture qwen3moe is not supported yet.", "unsupported_architecture", None, {}),
    ("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the "
     "`SupportsPP` interface.", "usage_error", "pp_unsupported", {}),
    ("ValueError: max_lora_rank (100) must be one of (1, 8, 16, 32, 64, 128, 256, 320, 512).", "usage_error",
     "lora_rank", {"max_lora_rank": 100}),
    ("ValueError: moe_wna16 quantization is currently not supported in ROCm.", "quant_unsupported", "platform", {}),
    ("huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
     "https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main", "network", "hub_refused", {}),
    ("requests.exceptions.ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
     "Read timed out. (read timeout=10)\"), '(Request ID: 5e3f)')", "network", "hub_refused", {}),
    ("requests.exceptions.HTTPError: 504 Server Error: Gateway Time-out for url: "
     "https://huggingface.co/api/models/Qwen/Qwen3-8B", "network", "hub_refused", {}),
    # huggingface_hub 1.x raises httpx's wording (httpx _models.py Response.raise_for_status)
    ("huggingface_hub.errors.HfHubHTTPError: Server error '503 Service Unavailable' for url "
     "'https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main'", "network", "hub_refused", {}),
    ("huggingface_hub.errors.HfHubHTTPError: Client error '401 Unauthorized' for url "
     "'https://huggingface.co/api/models/meta-llama/Llama-3.1-8B/revision/main'", "model_access", None, {}),
    ("huggingface_hub.errors.EntryNotFoundError: Client error '404 Not Found' for url "
     "'https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json'", "model_access", "config_missing", {}),
    ("ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 9.0 (e.g H100)",
     "quant_unsupported", None, {"min_capability": 9.0}),
    ("RuntimeError: CUDA error: invalid device ordinal", "too_few_gpus", None, {}),
    ("torch.AcceleratorError: CUDA error: invalid device ordinal", "too_few_gpus", None, {}),
    ("ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, "
     "'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192, 'rope_type': "
     "'llama3'}", "version_mismatch", "python_package", {}),
    ("ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported.", "version_mismatch",
     "python_package", {}),
    ("RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.", "version_mismatch",
     "driver", {}),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 803: system has unsupported display driver / cuda "
     "driver combination", "version_mismatch", "driver", {}),
    ("RuntimeError: operator torchvision::nms does not exist", "version_mismatch", "python_package", {}),
    ("AttributeError: module 'torch.library' has no attribute 'custom_op'", "version_mismatch", "python_package", {}),
    ("OSError: Can't load the configuration of '/models/qwen3-8b'. If you were trying to load it from "
     "'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make "
     "sure '/models/qwen3-8b' is the correct path to a directory containing a config.json file", "model_access",
     "config_missing", {}),
    ("OSError: Incorrect path_or_model_id: '/kaggle/input/llama-3-8b'. Please provide either the path to a local "
     "folder or the repo_id of a model on the Hub.", "model_access", None, {}),
    ("OSError: Can't load tokenizer for 'meta-llama/Llama-3.1-8B'. If you were trying to load it from "
     "'https://huggingface.co/models', make sure you don't have a local directory with the same name.",
     "model_access", None, {}),
    ("ValueError: No supported config format found in meta-llama/Llama-3.3-70B-Instruct", "model_access", None, {}),
    ("ValueError: InternVLForConditionalGeneration has no vLLM implementation and the Transformers implementation is "
     "not compatible with vLLM.", "unsupported_architecture", None, {}),
    ("AttributeError: module 'transformers' has no attribute 'Qwen3VLForConditionalGeneration'", "version_mismatch",
     "python_package", {}),
])

def test_a_raise_site_is_read_with_its_figures(text: str, cls: str, detail: str | None,
                                               numbers: dict[str, int | float]) -> None:
    d = classify(HEAD + text + "\n")
    assert (d.cls, d.detail, d.stage) == (cls, detail, "before_start")
    assert d.confidence == "high" and d.template
    assert {k: d.numbers.get(k) for k in numbers} == numbers
    # the ladder stops with the reason of the reading, and the advice is the detail's own
    step = next_step(d, Settings(max_model_len=4608))
    assert isinstance(step, Stop)
    if detail is not None and detail in NOT_RELAXABLE_DETAIL:
        assert step.reason == NOT_RELAXABLE_DETAIL[detail]
        assert advice_for(d) is not ADVICE[cls]


@pytest.mark.parametrize(("text", "numbers"), [
    ("ValueError: The input size is not aligned with the quantized weight shape. This can be caused by too large "
     "tensor parallel size.", {}),
    ("ValueError: Weight output_size_per_partition = 32 is not divisible by min_thread_n = 64. Consider reducing "
     "tensor_parallel_size or running with --quantization gptq.", {"size": 32, "min_thread": 64}),
])
def test_a_quantized_shape_that_tensor_parallel_splits_unevenly(text: str, numbers: dict[str, int]) -> None:
    # raised while the layers are built, in the worker: the weight-loading stage
    d = classify(HEAD + text + "\n")
    assert (d.cls, d.detail, d.stage) == ("tp_indivisible", "quant_group", "weight_loading")
    assert {k: d.numbers.get(k) for k in numbers} == numbers

@pytest.mark.parametrize("text", [
    # OOMs of other accelerators' allocators: PyTorch's XPU allocator and torch_npu word them as CUDA's does
    "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 192.00 MiB. GPU 3 has a total capacity of 31.89 "
    "GiB of which 13.22 GiB is free.",
    "RuntimeError: NPU out of memory. Tried to allocate 260.00 MiB (NPU 0; 28.50 GiB total capacity; 10.24 GiB "
    "already allocated; 10.24 GiB current active; 149.57 MiB free; 10.28 GiB reserved in total by PyTorch)",
])
def test_other_accelerators_ooms_are_ooms(text: str) -> None:
    d = classify(HEAD + text + "\n")
    assert d.cls == "gpu_oom" and d.numbers.get("tried_to_allocate_gib")


@pytest.mark.parametrize("text", [
    # a circular import is a bug, not a version; another package's missing name says nothing of vLLM's pins
    "ImportError: cannot import name 'LLM' from partially initialized module 'vllm' (most likely due to a circular "
    "import)",
    "ImportError: cannot import name 'foo' from 'mypackage' (/srv/app/mypackage/__init__.py)",
    "AttributeError: module 'mypackage.torch_utils' has no attribute 'helper'",
    # later transformers warn with the same words and dequantize to bf16: the start goes on
    "[transformers] FP8 quantized models is only supported on GPUs with compute capability >= 8.9 (e.g 4090/H100), "
    "actual = `8.0`. We will default to dequantizing the model to bf16.",
    # httpx's wording for another host says nothing of the Hub
    "httpx.HTTPStatusError: Client error '401 Unauthorized' for url 'https://api.example.com/v1/models'",
    # constructed: the words on a line that is no error (a debug line of a platform probe that goes on)
    "DEBUG 05-01 10:00:00 [__init__.py:40] No CUDA GPUs are available",
    # the parser options in vLLM's own start-up line (0.10+ prints the non-default arguments)
    "INFO 05-01 10:00:00 [utils.py:326] non-default args: {'enable_auto_tool_choice': True, 'tool_call_parser': "
    "'hermes'}",
])
def test_near_misses_stay_unknown(text: str) -> None:
    assert classify(HEAD + text + "\n").cls == "unknown"


READY = "INFO 05-01 10:00:05 [launcher.py:37] Application startup complete.\n"


@pytest.mark.parametrize("text", [
    # huggingface_hub's http_backoff and a resumed download log the error and retry: they decide nothing
    "WARNING 05-01 10:00:00 [file_download.py:1] '(ReadTimeoutError(\"HTTPSConnectionPool(host='cdn-lfs.hf.co', "
    "port=443): Read timed out. (read timeout=10)\"), '(Request ID: 1)')' thrown while requesting GET "
    "https://huggingface.co/x/resolve/main/model.safetensors\nWARNING 05-01 10:00:00 [_http.py:1] Retrying in 1s "
    "[Retry 1/5].",
    "WARNING 05-01 10:00:00 [file_download.py:1] Error while downloading from https://cdn-lfs.hf.co/x: "
    "HTTPSConnectionPool(host='cdn-lfs.hf.co', port=443): Read timed out.\nTrying to resume download...",
    # vLLM's own file-list retry (transformers_utils, 0.10+)
    "WARNING 05-01 10:00:00 [config.py:1] Error retrieving file list: 429 Client Error: Too Many Requests for url: "
    "https://huggingface.co/api/models/Qwen/Qwen3-8B, retrying 1 of 2",
])
def test_a_retried_hub_error_gives_way_to_the_failure_after_it(text: str) -> None:
    kv = ("ERROR 05-01 10:01:00 [core.py:1] ValueError: No available memory for the cache blocks. Try increasing "
          "`gpu_memory_utilization` when initializing the engine.")
    assert classify(HEAD + text + "\n" + kv + "\n").cls == "no_kv_memory"
    assert classify(HEAD + text + "\n" + READY).cls == "unknown"


@pytest.mark.parametrize("text", [
    # Ray's autoscaler while the placement group pends: a node that joins later makes it schedulable
    "(autoscaler +1m2s) Error: No available node types can fulfill resource request {'GPU': 1.0, 'CPU': 1.0}. Add "
    "suitable node types to this cluster to resolve this issue.",
    # a user's own script's argparse error, quoted in prose
    "I ran bench.py first and got bench.py: error: unrecognized arguments: --foo. Then I fixed it.",
    # a warning that quotes the error and goes on on another device
    "WARNING 05-01 10:00:00 [x.py:1] Failed to query: RuntimeError('No CUDA GPUs are available'), using CPU",
])
def test_lines_that_a_ready_start_shows_decide_nothing(text: str) -> None:
    assert classify(HEAD + text + "\n" + READY).cls == "unknown"


@pytest.mark.parametrize("text", [
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
    "driver from http://www.nvidia.com/Download/index.aspx",
    "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
])
def test_a_driver_torch_cannot_use_is_a_hint_not_a_class(text: str) -> None:
    # none installed, one that does not match its libraries, or a container without the GPU runtime
    d = classify(HEAD + text + "\n")
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "version_mismatch")


def test_the_tokenizer_class_line_decides_over_vllms_trust_remote_code_advice() -> None:
    # vLLM 0.4-0.33 get_tokenizer re-raises transformers' "Tokenizer class X does not exist" as advice to trust
    # remote code; for transformers 5's TokenizersBackend the class line under it says what is wrong
    wrapper = ("RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available "
               "in the HuggingFace transformers library, consider setting `trust_remote_code=True` in LLM or using "
               "the `--trust-remote-code` flag in the CLI.")
    assert classify(HEAD + wrapper + "\n").cls == "remote_code_required"
    inner = "ValueError: Tokenizer class TokenizersBackend does not exist or is not currently imported.\n"
    d = classify(HEAD + inner + "\nThe above exception was the direct cause of the following exception:\n\n"
                 + wrapper + "\n")
    assert (d.cls, d.detail) == ("version_mismatch", "python_package")


def test_v0s_engine_process_wrapper_is_not_the_root_cause() -> None:
    # vLLM 0.6-0.9 api_server.py build_async_engine_client_from_engine_args, after the MQLLMEngine process died;
    # the API server's traceback can reach the terminal before the engine process's own stderr does
    text = (HEAD + "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/openai/api_server.py", line 230, in '
            "build_async_engine_client_from_engine_args\n    raise RuntimeError(\n"
            "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n"
            "Process SpawnProcess-1:\nTraceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/multiprocessing/engine.py", line 390, in '
            "run_mp_engine\n    raise e\nValueError: something only this model says\n")
    d = classify(text)
    assert d.cls == "unknown" and d.evidence[0] == "ValueError: something only this model says"


@pytest.mark.parametrize(("text", "detail"), [
    ("RuntimeError: Cannot find any model weights with `/mnt/models`", "no_weights"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", "weights_unreadable"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
     "weights_unreadable"),
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
     "weights_unreadable"),
])
def test_weights_that_are_missing_or_not_whole(text: str, detail: str) -> None:
    d = classify(HEAD + "INFO 05-01 10:00:01 [model_runner.py:1] Starting to load model /mnt/models...\n" + text + "\n")
    assert (d.cls, d.detail, d.stage, d.confidence) == ("model_access", detail, "weight_loading", "high")
    step = next_step(d, Settings(max_model_len=4096))
    assert isinstance(step, Stop) and step.reason == NOT_RELAXABLE_DETAIL[detail]
