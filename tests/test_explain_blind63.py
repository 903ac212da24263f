"""`explain` on blind63 (tests/data/real-logs/blind63), found by the last heads of vLLM's own raise sites and scored
once at f1ee65f (2 of 5, no confident error; its README.md). Its misses, each from the vLLM source that raises it:
vllm serve's check of its own flags ("Error: --X ..."), and the fused-MoE oracles finding no backend for a quantized
format (0.16-0.34). The third, a torch size mismatch in the sharded-state loader, names no cause of its own."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_vllm_serves_check_of_its_own_flags() -> None:
    d = classify(blind_log("blind63", "b63-001"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "cli_flags", "high")


def test_the_check_named_by_its_frame_when_the_message_is_cut() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/site-packages/vllm/entrypoints/openai/cli_args.py", line 285, in '
            "validate_parsed_serve_args\n    raise TypeError(\n")
    d = classify(text)
    assert (d.cls, d.confidence) == ("usage_error", "medium")


@pytest.mark.parametrize("fmt", ["MXFP4", "FP8", "NvFp4", "W4A8 Int8", "WNA16"])
def test_no_moe_backend_for_a_quantized_format(fmt: str) -> None:
    d = classify(f"NotImplementedError: No {fmt} MoE backend supports the deployment configuration.\n")
    assert (d.cls, d.detail) == ("quant_unsupported", "no_kernel")


def test_not_for_an_unquantized_moe() -> None:
    assert classify("NotImplementedError: No Unquantized MoE backend supports the deployment configuration.\n"
                    ).cls != "quant_unsupported"


def test_what_blind63_read_right_at_its_score() -> None:
    assert classify(blind_log("blind63", "b63-002")).cls == "unknown"
    assert classify(blind_log("blind63", "b63-005")).cls == "model_access"


def test_not_the_chat_servers_wrapper_of_a_tool_parser_that_failed() -> None:
    text = ("KeyError: 'qwen3_xml'\n\nThe above exception was the direct cause of the following exception:\n\n"
            "TypeError: Error: --enable-auto-tool-choice requires tool_parser:'qwen3_xml' which has not been "
            "registered\n")
    assert classify(text).detail != "cli_flags"
