"""`explain` on blind10 (tests/data/real-logs/blind10), the tenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit b1e70c8 (25 of 38 right, two
confident errors; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: V1's wrapper quoting its worker's error, V0's worker naming the method that raised, vLLM's multimodal
options for a model it does not treat as multimodal, MiniCPM-V's versions, transformers' message cut at its start,
the NVIDIA container toolkit's CUDA requirement, a checkpoint missing weights, and compressed-tensors' schemes.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("prefix", "cls", "detail", "stage"), [
    ("b10-002", "version_mismatch", "python_package", "before_start"),  # "Worker failed with error 'cannot import"
    ("b10-004", "unsupported_architecture", None, "before_start"),  # MiniCPMV only supports versions 2.0-2.6
    ("b10-006", "unsupported_architecture", "not_multimodal", "before_start"),  # GLM-4.1V on a vLLM without it
    ("b10-026", "unsupported_architecture", "not_multimodal", "before_start"),  # Kimi-VL on vLLM 0.8.4
    # transformers' tail: "checkpoint is very new"
    ("b10-012", "unsupported_architecture", "transformers_model_type", "before_start"),
    ("b10-014", "version_mismatch", "driver", "before_start"),  # nvidia-container-cli: cuda>=12.9
    ("b10-028", "oom_profiling", None, "profiling"),  # "while processing method determine_num_available_blocks"
    ("b10-036", "model_access", "weights_missing", "weight_loading"),  # no lm_head.weight in the checkpoint
    ("b10-038", "quant_unsupported", None, "weight_loading"),  # "No compressed-tensors compatible scheme"
])
def test_what_blind10_taught(prefix: str, cls: str, detail: str | None, stage: str) -> None:
    d = classify(blind_log("blind10", prefix))
    assert (d.cls, d.detail, d.stage) == (cls, detail, stage)
    assert d.template


def test_the_worker_method_places_an_oom_only_by_its_own_name() -> None:
    line = ("(VllmWorkerProcess pid=214) ERROR 09-27 05:20:38 multiproc_worker_utils.py:233] Exception in worker "
            "VllmWorkerProcess while processing method {}: CUDA out of memory. Tried to allocate 19.63 GiB. GPU 3 "
            "has a total capacity of 79.15 GiB of which 17.73 GiB is free.\n")
    assert classify(line.format("determine_num_available_blocks")).cls == "oom_profiling"
    assert classify(line.format("load_model")).cls == "oom_loading"
    assert classify(line.format("execute_method")).cls == "gpu_oom"  # a method that says nothing of the stage


def test_a_cannot_import_line_counts_only_as_the_message_itself() -> None:
    # the wrapper's quote and a bare message line are read; a sentence that mentions the words is not
    assert classify("cannot import name 'cdiv' from 'vllm.utils' (/opt/vllm/vllm/utils/__init__.py)\n").cls == \
        "version_mismatch"
    assert classify("I read that it says cannot import name 'cdiv' from 'vllm.utils' somewhere\n").cls == "unknown"


def test_the_wrappers_quote_is_read_when_the_paste_cuts_it() -> None:
    cut = "RuntimeError: Worker failed with error 'cannot import name 'cdiv' from 'vllm.utils' (/opt/vllm/vllm/u\n"
    assert classify(cut).cls == "version_mismatch"


def test_direct_evidence_outranks_the_extension_warning() -> None:
    # vLLM warns that vllm._C does not load and goes on; a program's call into vLLM that fails says more
    text = ("WARNING 10-16 05:20:48 _custom_ops.py:19] Failed to import from vllm._C with ImportError('/x/"
            "_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n"
            "AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n")
    d = classify(text)
    assert (d.cls, d.detail) == ("version_mismatch", "vllm_api")


def test_a_warning_that_quotes_a_missing_module_attribute_decides_nothing() -> None:
    text = ("WARNING 01-01 00:00:00 [utils.py:1] optional kernels off: AttributeError: module 'triton' has no "
            "attribute 'x'\n")
    assert classify(text).cls == "unknown"
