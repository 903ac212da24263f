"""`explain` on blind11 (tests/data/real-logs/blind11), the eleventh blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 2939172 (27 of 37 right, no
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: vLLM's extension warning for a CUDA library the build lacks and vllm-ascend's for an undefined CANN
symbol, Ascend's runtime refusing a device index, a program's CLI without the vllm-serve command, and vLLM's V0
KV message cut before its token count.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("name", "prefix", "cls", "detail", "confidence"), [
    ("blind11", "b11-004", "version_mismatch", "extension_abi", "medium"),  # libcudart.so.12 on a ROCm machine
    ("blind11", "b11-021", "version_mismatch", "extension_abi", "medium"),  # vllm_ascend_C: undefined CANN symbol
    ("blind11", "b11-023", "too_few_gpus", None, "high"),  # rtSetDevice: device id error (NPU 1 not visible)
    ("blind11", "b11-020", "version_mismatch", "vllm_api", "high"),  # TRL CLI: invalid choice 'vllm-serve'
    ("blind9", "b9-007", "version_mismatch", "vllm_api", "high"),  # the same, another project's instructions
    ("blind11", "b11-037", "kv_cache_too_small", None, "high"),  # cut after "stored in KV cache ("
])
def test_what_blind11_taught(name: str, prefix: str, cls: str, detail: str | None, confidence: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == (cls, detail, confidence)
    assert d.template


def test_a_kv_message_without_its_token_count_keeps_the_length_and_stops_honestly() -> None:
    d = classify(blind_log("blind11", "b11-037"))
    assert d.numbers.get("max_seq_len") == 32768 and "kv_tokens" not in d.numbers
    step = next_step(d, Settings(max_model_len=32768))
    assert isinstance(step, Stop) or step.param is not None


def test_the_drivers_own_library_missing_is_no_gpu_not_a_build() -> None:
    # libcuda.so.1 is the driver's (no GPU given to the process); libcudart is the build's own CUDA
    head = "INFO 02-10 02:49:17 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform\n"
    warn = ("WARNING 02-10 02:49:18 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('{}: cannot "
            "open shared object file: No such file or directory')\n")
    assert classify(head + warn.format("libcuda.so.1")).cls == "too_few_gpus"
    assert classify(head + warn.format("libcudart.so.12")).cls == "version_mismatch"
