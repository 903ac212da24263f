"""`explain` on blind173-176 (tests/data/real-logs), issue 26's sets after their one scoring.

blind173, failed starts quoted in the commit messages of twelve more programs that start vLLM (lighteval and LocalAI
gave all seven), scored once at 1e0eb72: 1 of 7. A commit message quotes an exception the way a person types it:
indented, and broken by hand wherever they liked (after a few words, before the name a colon introduces, at a
deeper indent). Six of the seven were rules' messages that wrapping alone hid. blind174, three excerpts of vLLM pull
requests' descriptions, each cut before its cause, scored once at eeebd58: 3 of 3 (`unknown`); blind175, three
excerpts of launchers' issue threads, likewise 3 of 3 at 69212ff. blind176, commit messages of vllm-metal, FlashInfer,
speculators and torchao, scored once at 2a33447: 6 of 11; its misses taught vLLM patching a torch internal the
installed torch lacks, two of vLLM's own settings checks, mlx-lm's unknown model type, and ld's -lcuda under a
worker's logging prefix.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.logread import continuation, read


@pytest.mark.parametrize(("name", "cls", "detail"), [
    # vLLM's KV message broken after its fifth word, then again at 70 columns
    ("b173-001", "kv_cache_too_small", None),
    # FlashInfer's JIT without a CUDA toolkit (read before the score)
    ("b173-002", "version_mismatch", "nvcc_missing"),
    # an undefined symbol of vLLM's _C, the symbol on the next line, both indented
    ("b173-003", "version_mismatch", "extension_abi"),
    # vLLM's CPU op missing from its extension, the attribute's name at a deeper indent
    ("b173-004", "version_mismatch", "op_missing"),
    # Inductor without a C++ compiler (torch/_inductor/exc.py InvalidCxxCompiler), under vLLM's CPU backend
    ("b173-005", "version_mismatch", "no_cxx_compiler"),
    # glibc older than a library the image ships, quoted indented
    ("b173-006", "version_mismatch", "glibc"),
    # flash-attn's extension against another torch, the symbol on the next line
    ("b173-007", "version_mismatch", "extension_abi"),
])
def test_blind173(name: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log("blind173", name))
    assert (d.cls, d.detail) == (cls, detail)


def test_the_kv_message_broken_by_hand_keeps_its_figures() -> None:
    d = classify(blind_log("blind173", "b173-001"))
    assert d.numbers == {"max_seq_len": 8192, "needed_gib": 1.5, "available_gib": 1.42}


@pytest.mark.parametrize("text", [
    # a traceback's code under a frame, and a short exception line followed by another record
    "  File \"/v/vllm/x.py\", line 3, in f\n    raise ValueError(\n",
    # under an unindented head, an indented line is code or a table's row, never the message's rest
    "ValueError: bad value for\n  return int(x)\n",
    # a colon before a line of several words introduces a record, not a name
    "  ImportError: cannot load:\n  see the log above for why\n",
    # the sentence ended
    "ValueError: The model is too big.\nwith the next thing\n",
])
def test_a_line_is_not_joined_to_what_is_no_rest_of_its_message(text: str) -> None:
    lines = read(text)
    assert continuation(lines, 0) is None


@pytest.mark.parametrize(("text", "cls"), [
    ("ValueError: To serve at least one request\nwith the model's max seq len (8192), 1.5 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (1.42 GiB).\n", "kv_cache_too_small"),
    # the same at an indent, and the rest at a deeper one
    ("  ValueError: To serve at least one request\n    with the model's max seq len (8192), 1.5 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (1.42 GiB).\n", "kv_cache_too_small"),
])
def test_an_exception_broken_by_hand_is_read_whole(text: str, cls: str) -> None:
    assert classify(text).cls == cls


# --- a review's cases: a container run is vLLM's only where it runs vLLM; a join only where it is one message --------

_KV = ("$ vllm serve Qwen/Qwen2-7B --max-model-len 32768\n"
       "INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.6.3\n"
       "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in "
       "KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
       "engine.\n")
_OOM = ("Traceback (most recent call last):\n  File \"/v/vllm/worker/model_runner.py\", line 1500, in capture_model\n"
        "    graph_runner.capture(**capture_inputs)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.2 GiB is free.\n")


def test_a_container_of_another_program_opens_no_start() -> None:
    # its mount names vllm; it runs nvidia-smi, and the start before keeps its failure
    log = _KV + ("$ docker run --rm --gpus all -v /home/me/vllm:/w nvidia/cuda:12.4.0-base-ubuntu22.04 nvidia-smi\n"
                 "docker: Error response from daemon: could not select device driver \"\" with capabilities: "
                 "[[gpu]].\n")
    d = classify(log)
    assert (d.cls, d.context) == ("kv_cache_too_small", {"max_model_len": 32768})


@pytest.mark.parametrize(("command", "settings"), [
    # an option's value that looks like vLLM's image is no image
    ("$ docker run -d --gpus all --ipc=host --name vllm-openai vllm/vllm-openai:latest --model M --max-model-len 4096 "
     "--gpu-memory-utilization 0.8", {"max_model_len": 4096, "gpu_memory_utilization": 0.8}),
    ("$ docker run --gpus all --name vllm-openai -p 8000:8000 ghcr.io/huggingface/text-generation-inference:2.0 "
     "--model-id M --port 9001 --max-num-seqs 4", {}),
    # an entrypoint of another program runs no vLLM; one that is vLLM's does
    ("$ docker run --gpus all --entrypoint python3 vllm/vllm-openai:latest /app/bench.py --port 9001", {}),
    ("$ docker run --entrypoint vllm vllm/vllm-openai:v0.6.0 serve M --max-model-len 4096", {"max_model_len": 4096}),
    ("$ docker run --entrypoint=python3 img:1 -m vllm.entrypoints.openai.api_server --port 8001", {"port": 8001}),
])
def test_a_container_runs_options_and_entrypoint_are_docker_s(command: str, settings: dict[str, object]) -> None:
    assert classify(command + "\n" + _OOM).context == settings


def test_a_container_run_continued_from_a_line_without_vllm_opens_a_start() -> None:
    log = _KV + ("$ docker run --gpus all --ipc=host \\\n    vllm/vllm-openai:v0.6.3 --model Qwen/Qwen2-7B "
                 "--max-model-len 4096\n" + "INFO 01-01 00:01:00 api_server.py:1] vLLM API server version 0.6.3\n"
                 + _OOM)
    d = classify(log)
    assert (d.cls, d.context) == ("oom_cudagraph", {"max_model_len": 4096})


@pytest.mark.parametrize("text", [
    "KeyError: 'get_pt_compile_only_mode'\ninc shutdown\n",  # blind170/b170-003: the program's next line
    "KeyError: 'qwen2_vl'\ntransformers                      4.44.2\n",  # a table's row
    "    OSError: [Errno 98] Address already in use\n      File \"/v/api_server.py\", line 504, in create_server\n",
    "  ValueError: bad\n    ValueError: another\n",
])
def test_no_join_after_an_ended_message_or_before_a_record_or_a_row(text: str) -> None:
    assert continuation(read(text), 0) is None


@pytest.mark.parametrize(("name", "cls", "detail"), [
    # vLLM's compile step patching torch._inductor.standalone_compile's FakeTensorMode by its dotted name, which
    # Python 3.10 resolves to the function of that name (a review's reading of vLLM's own comment)
    ("b176-002", "version_mismatch", "mock_resolution"),
    ("b176-003", "usage_error", "mamba_align"),  # pydantic's "Assertion failed, ..." under VllmConfig, no traceback
    ("b176-007", "usage_error", "ray_platform"),  # vllm-metal on a Mac, --distributed-executor-backend ray
    ("b176-008", "unsupported_architecture", "mlx_model_type"),  # mlx-lm older than the model
    ("b176-010", "version_mismatch", "triton_libcuda"),  # FlashInfer's JIT link, a worker's copy of the output
    # an ImportError broken before the module it names, in quotes on the next line
    ("b177-006", "version_mismatch", "python_package"),
    # vLLM's Mistral-format reader, under ModelConfig's pydantic check (label in dispute: usage_error)
    ("b177-007", "quant_unsupported", "mistral_quant"),
])
def test_blind176_and_177(name: str, cls: str, detail: str) -> None:
    d = classify(blind_log("blind" + name[1:4], name))
    assert (d.cls, d.detail) == (cls, detail)


_PATCH_TAIL = ("  File \"/usr/lib/python3.12/unittest/mock.py\", line 1420, in get_original\n"
               "    raise AttributeError(\nAttributeError: <class 'torch._inductor.codecache.FxGraphCache'> does not "
               "have the attribute 'y'\n")
_PATCH_HEAD = ("Traceback (most recent call last):\n  File \"/p/vllm/compilation/compiler_interface.py\", line 383, in "
               "compile\n    with ctx:\n")
_MOCK_ENTER = ("  File \"/usr/lib/python3.12/unittest/mock.py\", line 1447, in __enter__\n"
               "    original, local = self.get_original()\n")


@pytest.mark.parametrize("between", [
    _MOCK_ENTER,
    # vLLM enters most of its patches through an ExitStack (a review's case)
    "  File \"/usr/lib/python3.12/contextlib.py\", line 526, in enter_context\n    result = _enter(cm)\n" + _MOCK_ENTER,
])
def test_a_patch_target_missing_is_vllms_only_under_vllms_frame(between: str) -> None:
    d = classify(_PATCH_HEAD + between + _PATCH_TAIL)
    assert (d.cls, d.detail) == ("version_mismatch", "python_package")
    assert "patched in compile (/p/vllm/compilation/compiler_interface.py)" in d.evidence
    own = _PATCH_HEAD.replace("/p/vllm/compilation/compiler_interface.py", "/home/me/tests/test_model.py")
    assert classify(own + between + _PATCH_TAIL).cls == "unknown"  # a user's own test patching something


def test_an_mlx_refusal_under_vllms_logging_prefix_and_a_long_mistral_entry() -> None:
    p = "(EngineCore_DP0 pid=9) ERROR 04-05 12:00:00 [core.py:1099] "
    assert classify(f"{p}Traceback (most recent call last):\n{p}ValueError: Model type laguna not supported.\n"
                    ).detail == "mlx_model_type"
    entry = "{'ignore': [" + ", ".join(f"'model.layers.{i}.mlp.gate'" for i in range(150)) + "]}"
    assert classify(f"ValueError: Found unknown quantization='{entry}' in config\n").detail == "mistral_quant"


def test_ray_on_vllm_0_10s_unformatted_refusal_and_mlx_words_elsewhere() -> None:
    assert classify("RuntimeError: ('current platform %s does not support ray.', 'cpu')\n").detail == "ray_platform"
    # the words inside another message are not mlx-lm's refusal
    assert classify("ValueError: Model type foo not supported. Choose from ['a']\n").detail != "mlx_model_type"


def test_a_quote_is_joined_only_after_a_word_that_introduces_it() -> None:
    assert continuation(read("ImportError: cannot import name 'X' from\n'vllm.y'\n"), 0) is not None
    assert continuation(read("ValueError: the model said no\n'other' is a new record\n"), 0) is None
