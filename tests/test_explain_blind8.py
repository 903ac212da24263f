"""`explain` on blind8 (tests/data/real-logs/blind8), the eighth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit d5d3528 (27 of 40 right, one
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: xoscar's address tag inside Xinference's errors, Python's qualified names in binding errors, a binding
error on a call from vLLM's own code (a library at another release), torch.distributed's store failing to bind an
internal port, PyTorch's mmap refused by the host, vLLM 0.9's "Cannot find model module", 0.8.5's "Could not detect
config format" and a platform's settings check.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Step, Stop, next_step


@pytest.mark.parametrize(("name", "prefix", "cls", "detail"), [
    ("blind8", "b8-004", "port_in_use", "internal_port"),  # ROLL: TCPStore EADDRINUSE on port 40005
    ("collected", "c023", "port_in_use", "internal_port"),  # vLLM #11617: the same, relabelled
    ("blind8", "b8-008", "version_mismatch", "python_package"),  # vLLM's qwen3_5.py calls transformers' validator
    ("blind8", "b8-024", "version_mismatch", "vllm_api"),  # Xinference passes limit_mm_per_prompt to AsyncEngineArgs
    ("blind3", "b3-027", "version_mismatch", "vllm_api"),  # OpenRLHF passes worker_use_ray to EngineArgs (0.7)
    ("blind8", "b8-009", "unsupported_architecture", None),  # vLLM 0.9.1: MiniMaxM1ForCausalLM
    ("blind8", "b8-029", "model_access", "config_missing"),  # vLLM 0.8.5: /models without config.json
    ("blind8", "b8-030", "usage_error", "config_check"),  # vLLM 0.10.1 CPU: "CPU backend only supports V1."
    ("blind8", "b8-034", "host_oom", "mmap_enomem"),  # a 16.9 GB shard the host would not map
])
def test_what_blind8_taught(name: str, prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert d.template


def test_an_internal_port_is_retried_once_and_never_moves_the_api_port() -> None:
    d = classify(blind_log("blind8", "b8-004"))
    s = Settings(max_model_len=4096)
    first = next_step(d, s)
    assert isinstance(first, Step) and first.param is None  # unchanged: vLLM picks its ports afresh each start
    assert isinstance(next_step(d, s, unchanged_retries=1), Stop)
    assert any("--port" in line for line in advice_for(d).does_not_help)


def test_the_mmap_refusal_keeps_its_size() -> None:
    d = classify(blind_log("blind8", "b8-034"))
    assert d.numbers["mmap_bytes"] == 16933256392 and d.stage == "weight_loading"


def test_xoscars_tag_is_read_past_and_nothing_else() -> None:
    text = ("TypeError: [address=0.0.0.0:37737, pid=1025864] AsyncEngineArgs.__init__() got an unexpected keyword "
            "argument 'limit_mm_per_prompt'\n")
    without = "TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'limit_mm_per_prompt'\n"
    assert classify(text).evidence == classify(without).evidence
    # a bracket that is not xoscar's stays
    kept = "ERROR [address=somewhere] RuntimeError: No CUDA GPUs are available\n"
    assert "[address=somewhere]" in classify(kept).evidence[0]


@pytest.mark.parametrize("path", [
    # a framework's module named vllm is not vLLM's own code
    "/opt/conda/lib/python3.10/site-packages/xinference/model/llm/vllm/core.py",
    "/srv/app/train.py",
])
def test_a_binding_error_outside_vllm_is_not_a_library_version(path: str) -> None:
    text = ("Traceback (most recent call last):\n"
            f'  File "{path}", line 10, in load\n'
            "    validate(a, b)\n"
            "TypeError: validate() takes 1 positional argument but 2 were given\n")
    assert classify(text).cls == "unknown"


def test_a_binding_error_on_a_call_from_vllm_is_a_library_version() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/transformers_utils/configs/qwen3_5.py", line 101, '
            "in __init__\n"
            "    layer_type_validation(self.layer_types, self.num_hidden_layers)\n"
            "TypeError: layer_type_validation() takes 1 positional argument but 2 were given\n")
    d = classify(text)
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "python_package", "medium")
