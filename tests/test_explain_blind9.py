"""`explain` on blind9 (tests/data/real-logs/blind9), the ninth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit e43b5c2 (19 of 38 right, two
confident errors; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: vLLM's weight loader naming a checkpoint weight its class lacks, Ray Serve's unschedulable replica, the
OpenAI server's classes and init_app_state as entry points other programs call, an exception class re-raised by
vLLM is not a library's signature, and a process without the NVIDIA driver's library.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("prefix", "cls", "detail", "confidence"), [
    ("b9-008", "too_few_gpus", None, "high"),  # Ray Serve: a GPU replica, total resources available: {}
    ("b9-012", "version_mismatch", "vllm_api", "medium"),  # BentoVLLM passes served_model= to OpenAIServingCompletion
    ("b9-023", "too_few_gpus", "no_gpu", "medium"),  # no platform and no libcuda.so.1 in the pod
    ("b9-030", "version_mismatch", "vllm_api", "medium"),  # Ray's OpenAI app calls init_app_state(vllm_config=)
])
def test_what_blind9_taught(prefix: str, cls: str, detail: str | None, confidence: str) -> None:
    d = classify(blind_log("blind9", prefix))
    assert (d.cls, d.detail, d.confidence) == (cls, detail, confidence)
    assert d.template


def test_an_exception_class_vllm_reraises_is_not_a_library_signature() -> None:
    # b9-014: vLLM 0.6's model_runner_base.py "raise type(err)(...)" on torch's BackendCompilerFailed (its label:
    # unknown, the compiler's own error is outside the excerpt)
    assert classify(blind_log("blind9", "b9-014")).cls == "unknown"


def test_multiple_values_for_an_argument_on_a_call_from_vllm() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/multimodal/processing.py", line 1000, in '
            "_get_hf_processor\n"
            "    return processor_cls(image_processor, tokenizer, image_processor=image_processor)\n"
            "TypeError: Qwen2_5_VLProcessor.__init__() got multiple values for argument 'image_processor'\n")
    d = classify(text)
    assert (d.cls, d.detail) == ("version_mismatch", "python_package")


RAY_SERVE = ('{"levelname": "WARNING", "message": "deployment_state.py:2152 - Deployment \'VLLMDeployment:m\' in '
             "application 'ray-llm' 1 replicas that have taken more than 30s to be scheduled. This may be due to "
             'waiting for the cluster to auto-scale. Resources required for each replica: [{\\"CPU\\": 1.0, '
             '\\"GPU\\": 1.0}], total resources available: {AVAILABLE}. Use `ray status` for more details."}')


def test_a_replica_waiting_while_gpus_are_there_is_not_too_few_gpus() -> None:
    assert classify(RAY_SERVE.replace("AVAILABLE", "") + "\n").cls == "too_few_gpus"
    with_gpu = RAY_SERVE.replace("AVAILABLE", '\\"CPU\\": 8.0, \\"GPU\\": 2.0')
    assert classify(with_gpu + "\n").cls == "unknown"
    # the replica was scheduled after the warning and the server came up
    assert classify(RAY_SERVE.replace("AVAILABLE", "") + "\nINFO:     Application startup complete.\n").cls == "unknown"


def test_no_platform_alone_stays_a_hint() -> None:
    # a build for another platform and a process given no GPU both print it (blind5/b5-040, blind6/b6-009)
    d = classify("INFO 02-10 02:49:17 [__init__.py:220] No platform detected, vLLM is running on UnspecifiedPlatform\n"
                 "RuntimeError: Device string must not be empty\n")
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "version_mismatch")
