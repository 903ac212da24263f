"""`explain` on an installed package importing a module that is not installed (fallback.py, detail package_missing),
and on sleep mode without the compiled allocator it needs (detail sleep_allocator).

Real logs: blind27/b27-008 (xgrammar's kernels importing triton on a TPU host, vLLM 0.7 V1) and blind23/b23-005
(vllm-ascend's worker importing its compiled custom_ops, not built in that image), both labelled version_mismatch by
their collectors. A user's own script, vLLM itself missing, transformers' remote-code package and an import vLLM went
on after are not this.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_versions import PACKAGE_MISSING, SLEEP_ALLOCATOR
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("name", "prefix", "importer"), [
    ("blind27", "b27-008", "xgrammar/kernels/apply_token_bitmask_inplace_triton.py"),
    ("blind23", "b23-005", "vllm_ascend/worker/worker_v1.py"),
])
def test_an_installed_package_imports_what_is_not_installed(name: str, prefix: str, importer: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "package_missing", "medium")
    assert importer in d.evidence[1]
    assert advice_for(d) is PACKAGE_MISSING and isinstance(next_step(d, Settings()), Stop)


def _traceback(path: str, module: str, after: str = "") -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "{path}", line 4, in <module>\n'
            f"    import {module}\n"
            f"ModuleNotFoundError: No module named '{module}'\n{after}")


SITE = "/usr/lib/python3.12/site-packages/xgrammar/kernels/k.py"


@pytest.mark.parametrize("text", [
    # a user's own script lacking what it imports: not an install's fault, also in a folder named like a plugin
    _traceback("/home/u/serve_model.py", "flash_attn"),
    _traceback("/home/u/vllm_demo/serve.py", "openai"),
    # vLLM's plugin loader logs a plugin it cannot import and goes on (plugins/__init__.py)
    "ERROR 05-01 10:00:01 [__init__.py:44] Failed to load plugin lmcache_plugin\n"
    + _traceback("/usr/lib/python3.12/site-packages/someplugin/__init__.py", "lmcache"),
    # the start's progress went on past the import
    _traceback(SITE, "triton", "INFO 05-01 10:00:05 [gpu_model_runner.py:1] Starting to load model /m...\n"),
    # vLLM not installed where the program ran (blind11/b11-029, blind17/b17-013: labelled unknown), and a module of
    # vLLM's own (read by rules_versions.py where it is one)
    _traceback("/usr/lib/python3.12/site-packages/openrlhf/trainer/ray/vllm_engine.py", "vllm"),
    _traceback("/usr/lib/python3.12/site-packages/openrlhf/trainer/ray/vllm_engine.py", "vllm.entrypoints"),
    # transformers' package for remote code, written by another process at the same time (blind11/b11-001)
    _traceback("/usr/lib/python3.12/site-packages/transformers/dynamic_module_utils.py", "transformers_modules"),
    # an import a library caught, with another error after it
    _traceback(SITE, "triton", "RuntimeError: CUDA error: an illegal memory access was encountered\n"),
    # after the server was ready
    "INFO 03-11 13:30:00 [api_server.py:1] Application startup complete.\n" + _traceback(SITE, "triton"),
    # the line alone: no frame says who imported it
    "ModuleNotFoundError: No module named 'triton'\n",
])
def test_not_a_package_left_out_of_an_install(text: str) -> None:
    assert classify(text).detail != "package_missing", text


def test_the_same_import_from_an_installed_package_is_read() -> None:
    d = classify(_traceback(SITE, "triton"))
    assert (d.cls, d.detail) == ("version_mismatch", "package_missing")


def test_sleep_mode_without_its_compiled_allocator() -> None:
    # vllm-ascend v0.7.3-dev built without COMPILE_CUSTOM_KERNELS, LLM(enable_sleep_mode=True) under TRL:
    # "[rank12]:     assert camem_available, \"camem allocator is not available\"" (the paste's one line)
    d = classify(blind_log("blind27", "b27-002"))
    assert (d.cls, d.detail) == ("version_mismatch", "sleep_allocator")
    assert advice_for(d) is SLEEP_ALLOCATOR and isinstance(next_step(d, Settings()), Stop)
    # vLLM 0.32's own words for a platform with no sleep-mode allocator at all: the setting, not the build
    d = classify("RuntimeError: Sleep mode allocator is not available on platform CpuPlatform (device_type=cpu).\n")
    assert (d.cls, d.detail) == ("usage_error", "sleep_mode_platform")


def test_a_logged_import_failure_does_not_hide_a_hang() -> None:
    # found by a review: a plugin import vLLM logged and went on from, in a start that then hung in the P2P check
    hang = blind_log("hangs", "h05")
    first, rest = hang.split("\n", 1)
    plugin = ("ERROR 05-01 10:00:01 [__init__.py:44] Failed to load plugin lmcache_plugin\n"
              + _traceback(SITE, "lmcache"))
    assert classify(f"{first}\n{plugin}{rest}").cls == classify(hang).cls == "startup_hang"


def test_one_ranks_missing_import_is_not_hidden_by_the_others_waiting() -> None:
    # found by a review: rank 1 dies importing triton, rank 0 waits on the message queue
    rank1 = "(VllmWorker rank=1 pid=4243) ERROR 05-01 10:00:05 [multiproc_executor.py:1] "
    log = ("INFO 05-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.9.1) with config: model='m'\n"
           + "".join(rank1 + x + "\n" for x in (
               "WorkerProc failed to start.", "Traceback (most recent call last):",
               '  File "/usr/lib/python3.12/site-packages/xgrammar/kernels/k.py", line 3, in <module>',
               "    import triton", "ModuleNotFoundError: No module named 'triton'"))
           + "(VllmWorker rank=0 pid=4242) INFO 05-01 10:01:05 [shm_broadcast.py:1] No available shared memory "
             "broadcast block found in 60 second.\n" * 2)
    assert classify(log).detail == "package_missing"
