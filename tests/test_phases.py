"""Start-up phases read from vLLM's own lines (diagnose/markers.py), on real start-ups from public reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_guard.diagnose.markers import phases_of

LOGS = Path(__file__).parent / "data" / "logs"


@pytest.mark.parametrize(("line", "phases"), [
    # Every vLLM prints its rank, Ray or not (parallel_state.py); only a Ray worker's line is "ray_workers".
    ("(EngineCore pid=41301) INFO 11-29 06:00:16 [parallel_state.py:1208] rank 0 in world size 1 is assigned as "
     "DP rank 0, PP rank 0, TP rank 0, EP rank 0", ()),
    ("(Worker_TP0 pid=41412) INFO 11-29 06:00:16 [parallel_state.py:1208] rank 0 in world size 2 is assigned as "
     "DP rank 0, PP rank 0, TP rank 0, EP rank 0", ()),
    ("(RayWorkerWrapper pid=40001, ip=10.0.0.12) INFO 11-29 06:00:16 [parallel_state.py:1208] rank 1 in world size "
     "2 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 0", ("placement_group", "ray_workers")),
    ("(EngineCore pid=1) INFO [gpu_model_runner.py] Model loading took 16.60 GiB and 12.1 seconds", ("weights",)),
])
def test_phase_markers(line: str, phases: tuple[str, ...]) -> None:
    assert phases_of(line) == phases


def test_no_ray_phase_in_a_start_without_ray() -> None:
    """Issue 23: the phases of a start without Ray included "Ray workers"."""
    seen = set()
    for log in sorted(LOGS.glob("*.log")):
        text = log.read_text(errors="replace")
        if "RayWorkerWrapper" in text:
            continue
        for line in text.splitlines():
            seen.update(phases_of(line))
    assert "weights" in seen and not seen & {"placement_group", "ray_workers"}
