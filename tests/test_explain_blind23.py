"""`explain` on blind23 (tests/data/real-logs/blind23), the twenty-third blind set of issue 26, after its one scoring.

Collected from threads of the vllm-project organisation by a helper that never read the classifier, and scored once,
whole, at commit 9ca3efa (15 of 25 right, no confident error; tests/data/real-logs/README.md). What its misses
taught: XLA's out-of-memory words on TPU, tpu-inference refusing an architecture, vLLM's engine-start timeout cut at
its raise line, vllm-ascend's quantization lookup of a layer its checkpoint does not describe, and vLLM-Omni's
version warning.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_versions import PLUGIN_VERSION
from vllm_guard.diagnose.ladder import Settings, Stop, next_step

HEAD = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"


@pytest.mark.parametrize(("prefix", "cls", "detail"), [
    ("b23-003", "gpu_oom", None),  # TPU: "RESOURCE_EXHAUSTED: Error loading program: Attempting to reserve 1.04G"
    ("b23-011", "unsupported_architecture", None),  # tpu-inference's UnsupportedArchitectureError
    ("b23-014", "quant_unsupported", None),  # KeyError raised in vllm-ascend's is_layer_skipped_ascend
    ("b23-018", "version_mismatch", "plugin_version"),  # vLLM-Omni 0.24.0 on vLLM 0.25.1, the error cut off
    ("b23-020", "startup_timeout", None),  # the paste ends at core_client.py's raise line
])
def test_what_blind23s_misses_taught(prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log("blind23", prefix))
    assert (d.cls, d.detail) == (cls, detail)


@pytest.mark.parametrize("line", [
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00G.",
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory in memory space "
    "hbm. Used 32.08G of 31.25G hbm.",
    # XLA's own example for error code 1000, and the allocator's words on TPU
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
    "space hbm. Used 35.83G of 31.25G hbm.",
    "RuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate 3.98G. That was not possible. There are 3.97G free.",
])
def test_xlas_other_out_of_memory_words_are_an_oom(line: str) -> None:
    assert classify(HEAD + line + "\n").cls == "gpu_oom"


def test_tpu_inferences_fallback_warning_is_not_a_failure() -> None:
    # the warning form: tpu-inference goes on with vLLM's PyTorch class
    text = (HEAD + "WARNING 05-01 10:00:01 [model_loader.py:1] Model architectures ['MistralForCausalLM'] not "
            "registered in tpu-inference. Falling back to vLLM-native Pytorch definition.\n"
            "INFO 05-01 10:01:00 [launcher.py:1] Application startup complete.\n")
    assert classify(text).cls == "unknown"


@pytest.mark.parametrize("line", [
    # older tpu-inference: its Flax class failed, and it goes on with vLLM's own
    "WARNING 05-01 10:00:01 [model_loader.py:1] Flax model failed with: 'Model architectures ['Gemma3ForCausalLM'] "
    "are not supported for now. Supported architectures: [...]'. Falling back to vLLM implementation.",
    "WARNING 05-01 10:00:01 [model_loader.py:1] Model architectures ['MistralForCausalLM'] not registered in "
    "tpu-inference. Falling back to vLLM-native Pytorch definition.",
])
def test_a_tpu_fallback_note_is_not_the_failure(line: str) -> None:
    oom = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate 3.98G. That was not possible.\n"
    assert classify(HEAD + line + "\n" + oom).cls == "gpu_oom"
    assert classify(HEAD + line + "\n").cls == "unknown"


@pytest.mark.parametrize(("end", "cls"), [("vllm exited with code -9\n", "unknown"),  # a SIGKILL: the OOM killer first
                                          ("vllm exited with code -7\n", "shm_exhausted")])  # a SIGBUS
def test_the_omni_warning_yields_to_how_the_start_ended(end: str, cls: str) -> None:
    warning = ("/venv/lib/python3.12/site-packages/vllm_omni/version.py:55: RuntimeWarning: vLLM and vLLM-Omni "
               "appear to have mismatched major/minor versions:\n")
    assert classify(warning).cls == "version_mismatch"
    assert classify(warning + end, exit_status=int(end.rsplit(maxsplit=1)[-1])).cls == cls


def test_the_omni_warning_yields_to_a_decisive_error() -> None:
    warning = ("/venv/lib/python3.12/site-packages/vllm_omni/version.py:55: RuntimeWarning: vLLM and vLLM-Omni "
               "appear to have mismatched major/minor versions:\n --> vLLM-Omni version 0.24.0\n --> vLLM version "
               "0.25.1\n")
    d = classify(warning)
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "plugin_version", "medium")
    assert advice_for(d) is PLUGIN_VERSION and isinstance(next_step(d, Settings()), Stop)
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 8 "
           "GiB\n")
    assert classify(warning + oom).cls != "version_mismatch"
    ready = warning + "INFO 05-01 10:01:00 [launcher.py:1] Application startup complete.\n"
    assert classify(ready).cls == "unknown"


@pytest.mark.parametrize(("prefix", "cls"), [
    ("b23-001", "no_kv_memory"), ("b23-002", "gpu_oom"), ("b23-004", "quant_unsupported"), ("b23-008", "gpu_busy"),
    ("b23-010", "unsupported_architecture"), ("b23-013", "version_mismatch"), ("b23-017", "version_mismatch"),
    ("b23-019", "gpu_oom"), ("b23-022", "tp_indivisible"), ("b23-023", "startup_hang"), ("b23-006", "unknown"),
    ("b23-009", "unknown"), ("b23-012", "unknown"), ("b23-015", "unknown"), ("b23-021", "unknown")])
def test_what_blind23_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind23", prefix)).cls == cls
