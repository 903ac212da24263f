"""`explain` on blind16 (tests/data/real-logs/blind16), the sixteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 916eb97 (9 of 12 right, no
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: vLLM 0.6.5-0.9's profiling summary says a negative KV budget before the raise a paste often cuts, and that
budget holds no CUDA-graph memory (the graphs are captured after the KV cache is sized), so eager mode is no fix;
and the kubelet's own words when a startup probe gives up, which one failed probe is not.
"""

from __future__ import annotations

import pytest

from tests.conftest import DATA, blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Step, Stop, next_step


def test_a_negative_kv_budget_in_the_profiling_summary_is_no_kv_memory() -> None:
    # b16-004: Qwen2.5-7B on an 8 GB RTX 4060 at 0.70, V0 0.7: "... reserved for KV Cache is -1.05GiB", "# cuda
    # blocks: 0", then a traceback cut before vLLM's "No available memory for the cache blocks"
    d = classify(blind_log("blind16", "b16-004"))
    assert (d.cls, d.detail, d.stage, d.numbers) == ("no_kv_memory", "before_graphs", "kv_cache",
                                                     {"available_kv_gib": -1.05})
    assert not any("enforce-eager" in helps for helps in advice_for(d).helps)


@pytest.mark.parametrize("startup", ["037-qwen2-vl-7b-instruct-awq.log", "038-gemma-3-27b-it.log"])
def test_the_same_summary_with_a_budget_left_is_no_failure(startup: str) -> None:
    # real starts of the same vLLM generation that print the summary with a positive figure
    assert classify((DATA / "real-logs" / "startups" / startup).read_text()).cls == "unknown"


def test_eager_mode_is_never_the_step_for_a_budget_without_cuda_graphs() -> None:
    d = classify(blind_log("blind16", "b16-004"))
    step = next_step(d, Settings(max_num_batched_tokens=4096))
    assert isinstance(step, Step) and (step.param, step.value) == ("max-num-batched-tokens", 2048)
    assert isinstance(next_step(d, Settings()), Stop)  # the log shows no batch size to halve: say what to set
    smallest = next_step(d, Settings(max_num_batched_tokens=1, max_num_seqs=1))
    assert isinstance(smallest, Stop) and "no CUDA-graph memory" in smallest.reason


# b16-002's own line (KubeAI, gemma-2-2b-it): one failed startup probe, while the start may still go on
PROBE_FAILED = ('Startup probe failed: Get "http://10.244.0.208:8000/health": dial tcp 10.244.0.208:8000: connect: '
                'connection refused\n')
# the kubelet's event when the probe's failureThreshold is used up, as `kubectl describe pod` prints it
KILLED = "  Normal   Killing    24s (x3 over 13m)  kubelet  Container vllm failed startup probe, will be restarted\n"


def test_the_kubelet_giving_up_on_a_start_is_a_startup_timeout() -> None:
    assert classify(blind_log("blind16", "b16-002")).cls == "unknown"
    d = classify(PROBE_FAILED + KILLED)
    assert (d.cls, d.detail) == ("startup_timeout", "startup_probe")
    step = next_step(d, Settings())  # the kubelet restarts the pod: no unchanged retry by the guard
    assert isinstance(step, Stop) and step.reason == NOT_RELAXABLE_DETAIL["startup_probe"]
    assert classify("Container vllm failed liveness probe, will be restarted\n").cls == "unknown"
