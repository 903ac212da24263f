"""`explain` on blind47 (tests/data/real-logs/blind47), the forty-seventh blind set of issue 26, after its one scoring.

Collected from vLLM's threads on platforms and set-ups by a helper that never read the classifier, and scored once,
whole, at commit 8433bb4 (5 of 11 right, no confident error; README.md there). What its misses taught: rocBLAS without
a library for the GPU's gfx target (ROCm's "no kernel image"), V1's check of the ranks a node runs against its GPUs,
a folder the start cannot write or a vllm the user cannot run (OpenShift's arbitrary user), Ray's core worker that
cannot reach the GCS.
"""

from __future__ import annotations

import pytest

from tests.conftest import DATA, blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import RAY_GCS, advice_for
from vllm_guard.diagnose.details_settings import PERMISSION


@pytest.mark.parametrize(("prefix", "cls", "detail"), [
    ("b47-004", "version_mismatch", "gpu_arch"),
    ("b47-006", "too_few_gpus", None),
    ("b47-007", "usage_error", "permission"),
    ("b47-008", "usage_error", "permission"),
    ("b47-009", "network", "ray_gcs"),
])
def test_what_the_misses_taught(prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log("blind47", prefix))
    assert (d.cls, d.detail) == (cls, detail)


def test_the_numbers_and_advice() -> None:
    assert classify(blind_log("blind47", "b47-006")).numbers == {"world_size": 16, "gpus": 8}
    assert advice_for(classify(blind_log("blind47", "b47-007"))) is PERMISSION
    assert advice_for(classify(blind_log("blind47", "b47-009"))) is RAY_GCS


def test_a_permission_error_in_a_start_that_got_ready_is_no_failure() -> None:
    ready = next((DATA / "real-logs" / "startups").glob("013-*.log")).read_text().splitlines(keepends=True)
    ready.insert(20, "PermissionError: [Errno 13] Permission denied: '/root/.cache/flashinfer'\n")
    assert classify("".join(ready)).cls == "unknown"


def test_what_blind47_read_right_at_its_score() -> None:
    want = {"b47-001": "unknown", "b47-002": "network", "b47-003": "version_mismatch", "b47-005": "too_few_gpus",
            "b47-011": "version_mismatch"}
    assert {p: classify(blind_log("blind47", p)).cls for p in want} == want


def test_a_permission_warning_does_not_hide_the_failure_after_it() -> None:
    # a review's case: vLLM's usage-stats thread cannot write ~/.config under HOME=/ and the start goes on, then
    # fails on its KV cache
    kv = ("ValueError: To serve at least one request with the model's max seq len (32768), (4.00 GiB KV cache is "
          "needed, which is larger than the available KV cache memory (2.00 GiB).\n")
    stats = ("Exception in thread Thread-1 (_report_usage_worker):\n"
             "PermissionError: [Errno 13] Permission denied: '/.config'\n")
    assert classify(stats + kv).cls == "kv_cache_too_small"
    assert classify(stats).cls == "usage_error"


def test_rays_gcs_line_after_another_failure_is_not_the_cause() -> None:
    gcs = ("(raylet) [2024-01-01 00:00:00,000 E 1 1] gcs_rpc_client.h:179: Failed to connect to GCS within 60 seconds. "
           "GCS may have been killed.\n")
    assert classify("RuntimeError: some failure of the driver xyz\n" + gcs).cls == "unknown"
    assert classify(gcs).cls == "network"
