"""`explain` on blind101 (5 of 11 at 3f4e1f7, starts across processes or machines without Ray, disaggregated
serving) and blind102 (3 of 9 at 3f4e1f7, what is layered on the model: speculative decoding, LoRA, offloading), each
scored once (README.md in each). What their misses taught, each from the source that writes the message: 0.11's
wording of the GPU count check, a settings class's pydantic refusal with no frame, a bind to an address that is not
the host's, NCCL's duplicate GPU, vllm-ascend's EPLB, Model Runner V2's unsupported features, LoRA on experts without
a mapping, an adapter's modules, and ctypes' missing symbol."""

from __future__ import annotations

import pytest

from tests.conftest import assert_reads_and_stops, blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail", "helps"), [
    ("blind101", "b101-001", "network", "nccl_duplicate_gpu", "CUDA_VISIBLE_DEVICES"),
    ("blind101", "b101-007", "network", "bind_address", "ip -brief addr"),
    ("blind101", "b101-008", "network", "bind_address", "ip -brief addr"),
    ("blind101", "b101-011", "usage_error", "eplb_unsupported", "without EPLB"),
    ("blind102", "b102-001", "usage_error", "lora_moe", "--enable-lora"),
    ("blind102", "b102-002", "usage_error", "mrv2_unsupported", "VLLM_USE_V2_MODEL_RUNNER=0"),
    ("blind43", "b43-010", "usage_error", "mrv2_unsupported", "VLLM_USE_V2_MODEL_RUNNER=0"),
    ("blind102", "b102-008", "model_access", "lora_modules", "target_modules"),
])
def test_what_the_misses_read_now(folder: str, prefix: str, cls: str, detail: str, helps: str) -> None:
    assert_reads_and_stops(blind_log(folder, prefix), cls, detail, helps)


def test_vllm_0_11s_gpu_count_check() -> None:
    d = classify(blind_log("blind101", "b101-002"))
    assert (d.cls, d.numbers) == ("too_few_gpus", {"world_size": 16, "gpus": 8})


def test_a_settings_class_refusal_without_frames() -> None:
    d = classify(blind_log("blind101", "b101-010"))  # ParallelConfig: num_redundant_experts without EPLB
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")


@pytest.mark.parametrize("config", ["ModelConfig", "VllmConfig", "LLMConfig"])
def test_other_classes_refusal_without_frames_is_not_read_so(config: str) -> None:
    # ModelConfig's and VllmConfig's checks read the model too; LLMConfig is Ray Serve's
    text = (f"pydantic_core._pydantic_core.ValidationError: 1 validation error for {config}\n"
            "  Value error, something about the model [type=value_error]\n")
    assert classify(text).detail != "config_check"


def test_ctypes_missing_symbol_in_a_loaded_library() -> None:
    d = classify(blind_log("blind102", "b102-006"))  # tilelang's libcudart_stub.so without hipSetDevice, on ROCm
    assert (d.cls, d.detail) == ("version_mismatch", "extension_abi")


def test_a_bind_address_error_in_a_start_that_served_is_no_failure() -> None:
    text = ("INFO:     Application startup complete.\n"
            "zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.0.0.9:5555')\n")
    assert classify(text).cls == "unknown"
