"""`explain` on blind31 (tests/data/real-logs/blind31), the thirty-first blind set of issue 26, after its one scoring.

Collected from vllm-project threads by a helper that never read the classifier, and scored once, whole, at commit
e000a91 (6 of 10 right, 1 confident error; README.md there). What its misses taught: an OOM raised inside a torch.nn
module's constructor is the model's construction (loading) even when the paste cut the frames above it, and
vllm-ascend's worker logging a KV budget of 0 bytes.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose import certainty, logread
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.markers import LOADING


def test_an_oom_in_a_modules_constructor_is_the_models_construction() -> None:
    # vllm-omni's diffusion worker: nn.Linear(dim, 6 * dim) -> torch.empty -> "torch.OutOfMemoryError: CUDA out of
    # memory. Tried to allocate 108.00 MiB ..." with the frames above QwenImageTransformer's __init__ cut
    d = classify(blind_log("blind31", "b31-008"))
    assert (d.cls, d.stage, d.stage_from) == ("oom_loading", "weight_loading", certainty.FRAMES)


def test_a_constructor_is_loading_only_when_no_frame_says_otherwise() -> None:
    init = logread.Frame("/usr/lib/python3.12/site-packages/torch/nn/modules/linear.py", "__init__")
    assert certainty.stage_of_frames([init]) == LOADING
    # a module built inside the profiling run (a sampler's buffer) is the profiling run's
    assert certainty.stage_of_frames([logread.Frame("/x/vllm/v1/worker/gpu_model_runner.py", "profile_run"), init]) \
        == "profiling"
    # any other __init__ says nothing
    assert certainty.stage_of_frames([logread.Frame("/x/vllm/v1/engine/core.py", "__init__")]) is None


def test_vllm_ascend_logging_no_memory_for_the_kv_cache() -> None:
    # every worker: "[worker_v1.py:259] Available memory: 0, total memory: 65452113920", then EngineCore's traceback
    # (cut before its message)
    d = classify(blind_log("blind31", "b31-010"))
    assert (d.cls, d.stage, d.numbers["total_bytes"], d.confidence) == ("no_kv_memory", "kv_cache", 65452113920,
                                                                        "medium")


def test_the_ascend_budget_is_a_warning_a_decisive_line_overrides() -> None:
    log = ("INFO 10-28 21:14:48 [worker_v1.py:259] Available memory: 0, total memory: 65452113920\n"
           "ERROR 10-28 21:14:49 [core.py:708] torch.OutOfMemoryError: NPU out of memory. Tried to allocate 2.00 GiB\n")
    assert classify(log).cls != "no_kv_memory"
    # a budget above 0 is not the failure
    assert classify("INFO [worker_v1.py:259] Available memory: 3221225472, total memory: 65452113920\n").cls \
        == "unknown"


def test_what_blind31_read_right_at_its_score() -> None:
    want = {"b31-001": "version_mismatch", "b31-002": "model_access", "b31-003": "unknown",
            "b31-005": "kv_cache_too_small", "b31-006": "too_few_gpus", "b31-009": "gpu_oom"}
    assert {p: classify(blind_log("blind31", p)).cls for p in want} == want
