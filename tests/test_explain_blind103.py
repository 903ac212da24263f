"""`explain` on blind103 (4 of 7 at 0fb538c, AMD Instinct and ROCm), blind104 (2 of 3 at 68c1a47, HPC clusters) and
blind105 (2 of 3 at 68c1a47, managed cloud ML services), each scored once (README.md in each). What their misses
taught: ROCm's "invalid device function" is CUDA's "no kernel image" (no code for the GPU's gfx target); vLLM's
"cannot import name 'current_platform'" is its platform detection failing, not another release (a candidate that
names the device files amdsmi could not read); Ray refusing Slurm's ROCR_VISIBLE_DEVICES; FlashInfer's JIT without
a CUDA toolkit."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for


@pytest.mark.parametrize(("folder", "prefix"), [("blind103", "b103-002"), ("blind80", "b80-002")])
def test_hips_invalid_device_function(folder: str, prefix: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail) == ("version_mismatch", "hip_gpu_arch")
    assert any("rocminfo" in h for h in advice_for(d).helps)


def test_an_unresolved_platform_is_no_other_release() -> None:
    # amdsmi's FILE_ERROR, then vLLM's lazily resolved current_platform: a service user without the render group
    d = classify(blind_log("blind103", "b103-007"))
    assert d.cls == "unknown"
    assert d.hint is not None and d.hint[0] == "usage_error" and "/dev/dri" in d.hint[1]


def test_another_name_from_vllm_still_reads_as_another_release() -> None:
    d = classify("ImportError: cannot import name 'SamplingParams' from 'vllm.sampling_params'\n")
    assert d.detail == "python_package"


@pytest.mark.parametrize(("prefix", "cls"), [("b103-001", "unknown"), ("b103-003", "unknown"),
                                             ("b103-005", "unknown"), ("b103-006", "unknown")])
def test_what_blind103_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind103", prefix)).cls == cls


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail", "helps"), [
    ("blind104", "b104-003", "usage_error", "rocr_visible_devices", "HIP_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES"),
    ("blind105", "b105-002", "version_mismatch", "nvcc_missing", "CUDA toolkit"),
    ("blind17", "b17-004", "version_mismatch", "nvcc_missing", "CUDA toolkit"),
])
def test_what_blind104s_and_blind105s_misses_read_now(folder: str, prefix: str, cls: str, detail: str,
                                                       helps: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert any(helps in h for h in advice_for(d).helps)


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind104", "b104-001", "too_few_gpus"), ("blind104", "b104-002", "version_mismatch"),
    ("blind105", "b105-001", "no_kv_memory"), ("blind105", "b105-003", "unknown"),
])
def test_what_blind104_and_blind105_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls
