"""`explain` on blind124 and blind125 (tests/data/real-logs/blind124, blind125), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier, both scored once at 0676b11: blind124, quantized checkpoints, 16
of 20; blind125, tokenizers, templates and parsers, 15 of 18; no confident error. What their misses taught, each read
from the source that writes it: vLLM's CUTLASS entry points without a kernel for the GPU, the bitsandbytes loader
refusing tensor parallelism, a program passing vLLM a command-line spelling as a keyword, and a paste that stops inside
argparse's usage text. Two stay misses: Triton's fp8e4nv refusal cut mid-word (read dtype_unsupported elsewhere, a
label in dispute), and a dev tree's FlashAttention V1 FP8 message cut mid-word, in no release read.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_settings import BNB_TP, CUTLASS_CAPABILITY, ENGINE_KWARG, USAGE_CUT
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("part", "prefix", "cls", "detail", "advice"), [
    # "NotImplementedError: No compiled get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel for CUDA device
    # capability: 120. Required capability: 90 or 100"
    ("blind124", "b124-001", "quant_unsupported", "cutlass_capability", CUTLASS_CAPABILITY),
    # "ValueError: Prequant BitsAndBytes models with tensor parallelism is not supported. Please try with pipeline
    # parallelism."
    ("blind124", "b124-007", "usage_error", "bnb_tp", BNB_TP),
    # Xinference: "AsyncEngineArgs.__init__() got an unexpected keyword argument 'tool-call-parser'"
    ("blind125", "b125-002", "usage_error", "engine_kwarg", ENGINE_KWARG),
    # the usage text of vLLM 0.3's api_server and of 0.11's OpenAI server, cut before 'error: ...'
    ("blind125", "b125-016", "usage_error", "usage_cut", USAGE_CUT),
    ("blind125", "b125-017", "usage_error", "usage_cut", USAGE_CUT),
])
def test_what_blind124_and_blind125_taught(part: str, prefix: str, cls: str, detail: str, advice: object) -> None:
    d = classify(blind_log(part, prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert advice_for(d) is advice
    assert isinstance(next_step(d, Settings(max_model_len=4096)), Stop)


def test_the_cutlass_refusal_names_the_capability() -> None:
    assert classify(blind_log("blind124", "b124-001")).numbers == {"current_capability": 120}


def test_a_keyword_another_vllm_release_takes_is_not_this_reading() -> None:
    # underscores: a program written for another release of vLLM (read elsewhere), not a command-line spelling
    d = classify("TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'\n")
    assert d.detail != "engine_kwarg"


def test_help_output_that_goes_on_past_the_usage_text_is_no_refusal() -> None:
    text = ("usage: vllm serve [-h] [--model MODEL]\n                  [--port PORT]\n\npositional arguments:\n"
            "  model_tag   The model tag to serve\n\noptions:\n  -h, --help  show this help message and exit\n")
    assert classify(text).detail != "usage_cut"


def test_what_blind124_and_blind125_read_right_at_their_score() -> None:
    assert [classify(blind_log("blind124", p)).cls for p in ("b124-002", "b124-003", "b124-006", "b124-008")] == \
        ["quant_unsupported", "quant_unsupported", "tp_indivisible", "unsupported_architecture"]
    assert [classify(blind_log("blind125", p)).cls for p in ("b125-001", "b125-003", "b125-004", "b125-007")] == \
        ["usage_error", "usage_error", "version_mismatch", "model_access"]


@pytest.mark.parametrize(("text", "read"), [
    # 0.5-0.9's usage line, cut there
    ("usage: vllm serve <model_tag> [options]\n", True),
    # this tool's own usage is not vLLM's (a review's finding)
    ("usage: vllm-guard [-h] [-V] [--debug] COMMAND ...\n", False),
])
def test_usage_texts_that_are_and_are_not_vllms(text: str, read: bool) -> None:
    assert (classify(text).detail == "usage_cut") is read
