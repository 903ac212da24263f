"""`explain` on blind36 (tests/data/real-logs/blind36), the thirty-sixth blind set of issue 26, after its one scoring.

Collected from threads written in Chinese (any organisation) by a helper that never read the classifier, and scored
once, whole, at commit 7188160 (9 of 14 right, no confident error; README.md there). What its misses taught:
ModelScope's checksum refusal of a downloaded weight file, and that NCCL's "unhandled cuda error" at the
communicator's set-up deserves the same hint as its "unhandled system error" and no more (collected/c049, the same
kind of line, was shared memory).
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import DOWNLOAD_INTEGRITY
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_modelscopes_checksum_refusal_of_a_downloaded_file() -> None:
    # "modelscope.hub.errors.FileIntegrityError: File /root/.cache/modelscope/hub/._____temp/.../model.safetensors
    # integrity check failed, expected sha256 signature is ..., the download may be incomplete, please try again"
    d = classify(blind_log("blind36", "b36-006"))
    assert (d.cls, d.detail) == ("model_access", "download_integrity")
    assert advice_for(d) is DOWNLOAD_INTEGRITY and isinstance(next_step(d, Settings()), Stop)


def test_nccls_unhandled_errors_are_network_said_medium_with_how_to_tell_which_call() -> None:
    # labelled network by their collectors, as ten real reports are; NCCL's words alone do not say which call failed
    # (collected/c049's was /dev/shm, one of tests/test_explain_collected.py's known confident errors), so the advice
    # says how to find out
    for prefix in ("b36-002", "b36-014"):
        d = classify(blind_log("blind36", prefix))
        assert (d.cls, d.detail, d.confidence) == ("network", "nccl_unhandled", "medium"), prefix
        assert any("NCCL_P2P_DISABLE" in fix for fix in advice_for(d).helps)
        assert any("shm-size" in fix for fix in advice_for(d).helps)


def test_what_blind36_read_right_at_its_score() -> None:
    want = {"b36-001": "version_mismatch", "b36-004": "unknown", "b36-005": "gpu_oom", "b36-007": "gpu_busy",
            "b36-008": "unsupported_architecture", "b36-009": "dtype_unsupported", "b36-011": "tp_indivisible",
            "b36-012": "version_mismatch", "b36-013": "unknown"}
    assert {p: classify(blind_log("blind36", p)).cls for p in want} == want
