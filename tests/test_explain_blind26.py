"""`explain` on blind26 (tests/data/real-logs/blind26), the twenty-sixth blind set of issue 26, after its one scoring.

Collected outside the vllm-project organisation by a helper that never read the classifier, and scored once, whole,
at commit 85a8bd9 (3 of 5 right, no confident error; tests/data/real-logs/README.md). What its misses taught:
--quantization naming a method the checkpoint has no config for; in a later session, a flash-attention build that
left out head sizes not a multiple of 32.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import QUANT_CONFIG_MISSING, advice_for
from vllm_guard.diagnose.details_build import FLASH_ATTN_BUILD
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("name", "prefix"), [("blind26", "b26-001"), ("blind3", "b3-023")])
def test_quantization_named_without_its_config_is_a_usage_error(name: str, prefix: str) -> None:
    # vLLM 0.7.3 (b26-001) and 0.2 (b3-023): "ValueError: Cannot find the config file for awq"
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "quant_config_missing", "high")
    assert advice_for(d) is QUANT_CONFIG_MISSING and isinstance(next_step(d, Settings()), Stop)


def test_what_blind26_read_right_at_its_score() -> None:
    want = {"b26-002": "oom_profiling", "b26-003": "unknown", "b26-005": "unknown"}
    assert {p: classify(blind_log("blind26", p)).cls for p in want} == want


def test_a_flash_attention_build_without_uneven_head_sizes() -> None:
    # Qwen3-Omni's encoder under vLLM from master and a separately installed FlashAttention 2.8.3: "RuntimeError:
    # Worker failed with error 'This flash attention build does not support headdim not being a multiple of 32.'"
    d = classify(blind_log("blind26", "b26-004"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "flash_attn_build", "high")
    assert advice_for(d) is FLASH_ATTN_BUILD and isinstance(next_step(d, Settings()), Stop)
    assert any("--mm-encoder-attn-backend TORCH_SDPA" in h for h in FLASH_ATTN_BUILD.helps)


def test_the_flash_attention_build_check_after_a_ready_start_is_not_a_start_failure() -> None:
    # the same check refuses a request's shapes after the server was ready: not why a start failed
    log = ("INFO 11-17 00:50:02 [api_server.py:1] Application startup complete.\n"
           "ERROR 11-17 00:53:02 [core.py:1] RuntimeError: This flash attention build does not support local "
           "attention.\n")
    assert classify(log).detail != "flash_attn_build"
