"""`explain` on blind52 (tests/data/real-logs/blind52), the fifty-second blind set of issue 26, after its one scoring.

Collected from threads about vLLM 0.1-0.5 by a helper that never read the classifier, and scored once, whole, at
commit b8851d1 (7 of 12 right, no confident error; README.md there). What its misses taught: 0.1's negative block
count; 0.1-0.2's re-raised tokenizer failure; V0's LoRA refusal for a class named without "For"; a hang whose paste
ends in a cut process prefix; and that the collectors' names for a hang's stage must be read as the classifier's.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import TOKENIZER_OLD


def test_a_negative_block_count() -> None:
    # "# GPU blocks: -1, # CPU blocks: 512", then "RuntimeError: Trying to create tensor with negative dimension -1"
    d = classify(blind_log("blind52", "b52-002"))
    assert (d.cls, d.stage) == ("no_kv_memory", "kv_cache")


def test_a_healthy_block_count_is_no_failure() -> None:
    assert classify("INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: 2214, # CPU blocks: 512\n").cls == "unknown"


def test_the_old_tokenizer_failure() -> None:
    for prefix in ("b52-004", "b52-005"):
        d = classify(blind_log("blind52", prefix))
        assert (d.cls, d.detail) == ("model_access", "tokenizer_old") and advice_for(d) is TOKENIZER_OLD, prefix


def test_v0s_lora_refusal_for_any_class_name() -> None:
    assert classify(blind_log("blind52", "b52-008")).detail == "lora_model"


def test_a_placement_wait_whose_paste_ends_in_a_cut_prefix() -> None:
    d = classify(blind_log("blind52", "b52-010"))
    assert (d.cls, d.stage) == ("startup_hang", "ray_placement")


def test_what_blind52_read_right_at_its_score() -> None:
    want = {"b52-001": "shm_exhausted", "b52-003": "too_few_gpus", "b52-006": "version_mismatch",
            "b52-007": "unsupported_architecture", "b52-009": "unsupported_architecture",
            "b52-011": "unsupported_architecture", "b52-012": "unsupported_architecture"}
    assert {p: classify(blind_log("blind52", p)).cls for p in want} == want


def test_the_per_line_memo_skips_repeats_of_a_condition_read_over_the_whole_log() -> None:
    # a review's check, on a log the memo must not change: one warning, repeated, then the failure; and the warning
    # alone (kept once, whichever copy)
    blocks = "INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: -1, # CPU blocks: 512\n" * 50
    kv = ("ValueError: To serve at least one request with the model's max seq len (32768), (4.00 GiB KV cache is "
          "needed, which is larger than the available KV cache memory (2.00 GiB).\n")
    assert classify(blocks + kv).cls == "kv_cache_too_small"
    d = classify(blocks)
    assert (d.cls, len(d.evidence) >= 1) == ("no_kv_memory", True)
