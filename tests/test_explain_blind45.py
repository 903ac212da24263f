"""`explain` on blind45 (tests/data/real-logs/blind45), the forty-fifth blind set of issue 26, after its one scoring.

Collected from markdown and text files committed to repositories by a helper that never read the classifier, and
scored once, whole, at commit a301b16 (8 of 9 right, no confident error; README.md there). What its miss taught:
PyTorch's allocator asserting on NVML is its out-of-memory path failing to list the GPU's processes; labelled
gpu_oom here and unknown three times before, it is a candidate.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("part", "prefix"), [("blind45", "b45-004"), ("blind13", "b13-021"),
                                              ("blind17", "b17-012"), ("collected", "c047")])
def test_the_allocators_nvml_assert_is_an_oom_candidate(part: str, prefix: str) -> None:
    # 'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1016'
    d = classify(blind_log(part, prefix))
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "gpu_oom"
    assert "MIG" in d.hint[1]


def test_the_same_assert_from_another_file_is_no_candidate() -> None:
    d = classify('RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/src/nvml_probe.cpp":12\n')
    assert d.hint is None or d.hint[0] != "gpu_oom"


def test_what_blind45_read_right_at_its_score() -> None:
    want = {"b45-001": "version_mismatch", "b45-002": "oom_profiling", "b45-003": "dtype_unsupported",
            "b45-005": "gpu_busy", "b45-006": "no_kv_memory", "b45-007": "model_access", "b45-008": "oom_loading",
            "b45-009": "too_few_gpus"}
    assert {p: classify(blind_log("blind45", p)).cls for p in want} == want
