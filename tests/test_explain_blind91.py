"""`explain` on blind91 (11 of 15 at bbb80d7, found through the kernel and communication libraries vLLM loads) and
blind92 (4 of 10 at bbb80d7, through the libraries that read the model and its tokenizer or build the server's front
end), each scored once (README.md in each). What their misses taught, each from the source that writes the message:
an import of a module not installed, with vLLM's own frames or with none; openai-harmony's vocabulary download;
NVSHMEM without a transport; vLLM's failed import of triton_kernels where nothing follows it; a parser the managers do
not have; transformers' config that is not JSON, its unreadable vocabulary, and a remote-code file's missing
packages."""

from __future__ import annotations

import pytest

from tests.conftest import assert_reads_and_stops, blind_log, skipped_plugin_chain
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail", "helps"), [
    # the line alone: aiter's JIT module the build did not make; nvshmem under Dynamo's vLLM container
    ("blind91", "b91-006", "version_mismatch", "module_missing", "pip show"),
    ("blind91", "b91-015", "version_mismatch", "module_missing", "pip show"),
    # vLLM's own source tree importing modelscope because VLLM_USE_MODELSCOPE=True
    ("blind92", "b92-002", "version_mismatch", "package_missing", "install the missing module"),
    ("blind91", "b91-011", "version_mismatch", "triton_kernels", "triton_kernels"),
    ("blind91", "b91-012", "network", "nvshmem_transport", "NVSHMEM_DEBUG=INFO"),
    ("blind92", "b92-001", "network", "harmony_vocab", "TIKTOKEN_ENCODINGS_BASE"),
    ("blind92", "b92-005", "usage_error", "tool_parser", "--reasoning-parser-plugin"),
    ("blind92", "b92-007", "model_access", "config_not_json", ".gguf"),
    ("blind92", "b92-008", "model_access", "vocab_unreadable", "tokenizer files"),
    ("blind92", "b92-009", "version_mismatch", "remote_code_packages", "pip install"),
])
def test_what_the_misses_read_now(folder: str, prefix: str, cls: str, detail: str, helps: str) -> None:
    assert_reads_and_stops(blind_log(folder, prefix), cls, detail, helps)


def test_a_bare_missing_module_that_the_start_went_past_is_not_read() -> None:
    # the import failed, and the start went on to load weights: not what ended it
    text = ("ModuleNotFoundError: No module named 'flash_attn'\n"
            "INFO 03-02 10:00:01 [default_loader.py:1] Loading weights took 3.2 seconds\n")
    assert classify(text).detail != "module_missing"


def test_a_missing_module_with_a_users_own_frames_is_not_read() -> None:
    # a script of the user's importing what it lacks: its frames show it is not a package's import
    text = ('Traceback (most recent call last):\n  File "/home/me/app/serve.py", line 3, in <module>\n'
            "    import cosyvoice.vllm\nModuleNotFoundError: No module named 'cosyvoice.vllm'\n")
    assert classify(text).cls == "unknown"


def test_the_triton_kernels_line_that_the_start_went_past_is_not_read() -> None:
    # blind7/b7-005: vLLM logs the failed import and goes on to its banner (the paste cut after it)
    assert classify(blind_log("blind7", "b7-005")).cls == "unknown"


@pytest.mark.parametrize("line", [
    "KeyError: \"Reasoning parser 'telechat' not found. Available parsers: deepseek_r1, glm45, qwen3\"",
    "KeyError: \"Tool parser 'my_parser' not found.\"",
])
def test_a_parser_the_managers_do_not_have(line: str) -> None:
    assert classify(line).detail == "tool_parser"


def test_nvshmem_without_a_transport_yields_to_a_decisive_error() -> None:
    text = ("/src/host/init/init.cu:1034: non-zero status: 28 nvshmem detect topo failed\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.10 GiB of which 1.2 GiB is free.\n")
    assert classify(text).cls != "network"


@pytest.mark.parametrize(("folder", "prefix"), [("blind91", p) for p in (
    "b91-001", "b91-002", "b91-003", "b91-004", "b91-005", "b91-007", "b91-008", "b91-009", "b91-010", "b91-013",
    "b91-014")])
def test_what_blind91_labelled_unknown_still_reads_so(folder: str, prefix: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == "unknown"


def test_a_missing_module_chained_in_a_skipped_plugins_traceback_ends_nothing() -> None:
    # vLLM logs a plugin it failed to load and goes on; the plugin's own `raise ... from e` chains a second traceback
    # whose last frame is an installed package: neither is the start's failure (the paste ends there, no hang read)
    text = skipped_plugin_chain('File "/usr/lib/python3.12/site-packages/foo_plugin/loader.py", line 9, in load',
                                "import timm", "ModuleNotFoundError: No module named 'timm'")
    assert classify(text).detail not in ("package_missing", "module_missing")
