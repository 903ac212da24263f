"""`explain` on blind46 (tests/data/real-logs/blind46), the forty-sixth blind set of issue 26, after its one scoring.

Collected from pull requests' threads by a helper that never read the classifier, and scored once, whole, at commit
5b6142e (5 of 6 right, no confident error; README.md there). What its miss taught: vLLM's free-memory refusal wrapped
after "is less" is decided by its head, and 0.32 words it a second way for weights held outside the process.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_the_free_memory_refusal_wrapped_after_its_head() -> None:
    # "    ValueError: Free memory on device cuda:0 (1.33/23.98 GiB) on startup is less" /
    # "    than desired GPU memory utilization (0.95, 22.79 GiB)."
    d = classify(blind_log("blind46", "b46-001"))
    assert (d.cls, d.numbers) == ("gpu_busy", {"free_gib": 1.33, "total_gib": 23.98})


def test_the_refusal_for_weights_held_outside_the_process() -> None:
    # vLLM 0.32 v1/worker/utils.py request_memory
    d = classify("ValueError: Free memory on device cuda:0 (10.0/80.0 GiB) on startup is less than the engine's budget "
                 "after excluding external process's weights (0.9, 40.0 GiB). Decrease GPU memory utilization or "
                 "reduce GPU memory used by other processes.\n")
    assert (d.cls, d.numbers["utilization"], d.numbers["requested_gib"]) == ("gpu_busy", 0.9, 40.0)


def test_the_workers_own_memory_report_is_not_the_refusal() -> None:
    # v1/worker/gpu_worker.py's account of its memory, which also opens with the device's free memory on startup
    line = ("INFO 01-01 00:00:00 [gpu_worker.py:1013] Free memory on device (70.0/80.0 GiB) on startup. Desired GPU "
            "memory utilization is (0.9, 72.0 GiB). Actual usage is 15.0 GiB for consumed memory\n")
    assert classify(line).cls == "unknown"


def test_what_blind46_read_right_at_its_score() -> None:
    want = {"b46-002": "unknown", "b46-003": "version_mismatch", "b46-004": "unknown", "b46-005": "unknown",
            "b46-006": "unknown"}
    assert {p: classify(blind_log("blind46", p)).cls for p in want} == want
