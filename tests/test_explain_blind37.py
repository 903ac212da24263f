"""`explain` on blind37 (tests/data/real-logs/blind37), the thirty-seventh blind set of issue 26, after its one scoring.

Collected from web pages outside GitHub (Hugging Face model discussions and Spaces' error boxes, CSDN, Juejin,
NVIDIA's forum) by a helper that never read the classifier, and scored once, whole, at commit 9b83867 (9 of 16
right, 1 confident error; README.md there). What its misses taught: PyTorch's OOM message cut at its start still
says OOM by its tail; a message hard-wrapped before the path it quotes; vLLM's NVFP4 MoE refusal of data
parallelism; and that the registry's "failed to be inspected" is a candidate, not a class (real reports label it
both ways: blind5/b5-006 unsupported_architecture, blind13/b13-015 and b37-011 unknown).
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose import logread
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import INSPECTION_FAILED, NVFP4_MOE_DP, advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_pytorchs_oom_message_cut_at_its_start_is_still_an_oom() -> None:
    # "Exit code: 1. Reason: ess has 0 bytes memory in use. Of the allocated memory 21.48 GiB is allocated by
    # PyTorch, and 10.95 MiB is reserved by PyTorch but unallocated. ..."
    d = classify(blind_log("blind37", "b37-002"))
    assert (d.cls, d.stage, d.numbers.get("allocated_gib")) == ("gpu_oom", "unknown", 21.48)


def test_the_oom_tail_needs_its_figure() -> None:
    assert classify("ERROR: Of the allocated memory most is allocated by PyTorch as usual\n").cls == "unknown"
    assert classify("ERROR: Of the allocated memory 2.5 GiB is allocated by PyTorch\n").cls == "gpu_oom"


def test_a_message_wrapped_before_the_path_it_quotes() -> None:
    d = classify(blind_log("blind37", "b37-013"))
    assert (d.cls, d.detail) == ("model_access", "missing_local_path")


def test_a_line_ending_in_a_colon_joins_only_a_quoted_value() -> None:
    head = "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name':"
    quoted = logread.read(f"{head}\n'/srv/models/none'. Use `repo_type` argument if needed.\n")
    assert logread.continuation(quoted, 0) is not None
    plain = logread.read(f"{head}\nnext words that are not a quote\n")
    assert logread.continuation(plain, 0) is None


def test_nvfp4_moe_kernels_refusing_data_parallelism() -> None:
    d = classify(blind_log("blind37", "b37-016"))
    assert (d.cls, d.detail, d.confidence) == ("quant_unsupported", "nvfp4_moe_dp", "high")
    assert advice_for(d) is NVFP4_MOE_DP and "VLLM_USE_FLASHINFER_MOE_FP4=1" in advice_for(d).helps[0]
    assert isinstance(next_step(d, Settings()), Stop)


@pytest.mark.parametrize(("part", "prefix"), [("blind37", "b37-011"), ("blind13", "b13-015"),
                                              ("blind5", "b5-006"), ("blind7", "b7-017")])
def test_a_failed_inspection_is_a_candidate_with_its_advice(part: str, prefix: str) -> None:
    # vLLM raises "failed to be inspected" only for an architecture it supports; the subprocess's error says why
    d = classify(blind_log(part, prefix))
    assert (d.cls, d.detail, d.confidence) == ("unknown", "inspection_failed", "none")
    # the likelier cause, as the advice says: an install that does not import (the architecture is one vLLM has)
    assert d.hint is not None and d.hint[0] == "version_mismatch"
    assert advice_for(d) is INSPECTION_FAILED and len(set(d.evidence)) == len(d.evidence)


def test_what_blind37_read_right_at_its_score() -> None:
    want = {"b37-001": "kv_cache_too_small", "b37-004": "too_few_gpus", "b37-005": "dtype_unsupported",
            "b37-006": "kv_cache_too_small", "b37-007": "max_len_exceeds_model", "b37-008": "unsupported_architecture",
            "b37-014": "usage_error", "b37-015": "version_mismatch"}
    assert {p: classify(blind_log("blind37", p)).cls for p in want} == want
