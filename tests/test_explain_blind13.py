"""`explain` on blind13 (tests/data/real-logs/blind13), the thirteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 89f63d9 (20 of 31 right, two
confident errors; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: vLLM 0.2-0.6's `assert "factor" in rope_scaling` in its max-length check, and that a log ending in a crash
of compiled code (vLLM's own CUDA check in csrc, a segmentation fault) is no hang, even when the check it crashed in
is the custom all-reduce set-up whose silent stop is one.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


def test_a_rope_scaling_this_vllm_does_not_know_is_a_version_mismatch() -> None:
    # b13-010: Qwen2-VL from a pre-merge branch in docker; blind6/b6-011 is the same assert at another version
    for d in (classify(blind_log("blind13", "b13-010")), classify(blind_log("blind6", "b6-011"))):
        assert (d.cls, d.detail, d.stage) == ("version_mismatch", "rope_format", "before_start")
    step = next_step(classify(blind_log("blind13", "b13-010")), Settings())
    assert isinstance(step, Stop) and step.reason == NOT_RELAXABLE_DETAIL["rope_format"]


def test_the_assert_elsewhere_is_not_read() -> None:
    # another assert of the same function, and the words in a sentence, are not this check
    assert classify('    assert "factor" in scaling\nAssertionError\n').cls == "unknown"
    assert classify("rope_scaling has no factor, I think\n").cls == "unknown"


def test_the_assert_in_a_code_listing_is_not_the_failure() -> None:
    # The assert's line as b13-010 quotes it, pasted as code (an issue quoting vLLM's config.py), then its next
    # line: no AssertionError follows, so nothing was raised. With Python 3.11's carets and the bare
    # AssertionError (b13-010's own lines, Docker's prefix read off) it is the traceback again.
    listing = ('        if rope_scaling is not None and rope_scaling["type"] != "su":\n'
               '            assert "factor" in rope_scaling\n'
               '            scaling_factor = rope_scaling["factor"]\n')
    assert classify(listing).cls == "unknown"
    raised = "".join(line for line in blind_log("blind13", "b13-010").splitlines(keepends=True)[10:13])
    assert raised.endswith("AssertionError\n") and classify(raised).detail == "rope_format"


@pytest.mark.parametrize("crash", [
    "Failed: Cuda error /home/u/vllm/csrc/custom_all_reduce.cuh:417 'resource already mapped'",
    "Segmentation fault (core dumped)",
    "Aborted",
])
def test_a_log_that_ends_in_a_crash_is_no_hang(crash: str) -> None:
    # b13-018's shape: the custom all-reduce set-up named in the last lines, then the crash, then nothing
    log = ("INFO 01-10 10:00:00 custom_all_reduce_utils.py:232] reading GPU P2P access cache from "
           "/root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json\n" + crash + "\n")
    # (the custom all-reduce's own CUDA failure is read as such since blind49: network, custom_allreduce)
    assert classify(log).cls == ("network" if "custom_all_reduce" in crash else "unknown")
    without = log.replace(crash + "\n", "")
    assert classify(without).cls == "startup_hang"  # the same log without the crash: the silent stop it reads


def test_blind13s_custom_all_reduce_crash() -> None:
    # labelled unknown; read since blind49/b49-009 as what vLLM's CUDACHECK says (a confident error kept in
    # KNOWN_CONFIDENT_ERRORS: the remedy, --disable-custom-all-reduce, is the same either way)
    d = classify(blind_log("blind13", "b13-018"))
    assert (d.cls, d.detail) == ("network", "custom_allreduce")
