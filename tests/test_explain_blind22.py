"""`explain` on blind22 (tests/data/real-logs/blind22), the twenty-second blind set of issue 26, after its one scoring.

Collected from issue threads by a helper that never read the classifier, and scored once, whole, at commit ee58a63
(11 of 15 right, 1 confident error; tests/data/real-logs/README.md). What its misses taught: the kernel's OOM line
with the pid elided, and PyTorch refusing CUDA in a forked child.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import FORK_CUDA, advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_the_kernels_oom_line_without_its_pid() -> None:
    # b22-013: "Out of memory: Killed process (VLLM::Worker_TP)", the reporter's abridged dmesg line
    d = classify(blind_log("blind22", "b22-013"))
    assert (d.cls, d.numbers["process"]) == ("host_oom", "VLLM::Worker_TP")


@pytest.mark.parametrize(("name", "prefix"), [("blind22", "b22-008"), ("blind11", "b11-006")])
def test_cuda_initialised_before_the_fork_is_a_usage_error(name: str, prefix: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "fork_cuda", "high")
    assert advice_for(d) is FORK_CUDA and "VLLM_WORKER_MULTIPROC_METHOD=spawn" in FORK_CUDA.helps[0]
    assert isinstance(next_step(d, Settings()), Stop)


@pytest.mark.parametrize(("prefix", "cls"), [("b22-001", "kv_cache_too_small"), ("b22-004", "dtype_unsupported"),
                                             ("b22-007", "tp_indivisible"), ("b22-009", "unsupported_architecture"),
                                             ("b22-010", "remote_code_required"), ("b22-015", "usage_error"),
                                             ("b22-003", "unknown"), ("b22-005", "unknown"), ("b22-006", "unknown"),
                                             ("b22-012", "unknown"), ("b22-014", "unknown")])
def test_what_blind22_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind22", prefix)).cls == cls
