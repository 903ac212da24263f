"""`explain` on blind122 and blind123 (tests/data/real-logs/blind122, blind123), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier: blind122 from serverless and rented-GPU platforms, scored once at
bf09e92 (17 of 17, 16 labelled `unknown`), blind123 from multimodal models' starts, at fa143fd (18 of 20, one
confident error: transformers' 'does not recognize this architecture' for glm4v_moe, read unsupported_architecture as
earlier sets' same words are, labelled version_mismatch by this collector). Its other miss: GNU ld's
"cannot find -lcuda" as Triton builds its CUDA helper.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_versions import TRITON_LIBCUDA


def test_triton_linking_its_helper_without_libcuda_so() -> None:
    # "/usr/bin/ld: cannot find -lcuda" then "collect2: error: ld returned 1 exit status", after the encoder cache's
    # profiling line (Qwen2.5-VL, vLLM 0.9.0.1)
    d = classify(blind_log("blind123", "b123-001"))
    assert (d.cls, d.detail) == ("version_mismatch", "triton_libcuda")
    assert advice_for(d) is TRITON_LIBCUDA
    assert any("TRITON_LIBCUDA_PATH" in h for h in TRITON_LIBCUDA.helps)
    # newer binutils add the reason; a start that got ready (a later compile's warning) is not this failure
    assert classify("/usr/bin/ld: cannot find -lcuda: No such file or directory\n").detail == "triton_libcuda"
    ready = ("(APIServer pid=1) INFO:     Application startup complete.\n/usr/bin/ld: cannot find -lcuda\n")
    assert classify(ready).cls == "unknown"


def test_what_blind122_and_blind123_read_right_at_their_score() -> None:
    assert classify(blind_log("blind122", "b122-001")).cls == "kv_cache_too_small"
    want = {"b123-006": "version_mismatch", "b123-017": "tp_indivisible", "b123-020": "usage_error"}
    assert {p: classify(blind_log("blind123", p)).cls for p in want} == want
