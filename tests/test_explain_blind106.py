"""`explain` on blind106 (2 of 3 at 74c8a09, vLLM 0.32-0.34's starts), scored once (README.md there). What its miss
taught: a message a person re-wrapped over more than two lines is read across the whole run, not one pair of lines
(b106-001: vLLM's KV message at 70 columns over four lines)."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify

_KV = ("ValueError: To serve at least one request with the models's max seq len (200000), (3.31 GiB KV cache is "
       "needed, which is larger than the available KV cache memory (2.19 GiB). Based on the available memory, the "
       "estimated maximum model length is 111456. Try increasing `gpu_memory_utilization` or decreasing "
       "`max_model_len` when initializing the engine.")


def test_the_kv_message_over_four_lines() -> None:
    d = classify(blind_log("blind106", "b106-001"))
    assert (d.cls, d.numbers["estimated_max_len"], d.numbers["available_gib"]) == ("kv_cache_too_small", 111456, 2.19)


@pytest.mark.parametrize("width", [64, 70, 72, 80, 100])
def test_the_kv_message_rewrapped_at_any_width(width: int) -> None:
    # a person re-wrapping at word boundaries (textwrap), the figures on later lines; the run's first line must be a
    # wrap's (60 characters or more), the lines inside it may be a word shorter
    d = classify("\n".join(textwrap.wrap(_KV, width)) + "\n")
    assert (d.cls, d.numbers.get("estimated_max_len")) == ("kv_cache_too_small", 111456)


def test_a_run_of_wrapped_lines_does_not_join_the_next_record() -> None:
    text = "\n".join(textwrap.wrap(_KV, 70)) + "\nINFO 06-01 10:00:00 [core.py:1] next record\n"
    assert classify(text).cls == "kv_cache_too_small"


@pytest.mark.parametrize(("prefix", "cls"), [("b106-002", "remote_code_required"), ("b106-003", "usage_error")])
def test_what_blind106_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind106", prefix)).cls == cls
