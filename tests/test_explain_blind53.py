"""`explain` on blind53 and blind54 (tests/data/real-logs/), the fifty-third and fifty-fourth blind sets of issue 26,
after their one scoring.

blind53 came from serving platforms' threads (3: the collector found the rest already known), blind54 from training
and RL frameworks' threads (8, 7 labelled unknown); each was collected by a helper that never read the classifier
and scored once, whole (2 of 3 at 8d08675; 8 of 8 at a3309da; README.md in each). blind53's one miss is a paste cut
before its error (the cause is only in the thread's title), so no rule was written; these tests hold what was read.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_nccls_unhandled_error_before_a_cut_traceback_is_network() -> None:
    # b53-001 quotes NCCL's unhandled system error from a worker, then stops inside V0's engine traceback (unknown at
    # its score, when the line was a hint; network since blind57's round, as its label says)
    assert classify(blind_log("blind53", "b53-001")).cls == "network"


def test_what_they_read_right_at_their_score() -> None:
    assert {p: classify(blind_log("blind53", p)).cls for p in ("b53-002", "b53-003")} == {
        "b53-002": "dtype_unsupported", "b53-003": "unknown"}
    want = {f"b54-00{i}": "unknown" for i in (1, 3, 4, 5, 6, 7, 8)} | {"b54-002": "model_access"}
    assert {p: classify(blind_log("blind54", p)).cls for p in want} == want
