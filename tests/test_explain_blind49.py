"""`explain` on blind49 and blind50 (tests/data/real-logs/), the forty-ninth and fiftieth blind sets of issue 26, after
their one scoring.

blind49 was collected from vLLM's threads by how users title their failed starts, blind50 from the other
vllm-project repositories' threads, each by a helper that never read the classifier, both scored once, whole, at
commit 038c80f (7 of 9, 1 confident error; 5 of 9, none; README.md in each). What their misses taught: vLLM's own
layers' constructors place an OOM in loading; vLLM's custom all-reduce failing its CUDA IPC call; HCCL's port held by
another process; vllm-ascend's graph capture quoted by V1's wrapper with its prefix cut.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_platforms import HCCL_PORT
from vllm_guard.diagnose.details_settings import CUSTOM_ALLREDUCE
from vllm_guard.diagnose.ladder import Settings, Stop, next_step
from vllm_guard.diagnose.markers import LOADING


def test_an_oom_in_vllms_own_layer_constructor_is_loading() -> None:
    # vLLM 0.1.2: LlamaAttention.__init__ -> ColumnParallelLinear.__init__ -> torch.empty: CUDA out of memory
    d = classify(blind_log("blind49", "b49-001"))
    assert (d.cls, d.stage) == ("oom_loading", LOADING)


def test_a_constructor_under_a_forward_pass_is_not_loading() -> None:
    # a review's case: a layer built during a dummy forward pass, after loading finished
    text = ("INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 14.0 GiB and 9.0 seconds\n"
            "Traceback (most recent call last):\n"
            '  File "/v/vllm/model_executor/models/llama.py", line 400, in forward\n'
            '  File "/v/vllm/model_executor/layers/fused_moe/utils.py", line 30, in __init__\n'
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.00 GiB is free.\n")
    assert classify(text).stage != LOADING


def test_custom_all_reduce_failing_its_cuda_call() -> None:
    d = classify(blind_log("blind49", "b49-009"))
    assert (d.cls, d.detail) == ("network", "custom_allreduce") and advice_for(d) is CUSTOM_ALLREDUCE
    # not the ladder's step: its disable-custom-all-reduce also sets NCCL_P2P_DISABLE (for a P2P hang), which a
    # failed CUDA IPC call does not call for (a review's finding); the advice names the flag
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and "disable-custom-all-reduce" in stop.reason


def test_custom_all_reduce_words_that_are_not_its_failure() -> None:
    line = "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 '{}'\n"
    # CUDA's sticky errors are reported by the next checked call, whichever kernel caused them
    assert classify(line.format("an illegal memory access was encountered")).cls == "unknown"
    # after the server was ready it is a request's failure, not the start's
    ready = "INFO:     Application startup complete.\n"
    assert classify(ready + line.format("invalid argument")).cls == "unknown"


def test_hccls_port_held_by_another_process() -> None:
    for prefix in ("b50-006", "b50-008"):
        d = classify(blind_log("blind50", prefix))
        assert (d.cls, d.detail) == ("port_in_use", "hccl_port") and advice_for(d) is HCCL_PORT, prefix
        assert isinstance(next_step(d, Settings()), Stop)
    assert classify(blind_log("blind50", "b50-008")).numbers == {"port": 16666}


def test_acl_graph_capture_quoted_with_its_prefix_cut() -> None:
    assert classify(blind_log("blind50", "b50-004")).cls == "oom_cudagraph"


def test_what_they_read_right_at_their_score() -> None:
    want = {"b49-002": "gpu_oom", "b49-003": "unknown", "b49-004": "no_kv_memory",
            "b49-006": "unknown", "b49-007": "kv_cache_too_small",
            "b49-008": "kv_cache_too_small"}
    assert {p: classify(blind_log("blind49", p)).cls for p in want} == want
    want = {"b50-002": "model_access", "b50-003": "unknown", "b50-005": "version_mismatch", "b50-007": "unknown",
            "b50-009": "unknown"}
    assert {p: classify(blind_log("blind50", p)).cls for p in want} == want
