"""`explain` on blind30 (tests/data/real-logs/blind30), the thirtieth blind set of issue 26, after its one scoring.

Collected outside the vllm-project organisation by a helper that never read the classifier, and scored once, whole,
at commit f8a01b5 (2 of 6 right, no confident error; tests/data/real-logs/README.md). What its misses taught: vLLM
0.32's own wording of the placement-group timeout ("requiring N GPUs"), and the no-weights message as a runner's repr
prints it.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_the_placement_group_timeout_in_vllm_032s_words() -> None:
    # "Cannot provide a placement group requiring 4.0 GPUs (placement_group_specs=[...]) within 1800 secon" (cut)
    d = classify(blind_log("blind30", "b30-006"))
    assert (d.cls, d.numbers["timeout_s"], d.numbers["required_gpus"]) == ("too_few_gpus", 1800, 4)


def test_no_weights_as_a_runners_repr_prints_it() -> None:
    # Modal: "Runner failed with exception: RuntimeError('Cannot find any model weights with /llamas/...')"
    d = classify(blind_log("blind30", "b30-004"))
    assert (d.cls, d.detail) == ("model_access", "no_weights")


def test_what_blind30_read_right_at_its_score() -> None:
    assert {p: classify(blind_log("blind30", p)).cls for p in ("b30-003", "b30-005")} == {"b30-003": "unknown",
                                                                                         "b30-005": "unknown"}
