"""`explain` on blind32 (tests/data/real-logs/blind32), the thirty-second blind set of issue 26, after its one scoring.

Collected outside the vllm-project organisation by a helper that never read the classifier, and scored once, whole,
at commit 50db3a4 (4 of 11 right, no confident error; README.md there). What its misses taught: vLLM's check that
the shards a checkpoint's index names are there, the CUDA runtime's "CUDA error: out of memory" as V1's wrapper
quotes it and as the sleep-mode allocator prints it, and torch's custom-op schema refusing an op of vLLM's.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import SHARDS_MISSING
from vllm_guard.diagnose.details_versions import TORCH_SCHEMA
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_shards_the_index_names_and_the_folder_lacks() -> None:
    # "FileNotFoundError: Weight files referenced in index but missing: {'/root/.cache/huggingface/qwen3.8-27b-fp8/
    # layers-22.safetensors'}" (vLLM weight_utils.py filter_duplicate_safetensors_files)
    d = classify(blind_log("blind32", "b32-001"))
    assert (d.cls, d.detail, d.stage) == ("model_access", "shards_missing", "weight_loading")
    assert advice_for(d) is SHARDS_MISSING and isinstance(next_step(d, Settings()), Stop)


@pytest.mark.parametrize("prefix", ["b32-002", "b32-009"])
def test_the_cuda_runtimes_out_of_memory_is_an_oom(prefix: str) -> None:
    # b32-002: "RuntimeError: Worker failed with error 'CUDA error: out of memory" (the quote read alone);
    # b32-009: "Runtime Error: Cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp: 62" (typed by hand)
    d = classify(blind_log("blind32", prefix))
    assert (d.cls, d.stage) == ("gpu_oom", "unknown")
    assert d.template == SOURCES["cuda_runtime_oom"]  # not the caching allocator's message (found by a review)


def test_the_evidence_is_the_wrappers_own_line() -> None:
    # found by a review: the quote is read as an error, and shown as vLLM wrote it
    line = ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [multiproc_executor.py:1] Worker failed with error 'CUDA "
            "error: out of memory', please check the stack trace above for the root cause")
    d = classify(line + "\n")
    assert d.cls == "gpu_oom" and d.evidence[0].endswith("please check the stack trace above for the root cause")


KV_TOO_SMALL = ("ERROR 07-05 15:50:00 [core.py:1] ValueError: To serve at least one request with the models's max "
                "seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory "
                "(2.00 GiB). Based on the available memory, the estimated maximum model length is 16384.\n")
# Inductor's autotuning logs a choice that failed and goes on (torch/_inductor/select_algorithm.py: "Runtime error
# during autotuning: \n%s. \nIgnoring this choice."): the runtime's words alone on their line
AUTOTUNE = ("[rank0]:E0705 15:48:23.150000 434379 torch/_inductor/select_algorithm.py:2100] [8/6] Runtime error during "
            "autotuning: \nCUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some "
            "other API call, so the stacktrace below might be incorrect.\n. \nIgnoring this choice.\n")


def test_the_runtimes_words_on_a_line_that_is_no_error_decide_nothing() -> None:
    # found by a review: the autotuner's dropped choice must not hide the KV message after it, nor fail a ready start
    loading = "INFO 07-05 15:41:00 [gpu_model_runner.py:1] Starting to load model /m...\n"
    assert classify(loading + AUTOTUNE + KV_TOO_SMALL).cls == "kv_cache_too_small"
    assert classify(AUTOTUNE + "INFO:     Application startup complete.\n").cls == "unknown"
    warned = "WARNING 05-01 10:00:01 [custom_all_reduce.py:1] Custom allreduce disabled: CUDA error: out of memory\n"
    assert classify(warned + "INFO:     Application startup complete.\n").cls == "unknown"
    assert classify("INFO Loading weights for acme/cuda-error-out-of-memory-7b\n").cls == "unknown"


def test_torch_refusing_the_schema_of_an_op_of_vllms() -> None:
    # ROCm's vLLM fork under torch 2.6: "ValueError: infer_schema(func): Parameter block_shape has unsupported type
    # typing.Optional[list[int]]. The valid types are: ..."
    d = classify(blind_log("blind32", "b32-007"))
    assert (d.cls, d.detail) == ("version_mismatch", "torch_schema")
    assert advice_for(d) is TORCH_SCHEMA and isinstance(next_step(d, Settings()), Stop)


def test_what_blind32_read_right_at_its_score() -> None:
    want = {"b32-003": "remote_code_required", "b32-005": "unknown", "b32-006": "unknown",
            "b32-011": "version_mismatch"}
    assert {p: classify(blind_log("blind32", p)).cls for p in want} == want
