"""`explain` on blind7 (tests/data/real-logs/blind7), the seventh blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 9d5be60 (25 of 29 right, no
confident error; 21 of the 29 labelled `unknown`: tests/data/real-logs/README.md). Its four misses were programs
that drive vLLM written for another vLLM release; blind6/b6-025 is the same kind.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("name", "prefix"), [
    ("blind7", "b7-003"),  # unsloth_zoo reads V1's LLMEngine.model_executor (unsloth #2426)
    ("blind7", "b7-004"),  # Triton's vllm backend passes stat_loggers= (server #8578)
    ("blind7", "b7-018"),  # LLaMA-Factory passes limit_mm_per_prompt to vLLM 0.5's AsyncEngineArgs (#6654)
    ("blind7", "b7-021"),  # OpenRLHF's collective_rpc on V1's LLMEngine (#922)
    ("blind6", "b6-025"),  # FastChat's vllm_worker reads AsyncLLM.engine (#3704)
])
def test_a_program_written_for_another_vllm_release(name: str, prefix: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "vllm_api", "medium")


@pytest.mark.parametrize("text", [
    # another program's own objects and calls say nothing of vLLM
    "AttributeError: 'MyEngine' object has no attribute 'model_executor'",
    "  File \"/srv/app/train.py\", line 9, in main\n    cfg = Settings(**kwargs)\n"
    "TypeError: __init__() got an unexpected keyword argument 'limit_mm_per_prompt'",
])
def test_other_programs_mismatches_stay_unknown(text: str) -> None:
    assert classify(text + "\n").cls == "unknown"


def test_a_decisive_message_wins_over_an_api_mismatch() -> None:
    text = ("AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n"
            "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.\n")
    assert classify(text).cls == "no_kv_memory"
