"""`explain` on blind95 (11 of 18 at 0a3f23a, the Hugging Face Hub's model discussions), blind97 (3 of 4 at
b4c0a04, log files committed to repositories) and blind98 (1 of 3 at 2c1c5b1, the rarer kinds), each scored once
(README.md there). What blind95's misses taught: transformers' "does not appear to have a file named" for a file
other than config.json (a remote-code file the uploader left out), and a weight loader's shape mismatch named as a
candidate: real reports label it two ways, so it stays below the bar. blind97's: vLLM's Transformers backend refusing
tensor parallelism for a model without a plan. blind98's: vLLM 0.30's /dev/shm check without an allocation's name,
and Databricks' exit line naming SIGKILL."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


def test_a_remote_code_file_the_repository_lacks() -> None:
    d = classify(blind_log("blind95", "b95-007"))  # configuration_phi3.py, named by the config's auto_map
    assert (d.cls, d.detail) == ("model_access", "repo_file_missing")
    assert any("original repository" in h for h in advice_for(d).helps)
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL["repo_file_missing"]


def test_config_json_missing_keeps_its_own_reading() -> None:
    text = ("OSError: org/model does not appear to have a file named config.json. Checkout "
            "'https://huggingface.co/org/model/tree/main' for available files.")
    assert classify(text).detail == "config_missing"


@pytest.mark.parametrize(("folder", "prefix"), [("blind95", "b95-011"), ("blind95", "b95-012"),
                                                ("blind37", "b37-012"), ("blind65", "b65-001")])
def test_a_weight_shape_mismatch_is_a_candidate_only(folder: str, prefix: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert d.cls == "unknown"
    assert d.hint is not None and d.hint[0] == "model_access"


@pytest.mark.parametrize(("prefix", "cls"), [
    ("b95-001", "gpu_oom"), ("b95-002", "host_oom"), ("b95-003", "unsupported_architecture"),
    ("b95-005", "unsupported_architecture"), ("b95-006", "model_access"), ("b95-009", "unknown"),
    ("b95-010", "unknown"), ("b95-013", "quant_unsupported"), ("b95-014", "quant_unsupported"),
    ("b95-017", "unsupported_architecture"), ("b95-018", "unknown"),
])
def test_what_blind95_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind95", prefix)).cls == cls


@pytest.mark.parametrize("line", [
    "ValueError: Trying to run tensor parallelization but the model does not support it yet!",  # vLLM 0.7
    "ValueError: <class 'transformers.models.gemma3.modeling_gemma3.Gemma3ForCausalLM'> does not support tensor "
    "parallel yet!",  # 0.8-0.9
    "ValueError: <class 'X'> does not support tensor parallel. Please open an issue ...",  # 0.10-0.20
])
def test_the_transformers_backend_without_a_tensor_parallel_plan(line: str) -> None:
    # blind97/b97-003 (3 of 4 at b4c0a04, log files committed to repositories): Gemma 4 under vLLM 0.7.3 at TP=2
    d = classify(line)
    assert (d.cls, d.detail) == ("unsupported_architecture", "transformers_no_tp")
    assert any("--tensor-parallel-size 1" in h for h in advice_for(d).helps)
    assert classify(blind_log("blind97", "b97-003")).detail == "transformers_no_tp"
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL["transformers_no_tp"]


@pytest.mark.parametrize(("prefix", "cls"), [("b97-001", "port_in_use"), ("b97-002", "unknown"),
                                             ("b97-004", "startup_hang")])
def test_what_blind97_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind97", prefix)).cls == cls


def test_vllm_0_30s_shm_check_without_an_allocation_name() -> None:
    # blind98/b98-001 (1 of 3 at 2c1c5b1, the rarer kinds of failure): a 0.27 build on ppc64le in a container
    d = classify(blind_log("blind98", "b98-001"))
    assert (d.cls, d.numbers) == ("shm_exhausted", {"required_mib": 160, "free_mib": 64})


def test_databricks_line_names_the_signal() -> None:
    # blind98/b98-002: "exited with exit code 137 (SIGKILL)": read as the signal, a host_oom candidate below the bar
    d = classify(blind_log("blind98", "b98-002"))
    assert (d.cls, d.detail) == ("unknown", "sigkill")
    assert d.hint is not None and d.hint[0] == "host_oom"
