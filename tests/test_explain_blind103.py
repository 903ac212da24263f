"""`explain` on blind103 (4 of 7 at 0fb538c, AMD Instinct and ROCm), scored once (README.md there). What its misses
taught: ROCm's "invalid device function" is CUDA's "no kernel image" (no code for the GPU's gfx target), and vLLM's
"cannot import name 'current_platform'" is its platform detection failing, not another release: a candidate that
names the device files amdsmi could not read."""

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
