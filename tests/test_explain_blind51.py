"""`explain` on blind51 (tests/data/real-logs/blind51), the fifty-first blind set of issue 26, after its one scoring.

Collected from documentation, knowledge-base and blog pages by a helper that never read the classifier, and scored
once, whole, at commit 1ebb3cc (6 of 8 right, no confident error; README.md there). What its misses taught: V0's KV
message cut inside "stored" (a pastebin that numbers its lines) still says the context does not fit; transformers'
refusal of a config.json without a model_type is the model's files, as Red Hat's own troubleshooting page shows it.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import NO_MODEL_TYPE


def test_v0s_kv_message_cut_inside_its_words() -> None:
    d = classify(blind_log("blind51", "b51-002"))
    assert (d.cls, d.numbers) == ("kv_cache_too_small", {"max_seq_len": 32768})


def test_the_cut_must_end_the_line() -> None:
    text = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
            "served by the cluster of this company\n")
    assert classify(text).cls == "unknown"


def test_a_config_without_a_model_type() -> None:
    d = classify(blind_log("blind51", "b51-001"))
    assert (d.cls, d.detail) == ("model_access", "no_model_type") and advice_for(d) is NO_MODEL_TYPE


def test_what_blind51_read_right_at_its_score() -> None:
    want = {"b51-003": "version_mismatch", "b51-004": "version_mismatch", "b51-005": "version_mismatch",
            "b51-006": "unknown", "b51-007": "unknown", "b51-008": "kv_cache_too_small"}
    assert {p: classify(blind_log("blind51", p)).cls for p in want} == want
