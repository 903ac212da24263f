"""`explain` on blind65 and blind66 (tests/data/real-logs/), found by messages sampled from the raise sites of vLLM's
model, LoRA, multimodal and layer code, scored once at 6137c41 (0 of 4; 1 of 5; no confident error; README.md in
each). What their misses taught, each from the vLLM source that raises it: VLLM_BATCH_INVARIANT=1 where this vLLM
has no batch-invariant kernel (two logs), and a MoE with ungated experts on a platform vLLM's fused-MoE layer does not
run them on. The others name no cause of their own (a weight-size assertion, a wrapper cut before its cause), come
from a fork's own check (1Cat-vLLM's V100 path), or are labelled otherwise than their words decide (a platform
plugin's backend name a newer vLLM lacks, a config of another class)."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail"), [
    ("blind65", "b65-004", "usage_error", "batch_invariant"),  # a GDN hybrid's attention
    ("blind66", "b66-004", "usage_error", "batch_invariant"),  # no backend chosen
    ("blind66", "b66-003", "unsupported_architecture", "moe_act_platform"),  # Nemotron-H on Intel XPU
])
def test_what_blind65_and_blind66_taught(folder: str, prefix: str, cls: str, detail: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail, d.confidence) == (cls, detail, "high")
    assert advice_for(d).helps
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]


def test_batch_invariance_refused_for_a_models_attention_is_placed_by_the_log() -> None:
    # 0.20+ refuses it as it sets up the attention backends, after the weights
    text = ("INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 40.00 GiB\n"
            "RuntimeError: VLLM batch_invariant mode is not supported for GDN_ATTN.\n")
    assert (classify(text).detail, classify(text).stage) == ("batch_invariant", "kv_cache")


def test_not_the_unquantized_wording_of_the_moe_check() -> None:
    assert classify("NotImplementedError: is_act_and_mul=False is supported only for unquantized MoE for now\n"
                    ).detail != "moe_act_platform"


def test_what_blind66_read_right_at_its_score() -> None:
    assert classify(blind_log("blind66", "b66-005")).cls == "usage_error"
