"""`explain` on blind48 (tests/data/real-logs/blind48), the forty-eighth blind set of issue 26, after its one scoring.

Collected from vLLM's threads on models and features by a helper that never read the classifier, and scored once,
whole, at commit 68d2362 (6 of 15 right, no confident error; README.md there). Its misses were vLLM's own refusals of
settings no rule had read yet: LoRA on a class without it, speculative-decoding set-ups, a RoPE scaling type,
pipeline parallelism's allow-list, FlexAttention without sliding window, FlashInfer's MLA planner refusing the KV
cache's dtype.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import FLEX_ATTENTION, advice_for
from vllm_guard.diagnose.details_settings import LORA_MODEL, ROPE_NEWER, ROPE_TYPE, SPEC_CONFIG
from vllm_guard.diagnose.ladder import Settings, Step, next_step


@pytest.mark.parametrize(("prefix", "cls", "detail"), [
    ("b48-001", "usage_error", "rope_type"),
    ("b48-008", "quant_unsupported", "kv_cache_dtype"),
    ("b48-009", "unsupported_architecture", "flex_attention"),
    ("b48-011", "usage_error", "lora_model"),
    ("b48-012", "usage_error", "lora_model"),
    ("b48-013", "usage_error", "spec_config"),
    ("b48-014", "usage_error", "spec_config"),
    ("b48-015", "usage_error", "pp_unsupported"),
])
def test_what_the_misses_taught(prefix: str, cls: str, detail: str) -> None:
    d = classify(blind_log("blind48", prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert d.template


def test_the_advice_of_each() -> None:
    assert advice_for(classify(blind_log("blind48", "b48-011"))) is LORA_MODEL
    assert advice_for(classify(blind_log("blind48", "b48-013"))) is SPEC_CONFIG
    assert advice_for(classify(blind_log("blind48", "b48-001"))) is ROPE_TYPE
    assert advice_for(classify(blind_log("blind48", "b48-009"))) is FLEX_ATTENTION


def test_a_rope_type_a_later_vllm_knows_is_this_vllms_age() -> None:
    # Llama 3.1's config.json under vLLM 0.5.2
    d = classify("ValueError: Unknown RoPE scaling type llama3\n")
    assert (d.cls, d.detail) == ("version_mismatch", "rope_newer") and advice_for(d) is ROPE_NEWER


def test_the_mla_planners_kv_refusal_takes_an_fp8_kv_cache_back() -> None:
    step = next_step(classify(blind_log("blind48", "b48-008")), Settings(kv_cache_dtype="fp8"))
    assert isinstance(step, Step) and (step.param, step.value) == ("kv-cache-dtype", "auto")


@pytest.mark.parametrize("line", [
    "ValueError: CutlassExpertsFp4 does not support LoRA. Use another MoE backend.",
    "NotImplementedError: FlexAttention does not support quantized kv-cache. Yet",
])
def test_near_misses(line: str) -> None:
    d = classify(line + "\n")
    assert d.detail not in ("lora_model", "flex_attention")


def test_what_blind48_read_right_at_its_score() -> None:
    want = {"b48-002": "usage_error", "b48-004": "usage_error", "b48-005": "quant_unsupported",
            "b48-006": "usage_error", "b48-007": "tp_indivisible", "b48-010": "quant_unsupported"}
    assert {p: classify(blind_log("blind48", p)).cls for p in want} == want


def test_rope_types_some_vllm_knows_include_the_newest() -> None:
    assert classify("ValueError: Unknown RoPE scaling type xdrope\n").detail == "rope_newer"
