"""`explain` on a module under vllm/ that the installed vLLM does not have (rules_versions.py, detail vllm_module).

Real logs: blind9/b9-006 (unsloth asking for vllm.transformers_utils.tokenizer, which vLLM 0.32 keeps as
vllm/tokenizers/), blind14/b14-009 (a 2023 model file's vllm.model_executor.parallel_utils.tensor_parallel),
blind14/b14-022 (a platform plugin's vllm.v1.attention), blind11/b11-015 and blind2/b022 (the CLI of a source tree
without its vllm/benchmarks package). A module one level down, vllm._C and a shadowing file are not this.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_versions import VLLM_MODULE
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("name", "prefix"), [("blind9", "b9-006"), ("blind14", "b14-009"), ("blind14", "b14-022"),
                                              ("blind11", "b11-015"), ("blind2", "b022")])
def test_a_missing_vllm_module_is_code_of_another_release(name: str, prefix: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "vllm_module", "high")
    assert advice_for(d) is VLLM_MODULE
    assert isinstance(next_step(d, Settings()), Stop)  # no setting of vLLM's brings a module back


@pytest.mark.parametrize("text", [
    # vllm.entrypoints and vllm.engine are in every release: a broken install, or a local vllm.py (blind13/b13-016,
    # blind8/b8-014, blind12/b12-012, each labelled unknown)
    "ModuleNotFoundError: No module named 'vllm.entrypoints'\n",
    "ModuleNotFoundError: No module named 'vllm.engine.arg_utils'; 'vllm' is not a package\n",
    # vLLM's non-CUDA builds warn about their compiled extension and go on
    "WARNING 08-31 15:52:50 _custom_ops.py:18] Failed to import from vllm._C with ModuleNotFoundError(\"No module "
    "named 'vllm._C'\")\n",
])
def test_not_a_module_of_another_release(text: str) -> None:
    assert classify(text).cls == "unknown", text


def test_a_start_that_got_ready_survived_it() -> None:
    # vLLM logs a plugin that fails to load, with its traceback, and goes on (vllm/plugins/__init__.py)
    text = ("ERROR 08-15 03:11:41 [__init__.py:1] ModuleNotFoundError: No module named 'vllm.v1.attention.backends'\n"
            "INFO 08-15 03:11:52 [launcher.py:1] Application startup complete.\n")
    assert classify(text).cls == "unknown"


# A CUDA OOM in loading, the decisive failure after a line vLLM 0.32 logs and goes on from
_OOM_AFTER = ("(EngineCore pid=9) ERROR 08-15 03:11:50 [core.py:1] Traceback (most recent call last):\n"
              "(EngineCore pid=9) ERROR 08-15 03:11:50 [core.py:1]   File \"/usr/lib/python3.12/site-packages/vllm/"
              "model_executor/model_loader/base_loader.py\", line 50, in load_model\n"
              "(EngineCore pid=9) ERROR 08-15 03:11:50 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried "
              "to allocate 2.00 GiB. GPU 0 has a total capacity of 23.54 GiB of which 1.02 GiB is free.\n"
              "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.\n")


@pytest.mark.parametrize("before", [
    # v1/attention/backends/fa_utils.py: FA2's compiled part missing, vLLM goes on with another backend
    "(EngineCore pid=9) ERROR 08-15 03:11:41 [fa_utils.py:211] Cannot use FA version 2 is not supported due to FA2 "
    "is unavailable due to: No module named 'vllm.vllm_flash_attn._vllm_fa2_C'\n",
    # plugins/__init__.py: a plugin that fails to import is logged and skipped
    "ERROR 08-15 03:11:41 [__init__.py:72] ModuleNotFoundError: No module named 'vllm_ascend.worker.model_runner'\n"
    "ERROR 08-15 03:11:41 [__init__.py:72] ModuleNotFoundError: No module named 'vllm.v1.worker.gpu_input_batch'\n",
])
def test_a_later_decisive_error_wins(before: str) -> None:
    d = classify(before + _OOM_AFTER)
    assert (d.cls, d.stage) == ("oom_loading", "weight_loading")


def test_the_engines_wrapper_after_it_does_not_count() -> None:
    text = ("(EngineCore pid=9) ERROR 08-15 03:11:41 [core.py:1] ModuleNotFoundError: No module named "
            "'vllm.v1.attention.backends.mla'\n(EngineCore pid=9) ERROR 08-15 03:11:41 [core.py:1] EngineCore failed "
            "to start.\n(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above.\n")
    assert (classify(text).cls, classify(text).detail) == ("version_mismatch", "vllm_module")
