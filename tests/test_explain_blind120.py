"""`explain` on blind120 (tests/data/real-logs/blind120), a blind set of issue 26, after its one scoring.

Collected through LLM application frameworks' threads by a helper that never read the classifier, and scored once,
whole, at cdd8956: 13 of 14, no confident error. Its miss: V0's "# GPU blocks: 0," where the paste stops before the
CPU blocks' figure (vLLM 0.2's llm_engine.py, then "No available memory for the cache blocks" out of the paste).
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_no_gpu_block_where_the_paste_stops_before_the_cpu_blocks() -> None:
    d = classify(blind_log("blind120", "b120-005"))
    assert (d.cls, d.stage) == ("no_kv_memory", "kv_cache")
    # cut anywhere after the zero (a review's finding: one token later was not read)
    for cut in ("0", "0,", "0, #", "0, # CPU", "0, # CPU blocks:", "0, # CPU blocks: 2048"):
        assert classify(f"INFO 10-14 21:40:24 llm_engine.py:205] # GPU blocks: {cut}\n").cls == "no_kv_memory", cut
    # the figure mid-line, the paste going on, is no reading of its own
    assert classify("INFO 10-14 21:40:24 llm_engine.py:205] # GPU blocks: 0, and more\n").cls == "unknown"
    assert classify("INFO 10-14 21:40:24 llm_engine.py:205] # GPU blocks: 05\n").cls == "unknown"


def test_what_blind120_read_right_at_its_score() -> None:
    want = {"b120-001": "kv_cache_too_small", "b120-002": "kv_cache_too_small", "b120-003": "gpu_oom",
            "b120-004": "gpu_busy"}
    assert {p: classify(blind_log("blind120", p)).cls for p in want} == want
