"""`explain` on blind93 (1 of 4 at 2d34084, applications that self-host vLLM) and blind94 (12 of 13 at 2d34084, other
accelerators), each scored once (README.md in each). What their misses taught: a prefixed line a terminal wrapped at
80 columns (its text is shorter than an unprefixed wrap), a quantization capability message cut before its current
capability, Habana's runtime finding no Gaudi to acquire, and vLLM's Neuron loader refusing an architecture."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


def test_a_prefixed_message_wrapped_at_80_columns_and_quoted() -> None:
    # odysseus printed vLLM's output behind "> ", wrapped at 80 columns with the process prefix: the message runs
    # over three lines, the current capability on the third
    d = classify(blind_log("blind93", "b93-001"))
    assert (d.cls, d.numbers.get("min_capability")) == ("quant_unsupported", 70)


@pytest.mark.parametrize("cut", ["Minimum capability: 70.", "Minimum capability: 70. Current capability: 61."])
def test_the_capability_message_with_or_without_its_current_capability(cut: str) -> None:
    d = classify(f"ValueError: The quantization method awq is not supported for the current GPU. {cut}")
    assert d.cls == "quant_unsupported"


def test_a_short_unprefixed_line_is_not_joined_to_the_next() -> None:
    # the wider rule is for a prefixed line the terminal wrapped, whose rest lost the prefix: not for bare short lines
    text = "The quantization method awq is not supported for the\ncurrent GPU. Minimum capability: 75.\n"
    assert classify(text).cls == "unknown"


@pytest.mark.parametrize(("text", "cls", "detail"), [
    ("RuntimeError: synStatus=8 [Device not found] Device acquire failed.", "too_few_gpus", "hpu_not_found"),
    ("RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.", "gpu_busy", "hpu_acquired"),
])
def test_habanas_runtime_acquiring_a_gaudi(text: str, cls: str, detail: str) -> None:
    d = classify(text)
    assert (d.cls, d.detail) == (cls, detail)
    assert any("hl-smi" in h for h in advice_for(d).helps)
    # NVML, which the ladder's wait polls, does not see a Gaudi: no wait for a held one
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]


def test_a_gaudi_not_found_in_the_opea_pod() -> None:
    assert classify(blind_log("blind93", "b93-002")).detail == "hpu_not_found"


def test_the_neuron_loader_refusing_an_architecture() -> None:
    assert classify(blind_log("blind94", "b94-001")).cls == "unsupported_architecture"


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind93", "b93-004", "unknown"),
    *[("blind94", f"b94-{n:03d}", "unknown") for n in (2, 5, 6, 7, 8, 9, 10, 13)],
    ("blind94", "b94-003", "version_mismatch"), ("blind94", "b94-004", "version_mismatch"),
    ("blind94", "b94-011", "usage_error"), ("blind94", "b94-012", "max_len_exceeds_model"),
])
def test_what_blind93_and_blind94_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls
