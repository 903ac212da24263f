"""`explain` on blind99 (6 of 14 at 3d573e1, hybrid, state-space and linear-attention models), scored once (README.md
there). What its misses taught: vLLM's count of a hybrid model's Mamba cache blocks below max-num-seqs (four logs
from four projects; the ladder lowers max-num-seqs to vLLM's figure), Mamba2's groups that a tensor-parallel size
does not divide, LMCache refusing Mamba groups outside 'align' mode, and Triton-Ascend's compiler without the NPU's
target."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Step, Stop, next_step


@pytest.mark.parametrize(("prefix", "seqs", "blocks"), [("b99-001", 1024, 658), ("b99-002", 1024, 856),
                                                       ("b99-012", 1024, 614), ("b99-013", 1024, 524)])
def test_a_hybrid_models_mamba_blocks_below_max_num_seqs(prefix: str, seqs: int, blocks: int) -> None:
    d = classify(blind_log("blind99", prefix))
    assert (d.cls, d.detail, d.numbers) == ("usage_error", "mamba_blocks", {"max_num_seqs": seqs,
                                                                            "mamba_blocks": blocks})
    step = next_step(d, Settings())
    assert isinstance(step, Step) and (step.param, step.value) == ("max-num-seqs", blocks)


def test_the_ladder_does_not_raise_max_num_seqs_to_the_block_count() -> None:
    d = classify("ValueError: max_num_seqs (64) exceeds available Mamba cache blocks (96).")
    assert next_step(d, Settings()) == Stop(NOT_RELAXABLE_DETAIL["mamba_blocks"])


@pytest.mark.parametrize(("prefix", "cls", "detail", "helps"), [
    ("b99-003", "usage_error", "lmcache_mamba", "--enable-prefix-caching"),
    ("b99-006", "tp_indivisible", "mamba_groups", "n_groups"),
    ("b99-010", "version_mismatch", "bisheng_target", "npu-smi info"),
])
def test_what_the_other_misses_read_now(prefix: str, cls: str, detail: str, helps: str) -> None:
    d = classify(blind_log("blind99", prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert any(helps in h for h in advice_for(d).helps)
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]


@pytest.mark.parametrize(("prefix", "cls"), [("b99-005", "version_mismatch"), ("b99-007", "kv_cache_too_small"),
                                             ("b99-008", "unknown"), ("b99-009", "unknown"), ("b99-011", "unknown"),
                                             ("b99-014", "unknown")])
def test_what_blind99_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind99", prefix)).cls == cls
