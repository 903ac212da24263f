"""`explain` on blind55 and blind56 (tests/data/real-logs/), the last blind sets of the session, after their one
scoring (1 of 1; 6 of 7; both at b4c04be, README.md in each). blind56's miss: CPython's bare "Address already in use"
with the API server's frames pasted after it, not before.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_the_api_bind_error_with_its_frames_after_it() -> None:
    assert classify(blind_log("blind56", "b56-005")).cls == "port_in_use"


def test_a_bare_bind_error_near_zmq_is_still_not_the_api_port() -> None:
    text = "OSError: [Errno 98] Address already in use\n  File \"/v/zmq/sugar/socket.py\", line 1, in bind\n"
    assert classify(text).cls == "unknown"


def test_what_they_read_right_at_their_score() -> None:
    assert classify(blind_log("blind55", "b55-001")).cls == "version_mismatch"
    want = {"b56-001": "kv_cache_too_small", "b56-002": "no_kv_memory", "b56-003": "no_kv_memory",
            "b56-004": "gpu_busy", "b56-006": "unknown", "b56-007": "unknown"}
    assert {p: classify(blind_log("blind56", p)).cls for p in want} == want
