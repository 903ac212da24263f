"""`explain` on blind19 (tests/data/real-logs/blind19), the nineteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier, byte-exact from logs committed to public repositories, and
scored once, whole, at commit 260091a (11 of 17 right, 2 confident errors; tests/data/real-logs/README.md). What its
misses taught, each from the vLLM source that writes the message: no kernel for a weight format on this GPU, vLLM's
FlashAttention package without its compiled extensions, a ROCm build's core extension under another torch, a start
stopped while it waited for the Hugging Face Hub, and a text-only checkpoint of a multimodal architecture.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import NO_KERNEL, advice_for
from vllm_guard.diagnose.details_files import TOWER_WEIGHTS_MISSING
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize("name", ["b19-006", "b19-011"])
def test_no_kernel_for_the_weight_format_is_quant_unsupported(name: str) -> None:
    # b19-011: "Failed to find a kernel that can implement the ScaledMM linear layer" (FP8 linear layers of
    # Nemotron-3-Super on a GB10, vLLM 0.26); b19-006: "Unsupported mxfp4_backend for Mxfp4MoEMethod: ..."
    d = classify(blind_log("blind19", name))
    assert (d.cls, d.detail, d.confidence) == ("quant_unsupported", "no_kernel", "high")
    assert advice_for(d) is NO_KERNEL
    assert isinstance(next_step(d, Settings()), Stop)


def test_a_build_without_its_flash_attention_extensions_is_a_version_mismatch() -> None:
    # b19-013: the registry's inspection subprocess failed on "vllm.vllm_flash_attn requires the CUDA flash
    # attention extensions"; the surface message ("failed to be inspected") was read as unsupported_architecture
    d = classify(blind_log("blind19", "b19-013"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "extension_abi", "high")


def test_a_rocm_core_extension_under_another_torch_is_a_version_mismatch() -> None:
    # b19-001: "Failed to import from vllm._core_C with ImportError('libtorch_hip.so: cannot open shared object
    # file ...')", then torch's "Tried to instantiate class '_core_C.ScalarType', but it does not exist!"
    d = classify(blind_log("blind19", "b19-001"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "extension_abi", "medium")


def test_a_start_stopped_while_waiting_for_the_hub_says_so() -> None:
    # b19-003: SIGTERM's "KeyboardInterrupt: terminated" raised inside an SSL read under transformers' tokenizer
    # lookup on the Hub
    d = classify(blind_log("blind19", "b19-003"))
    assert (d.cls, d.detail, d.confidence) == ("network", "hub", "medium")
    assert any("Hugging Face Hub" in e for e in d.evidence)
    # stopped elsewhere (in the registry's subprocess wait, or with no traceback of a Hub call): not said
    for name in ("b19-004", "b19-017"):
        assert classify(blind_log("blind19", name)).cls == "unknown", name


def test_a_text_only_checkpoint_of_a_multimodal_architecture_is_an_option_to_change() -> None:
    # b19-012: Qwen3_5MoeForConditionalGeneration with images and audio at 0 but videos left at vLLM's 999, so vLLM
    # built the vision tower and the text-only checkpoint had none of its weights. The collector labelled it
    # unsupported_architecture ("no class fits well"); the reading here is the option that fixes it, so it stays a
    # confident error against that label (README.md there).
    d = classify(blind_log("blind19", "b19-012"))
    assert (d.cls, d.detail) == ("usage_error", "tower_weights_missing")
    assert advice_for(d) is TOWER_WEIGHTS_MISSING
    assert any("--language-model-only" in h for h in advice_for(d).helps)
    other = ("ValueError: Following weights were not initialized from checkpoint: {'visual.blocks.0.norm1.weight', "
             "'lm_head.weight'}")
    assert (classify(other).cls, classify(other).detail) == ("model_access", "weights_missing")
