"""`explain` on blind64 (tests/data/real-logs/blind64), found by messages sampled from the raise sites of vLLM's model,
LoRA, multimodal and layer code, scored once at aba76fe (1 of 6, no confident error; its README.md). What its misses
taught, each from the vLLM source that raises it: LoRA's bounded vocabulary, 0.5's XFormers refusing Gemma-2's
soft-capping, and VLLM_ATTENTION_BACKEND naming no backend. b64-001 (the weight loader's message, labelled
model_access) stays a candidate; b64-006 (a kernel assertion a later fix removed) names no cause of its own."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


@pytest.mark.parametrize(("prefix", "detail", "numbers"), [
    ("b64-002", "lora_vocab", {"max_vocab": 33024}),
    ("b64-003", "softcap_xformers", {}),  # float32 on a Turing GPU: vLLM 0.5.5 fell back to XFormers
    ("b64-004", "backend_name", {}),
])
def test_what_blind64_taught(prefix: str, detail: str, numbers: dict[str, int]) -> None:
    d = classify(blind_log("blind64", prefix))
    assert (d.cls, d.detail, d.confidence, d.numbers) == ("usage_error", detail, "high", numbers)
    assert advice_for(d).helps
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]


@pytest.mark.parametrize(("line", "bound"), [
    ("ValueError: When using LoRA, vocab size must be 32000 >= vocab_size <= 257024", 257024),
    ("ValueError: When using LoRA, vocab size must be <= 258048", 258048),
])
def test_loras_vocabulary_bound_in_each_wording(line: str, bound: int) -> None:
    d = classify(line + "\n")
    assert (d.detail, d.numbers) == ("lora_vocab", {"max_vocab": bound})


def test_an_environment_variable_with_a_value_vllm_does_not_take() -> None:
    # vLLM 0.11+ checks VLLM_ATTENTION_BACKEND (and its other such variables) as it reads them
    d = classify("ValueError: Invalid value 'ASCEND_X' for VLLM_ATTENTION_BACKEND. Valid options: ['FLASH_ATTN'].\n")
    assert (d.cls, d.detail) == ("usage_error", "env_choice")


def test_the_weight_loaders_message_stays_a_candidate() -> None:
    d = classify(blind_log("blind64", "b64-001"))
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "model_access"


def test_what_blind64_read_right_at_its_score() -> None:
    assert classify(blind_log("blind64", "b64-005")).cls == "usage_error"
