"""`explain` on blind39 (tests/data/real-logs/blind39), the thirty-ninth blind set of issue 26, after its one scoring.

Collected from web pages outside GitHub (Hugging Face model discussions, Ascend's forum, a Chinese blog) by a helper
that never read the classifier, and scored once, whole, at commit 5c666b8 (6 of 11 right, no confident error;
README.md there). What its misses taught: torch_npu refuses a forked child as PyTorch does for CUDA; a checkpoint's
weight name the model's class lacks (a KeyError in load_weights) is labelled three ways, so it is a candidate named
with what it means, and a traceback pasted alone is placed by its frames.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import FORK_CUDA, advice_for
from vllm_guard.diagnose.markers import LOADING


def test_an_npu_in_a_forked_worker() -> None:
    # "RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, you must use the
    # 'spawn' start method." (torch_npu, under vllm-ascend's V0 multiprocessing workers)
    d = classify(blind_log("blind39", "b39-008"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "fork_cuda", "high")
    assert advice_for(d) is FORK_CUDA


@pytest.mark.parametrize(("part", "prefix"), [("blind39", "b39-004"), ("blind39", "b39-005"),
                                              ("blind10", "b10-001")])
def test_a_weight_name_the_models_class_lacks_is_a_candidate(part: str, prefix: str) -> None:
    d = classify(blind_log(part, prefix))
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "model_access"
    assert "layout" in d.hint[1]


def test_a_traceback_pasted_alone_is_placed_by_its_frames() -> None:
    # falcon.py load_weights -> params_dict[name]: no progress line, the frames say weight loading
    d = classify(blind_log("blind39", "b39-004"))
    assert (d.stage, d.stage_from) == (LOADING, "the traceback's frames")


def test_a_key_error_that_names_no_weight_is_no_candidate() -> None:
    assert classify("Traceback (most recent call last):\nKeyError: 'model_type'\n").hint is None


def test_what_blind39_read_right_at_its_score() -> None:
    want = {"b39-001": "kv_cache_too_small", "b39-002": "dtype_unsupported", "b39-003": "unsupported_architecture",
            "b39-006": "too_few_gpus", "b39-009": "unknown", "b39-010": "version_mismatch"}
    assert {p: classify(blind_log("blind39", p)).cls for p in want} == want
