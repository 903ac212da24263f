"""`explain` on blind21 (tests/data/real-logs/blind21), the twenty-first blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier, byte-exact from logs committed to public repositories, and
scored once, whole, at commit 52da616 (8 of 12 right, 1 confident error; tests/data/real-logs/README.md). What its
misses taught: sentencepiece handed no tokenizer file, and a VllmConfig refusal that names one of vLLM's settings.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import TOKENIZER_MISSING
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_sentencepiece_handed_no_file_is_a_missing_tokenizer() -> None:
    # b21-011: an FP8 copy of a Llama-tokenizer model without tokenizer.json or tokenizer.model; transformers converts
    # the slow tokenizer, LlamaTokenizer passes vocab_file=None, sentencepiece's LoadFromFile says "not a string"
    d = classify(blind_log("blind21", "b21-011"))
    assert (d.cls, d.detail, d.confidence) == ("model_access", "tokenizer_missing", "high")
    assert advice_for(d) is TOKENIZER_MISSING
    assert isinstance(next_step(d, Settings()), Stop)


def test_not_a_string_elsewhere_is_not_a_tokenizer() -> None:
    text = ("Traceback (most recent call last):\n  File \"/app/run.py\", line 3, in <module>\n    os.path.join(None)\n"
            "TypeError: not a string\n")
    assert classify(text).cls == "unknown"


def test_a_vllmconfig_refusal_naming_a_setting_is_a_usage_error() -> None:
    # b21-006: a patched vLLM's VllmConfig check, "Value error, Tiered MoE supports max_num_seqs 1 through 4"
    d = classify(blind_log("blind21", "b21-006"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")
    assert d.evidence[-1] == "names vLLM's setting max_num_seqs"


@pytest.mark.parametrize(("name", "prefix"), [("blind3", "b3-037"), ("blind9", "b9-013")])
def test_a_modelconfig_refusal_naming_no_setting_stays_unknown(name: str, prefix: str) -> None:
    # "Value error, Expecting value: line 1 column 1 (char 0)": a model file that is not JSON, not a setting
    assert classify(blind_log(name, prefix)).cls == "unknown"


@pytest.mark.parametrize(("prefix", "cls"), [("b21-002", "disk_full"), ("b21-004", "quant_unsupported"),
                                             ("b21-008", "oom_loading"), ("b21-009", "model_access"),
                                             ("b21-010", "gpu_busy"), ("b21-001", "unknown"), ("b21-005", "unknown")])
def test_what_blind21_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind21", prefix)).cls == cls


def test_the_kv_page_refusal_its_collector_labelled_unknown_is_read_from_its_source() -> None:
    # b21-012 was right as `unknown` at its score; vLLM's KV cache planner's refusal ("Layer ...indexer.k_cache: page
    # size is not divisible by the maximum page size and cannot be padded") has been read since blind110, whose
    # collector labelled the same refusal unsupported_architecture, the second reading of b21-012's collector: a
    # confident error against its label, listed with the reason in tests/test_explain_collected.py
    d = classify(blind_log("blind21", "b21-012"))
    assert (d.cls, d.detail) == ("unsupported_architecture", "kv_page_padding")
