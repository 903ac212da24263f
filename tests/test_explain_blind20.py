"""`explain` on blind20 (tests/data/real-logs/blind20), the twentieth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier, byte-exact from logs committed to public repositories, and
scored once, whole, at commit 6e1f7de (3 of 12 right, 1 confident error; tests/data/real-logs/README.md). What its
misses taught, each from the program that writes the message: a disk quota (EDQUOT) is a full disk for the writer,
vLLM's NUMA binding without a topology to read, Triton without a C compiler, numba refusing the installed NumPy,
and a compressed-tensors release without a module vLLM imports.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import DISK_QUOTA, NUMA_BIND, advice_for
from vllm_guard.diagnose.details_build import NO_C_COMPILER
from vllm_guard.diagnose.details_versions import NUMBA_NUMPY, PYTHON_PACKAGE
from vllm_guard.diagnose.knowledge import Advice
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_a_disk_quota_is_a_full_disk_with_its_own_advice() -> None:
    # b20-001: torch.compile's cache under ~/.cache/vllm on a cluster's home filesystem, "OSError: [Errno 122] Disk
    # quota exceeded", surfacing as "Failed to run autotuning code block"
    d = classify(blind_log("blind20", "b20-001"))
    assert (d.cls, d.detail, d.confidence) == ("disk_full", "quota", "high")
    assert advice_for(d) is DISK_QUOTA and "VLLM_CACHE_ROOT" in DISK_QUOTA.helps[0]
    assert isinstance(next_step(d, Settings()), Stop)


def test_numa_binding_without_a_topology_is_an_option_to_change() -> None:
    # b20-002: `--numa-bind` under Slurm, vLLM's utils/numa_utils.py could not map the GPUs to NUMA nodes
    d = classify(blind_log("blind20", "b20-002"))
    assert (d.cls, d.detail, d.confidence, d.stage) == ("usage_error", "numa_bind", "high", "before_start")
    assert advice_for(d) is NUMA_BIND


def test_triton_without_a_c_compiler_says_to_install_one() -> None:
    # b20-004: "RuntimeError: Failed to find C compiler. Please specify via CC environment variable." from
    # triton/runtime/build.py in the engine's first Triton kernel
    d = classify(blind_log("blind20", "b20-004"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "no_c_compiler", "high")
    assert advice_for(d) is NO_C_COMPILER and any("gcc" in h for h in NO_C_COMPILER.helps)


@pytest.mark.parametrize(("name", "detail", "advice"), [
    # "No module named 'compressed_tensors.compressors.pack_quantized'": vLLM imports a module the installed
    # compressed-tensors does not have
    ("b20-008", "python_package", PYTHON_PACKAGE),
    # numba's import check: "Numba needs NumPy 2.2 or less. Got NumPy 2.4."
    ("b20-010", "numba_numpy", NUMBA_NUMPY),
])
def test_a_package_release_that_does_not_fit_is_a_version_mismatch(name: str, detail: str, advice: Advice) -> None:
    d = classify(blind_log("blind20", name))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", detail, "high")
    assert advice_for(d) is advice


def test_a_start_that_got_ready_survived_the_warning() -> None:
    # numba's refusal and Triton's missing compiler in a log whose server then came up: not the failure
    for line in ("ImportError: Numba needs NumPy 2.2 or less. Got NumPy 2.3.",
                 "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."):
        text = (f"INFO 08-15 03:11:40 [api_server.py:1] vLLM API server version 0.10.1\nWARNING 08-15 03:11:41 "
                f"[utils.py:1] {line}\nINFO 08-15 03:11:52 [launcher.py:1] Application startup complete.\n")
        assert classify(text).cls == "unknown", line


def test_the_package_rules_stay_on_their_packages() -> None:
    # a missing top-level package is not another release of it (a module under vllm/ is read by its own rule:
    # tests/test_explain_vllm_module.py)
    # (since blind91, the line alone reads as a module to install, module_missing, not as another release of it)
    assert classify("ModuleNotFoundError: No module named 'compressed_tensors'\n").detail == "module_missing"
