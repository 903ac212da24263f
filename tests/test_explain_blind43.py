"""`explain` on blind43 (tests/data/real-logs/blind43), the forty-third blind set of issue 26, after its one scoring.

Collected from threads about vLLM 0.25-0.33 and their new features by a helper that never read the classifier, and
scored once, whole, at commit 69b7557 (10 of 16 right, no confident error; README.md there). What its misses taught:
FP8 block quantization split by tensor parallel into shares that are not whole blocks (a message often wrapped);
XLA's words for an allocation on TPU with a program's or buffer's name between them; a quote's bar as a renderer
copies it; vLLM's stand-in for a missing or outdated deep_gemm.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import QUANT_BLOCK, advice_for
from vllm_guard.diagnose.details_versions import DEEP_GEMM
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_fp8_blocks_split_unevenly_by_tensor_parallel() -> None:
    # "ValueError: The output_size of gate's and up's weight = 96 is not" / "    divisible by weight quantization
    # block_n = 128." (a MoE's 768 over TP 8)
    d = classify(blind_log("blind43", "b43-005"))
    assert (d.cls, d.detail, d.numbers) == ("tp_indivisible", "quant_block", {"size": 96})
    assert advice_for(d) is QUANT_BLOCK and any("--enable-expert-parallel" in h for h in QUANT_BLOCK.helps)


def test_the_linear_layers_twin_with_its_block() -> None:
    d = classify("ValueError: Weight output_partition_size = 1408 is not divisible by weight quantization "
                 "block_n = 128.\n")
    assert (d.cls, d.detail, d.numbers) == ("tp_indivisible", "quant_block", {"size": 1408, "block": 128})


@pytest.mark.parametrize("prefix", ["b43-008", "b43-009"])
def test_xla_out_of_memory_with_a_name_between_its_words(prefix: str) -> None:
    # "RESOURCE_EXHAUSTED: Error loading program 'jit__multi_slice': Attempting to reserve 6.14G ..." and
    # "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 1.96G."
    assert classify(blind_log("blind43", prefix)).cls == "gpu_oom"


def test_a_quotes_bar_is_taken_off() -> None:
    d = classify(blind_log("blind43", "b43-014"))
    assert (d.cls, d.numbers["needed_gib"], d.numbers["available_gib"]) == ("kv_cache_too_small", 23.25, 22.5)


def test_deep_gemm_missing_or_outdated() -> None:
    d = classify(blind_log("blind43", "b43-011"))
    assert (d.cls, d.detail) == ("version_mismatch", "deep_gemm")
    assert advice_for(d) is DEEP_GEMM
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and "VLLM_DEEP_GEMM_WARMUP=skip" in stop.reason


def test_what_blind43_read_right_at_its_score() -> None:
    want = {"b43-001": "quant_unsupported", "b43-002": "unsupported_architecture", "b43-003": "unknown",
            "b43-004": "unknown", "b43-006": "unknown", "b43-007": "oom_profiling", "b43-012": "unknown",
            "b43-013": "unknown", "b43-015": "no_kv_memory", "b43-016": "unknown"}
    assert {p: classify(blind_log("blind43", p)).cls for p in want} == want


def test_marlins_wrapped_head_is_not_fp8_blocks() -> None:
    # a review's case: Marlin's "Weight input_size_per_partition = N is not divisible by min_thread_k", wrapped
    text = "ValueError: Weight input_size_per_partition = 1376 is not\n    divisible by min_thread_k = 128.\n"
    assert (classify(text).cls, classify(text).detail) == ("unknown", None)  # the head alone names no kernel


def test_a_kernels_vmem_is_not_the_devices_memory() -> None:
    # not the HBM reading: its own detail, whose advice says HBM is not what ran out (read gpu_oom since both real
    # reports of it are labelled so: blind47/b47-010, blind82/b82-001)
    line = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem while "
            "Attempting to allocate 12.00M\n")
    assert (classify(line).cls, classify(line).detail) == ("gpu_oom", "tpu_onchip")
