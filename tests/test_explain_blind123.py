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
from vllm_guard.diagnose.details_build import TRITON_LIBCUDA


def test_triton_linking_its_helper_without_libcuda_so() -> None:
    # "/usr/bin/ld: cannot find -lcuda" then "collect2: error: ld returned 1 exit status", after the encoder cache's
    # profiling line (Qwen2.5-VL, vLLM 0.9.0.1)
    d = classify(blind_log("blind123", "b123-001"))
    assert (d.cls, d.detail) == ("version_mismatch", "triton_libcuda")
    assert advice_for(d) is TRITON_LIBCUDA
    # -lcuda finds only libcuda.so: the link beside libcuda.so.1 first (Triton's own advice; a review's finding: the
    # advice had named TRITON_LIBCUDA_PATH at the folder that lacks it)
    assert "libcuda.so link" in TRITON_LIBCUDA.helps[0]
    # newer binutils add the reason; a start that got ready (a later compile's warning) is not this failure
    assert classify("/usr/bin/ld: cannot find -lcuda: No such file or directory\n").detail == "triton_libcuda"
    ready = ("(APIServer pid=1) INFO:     Application startup complete.\n/usr/bin/ld: cannot find -lcuda\n")
    assert classify(ready).cls == "unknown"


def test_what_blind122_and_blind123_read_right_at_their_score() -> None:
    assert classify(blind_log("blind122", "b122-001")).cls == "kv_cache_too_small"
    want = {"b123-006": "version_mismatch", "b123-017": "tp_indivisible", "b123-020": "usage_error"}
    assert {p: classify(blind_log("blind123", p)).cls for p in want} == want


def test_an_ld_failure_the_start_went_on_past_is_not_its_failure() -> None:
    # a review's case: the helper's link failed once, the start went on to size the KV cache, then OOMed in capture
    text = ("INFO 06-06 15:54:38 [gpu_model_runner.py:1549] Model loading took 15.6271 GiB and 18.748936 seconds\n"
            "/usr/bin/ld: cannot find -lcuda\ncollect2: error: ld returned 1 exit status\n"
            "INFO 06-06 15:54:50 [kv_cache_utils.py:716] GPU KV cache size: 100,000 tokens\n"
            "INFO 06-06 15:55:10 [gpu_model_runner.py:1933] Graph capturing finished in 20 secs, took 0.50 GiB\n"
            "INFO 06-06 15:55:10 [core.py:172] init engine (profile, create kv cache, warmup model) took 44.1 "
            "seconds\n")
    assert classify(text).detail != "triton_libcuda"
