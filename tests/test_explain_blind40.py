"""`explain` on blind40 (tests/data/real-logs/blind40), the fortieth blind set of issue 26, after its one scoring.

Collected from threads of any organisation, aimed at the rarer kinds (/dev/shm, hangs, timeouts), by a helper that
never read the classifier, and scored once, whole, at commit 12c509b (2 of 8 right, 1 confident error; README.md
there). What its misses taught: Triton's fp8e4nv refusal is labelled a dtype the GPU lacks by both real reports of it;
Ray's object store sized past /dev/shm; Python's faulthandler naming a bus error; vllm-omni's stage timeout.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import OMNI_STAGE, advice_for


def test_tritons_fp8e4nv_refusal_is_a_dtype_the_gpu_lacks() -> None:
    # V1's wrapper quoting the worker: 'ValueError("type fp8e4nv not supported in this architecture. The supported
    # fp8 dtypes are ('fp8e4b15', 'fp8e5')")', please check the stack trace above for the root cause'
    d = classify(blind_log("blind40", "b40-001"))
    assert (d.cls, d.detail) == ("dtype_unsupported", "fp8_e4m3")


def test_rays_object_store_larger_than_dev_shm_is_a_candidate() -> None:
    # the raylet gives the store what it counts available in /dev/shm and goes on (store_runner.cc): no failure of
    # its own, but little /dev/shm is left for NCCL and vLLM
    d = classify(blind_log("blind40", "b40-002"))
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "shm_exhausted"
    assert "9216 MiB" in d.hint[1]


def test_rays_object_store_warning_does_not_hide_a_hang() -> None:
    # found by a review: as a warning rule it was returned before the hang reading, and the ladder stopped
    hang = blind_log("hangs", "h05")
    d = classify(blind_log("blind40", "b40-002") + hang)
    assert (d.cls, d.stage) == (classify(hang).cls, classify(hang).stage) == ("startup_hang", "custom_allreduce")


def test_pythons_faulthandler_on_a_bus_error() -> None:
    # FastChat's prefix around a Ray worker's "Fatal Python error: Bus error"
    assert classify(blind_log("blind40", "b40-003")).cls == "shm_exhausted"


def test_vllm_omnis_stage_timeout() -> None:
    d = classify(blind_log("blind40", "b40-006"))
    assert (d.cls, d.detail, d.numbers) == ("startup_timeout", "omni_stage", {"waited_s": 300})
    assert advice_for(d) is OMNI_STAGE


def test_a_ready_timeout_of_another_program_is_not_vllms() -> None:
    assert classify("RuntimeError: Timed out waiting for READY from the device after 10s\n").cls == "unknown"


def test_what_blind40_read_right_at_its_score() -> None:
    want = {"b40-004": "shm_exhausted", "b40-007": "unknown"}
    assert {p: classify(blind_log("blind40", p)).cls for p in want} == want
