"""`explain` on blind61 and blind62 (tests/data/real-logs/), found by error messages sampled at random from vLLM's own
raise sites and scored once (0 of 2 at 0805345; 1 of 5 at e43128d; README.md in each). What their misses taught,
each from the vLLM source that raises the message: Ray's DP placement groups the cluster could not give, FlashInfer's
FP8 MoE kernels that take only Llama 4, ROCm's AITER MLA heads per GPU, a second engine in one process, V0's memory
profiling assertion in bytes, and a settings check raising NotImplementedError."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Step, Stop, next_step


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail", "numbers"), [
    ("blind62", "b62-001", "too_few_gpus", "dp_placement", {"dp_size": 2, "created": 1}),
    ("blind62", "b62-002", "quant_unsupported", "flashinfer_moe_model", {}),
    ("blind61", "b61-001", "usage_error", "aiter_mla_heads", {}),  # wrapped before "Provided 32 number of heads."
    ("blind61", "b61-002", "usage_error", "second_engine", {}),  # LangChain's pydantic wrapper of vLLM 0.1's assert
])
def test_what_blind61_and_blind62_taught(folder: str, prefix: str, cls: str, detail: str,
                                         numbers: dict[str, int]) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail, d.confidence, d.numbers) == (cls, detail, "high", numbers)
    assert d.template and advice_for(d).helps
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]


def test_the_aiter_heads_figure_when_the_message_is_on_one_line() -> None:
    d = classify("AssertionError: Aiter MLA only supports 16 or 128 number of heads. Provided 32 number of heads. Try "
                 "adjusting tensor_parallel_size value.\n")
    assert (d.detail, d.numbers) == ("aiter_mla_heads", {"heads_per_gpu": 32})


def test_v0s_profiling_assertion_in_bytes_is_the_same_reading() -> None:
    # b62-003: vllm-ascend 0.7 (V0) prints the free memory in bytes; labelled gpu_busy, as three other logs of the
    # message are labelled unknown: the reading stays unknown, with its detail and its one retry
    d = classify(blind_log("blind62", "b62-003"))
    assert (d.cls, d.detail) == ("unknown", "profiling_assertion")
    assert d.numbers == {"initial_free_bytes": 58247258112, "current_free_bytes": 58247516160}
    assert isinstance(next_step(d, Settings()), Step)


def test_a_settings_check_that_raises_not_implemented_is_a_settings_check() -> None:
    # b62-005: V0 0.5's ParallelConfig._verify_args, pipeline parallelism without Ray
    d = classify(blind_log("blind62", "b62-005"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")


def test_what_blind62_read_right_at_its_score() -> None:
    assert classify(blind_log("blind62", "b62-004")).cls == "usage_error"


@pytest.mark.parametrize("line", [
    "AssertionError: Not enough resources to allocate DP ranks on DP master node 10.0.0.1",  # 0.9-0.10: no count
    "ValueError: ('Not enough resources to allocate %s DP ranks on DP master node %s, possible to fit %s DP ranks.', "
    "4, '10.0.0.1', 2)",  # 0.11: the count passed as an argument
])
def test_the_dp_placement_wordings_of_each_release(line: str) -> None:
    assert (classify(line + "\n").cls, classify(line + "\n").detail) == ("too_few_gpus", "dp_placement")


@pytest.mark.parametrize("line", [
    "AssertionError: tensor parallel group already initialized, but of unexpected size. got: 2, expected: 4",
    "AssertionError: prefill context parallel group is already initialized",
    "AssertionError: EPLB group is already initialized",
])
def test_a_second_engine_in_each_groups_wording(line: str) -> None:
    assert classify(line + "\n").detail == "second_engine"
