"""`explain` on blind121 (tests/data/real-logs/blind121), a blind set of issue 26, after its one scoring.

Collected from forks and builds for GPUs the releases dropped by a helper that never read the classifier, and scored
once, whole, at 9cac5cf: 14 of 17, no confident error. Its three misses, each read from the source that writes it:
PyTorch's Inductor refusing a GPU older than Triton takes, and vLLM finding no platform because its own package
metadata is missing (a Pascal build installed so), twice.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_build import TRITON_CAPABILITY
from vllm_guard.diagnose.details_versions import VLLM_METADATA
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_a_gpu_older_than_triton_takes_runs_eager() -> None:
    # "RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU compiler, ... Triton only
    # supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.1"
    d = classify(blind_log("blind121", "b121-001"))
    assert (d.cls, d.detail, d.numbers) == ("version_mismatch", "triton_capability", {"current_capability": 6.1})
    assert advice_for(d) is TRITON_CAPABILITY
    # no ladder step: vLLM compiles functions of its own with Inductor even under --enforce-eager (with tensor
    # parallelism, MoE routing: platforms/interface.py simple_compile_backend), and this start ran with two GPUs (a
    # review's finding; a Pascal user reported the error staying under --enforce-eager)
    assert isinstance(next_step(d, Settings(max_model_len=4096)), Stop)
    assert not any("compiles nothing" in h for h in TRITON_CAPABILITY.helps)


def test_the_triton_refusal_cut_before_the_capability() -> None:
    d = classify("RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU compiler, which is "
                 "used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your devi\n")
    assert (d.cls, d.detail, d.numbers) == ("version_mismatch", "triton_capability", {})


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_no_platform_and_no_metadata_wrapped_by_a_terminal(width: int) -> None:
    # a review's finding: at 80 and 100 columns the two lines were not found, and the start read unknown
    text = blind_log("blind121", "b121-003")
    wrapped = "\n".join(part for line in text.splitlines() for part in (textwrap.wrap(line, width) or [""]))
    d = classify(wrapped + "\n")
    assert (d.cls, d.detail) == ("version_mismatch", "vllm_metadata")


@pytest.mark.parametrize("prefix", ["b121-002", "b121-003"])
def test_no_platform_because_vllms_own_metadata_is_missing(prefix: str) -> None:
    # "The vLLM package was not found, so its version could not be inspected. This may cause platform detection to
    # fail." then "No platform detected, vLLM is running on UnspecifiedPlatform"
    d = classify(blind_log("blind121", prefix))
    assert (d.cls, d.detail) == ("version_mismatch", "vllm_metadata")
    assert advice_for(d) is VLLM_METADATA


def test_what_blind121_read_right_at_its_score() -> None:
    assert classify(blind_log("blind121", "b121-008")).cls == "version_mismatch"
