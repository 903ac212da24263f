"""`explain` on blind33 (tests/data/real-logs/blind33), the thirty-third blind set of issue 26, after its one scoring.

Collected from vllm-project threads by a helper that never read the classifier, and scored once, whole, at commit
dcca400 (10 of 13 right, no confident error; README.md there). What its misses taught: vLLM's attention-backend
selection finding none for the model on this GPU, the bitsandbytes loader before a model's class supports it, and
vllm-ascend's graph capture failing to get memory.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import BNB_MODEL, NO_ATTENTION_BACKEND, advice_for
from vllm_guard.diagnose.ladder import Settings, Step, Stop, next_step


def test_no_attention_backend_for_the_model_on_this_gpu() -> None:
    # DeepSeek V3.2 on a GPU below Hopper: "ValueError: No valid attention backend found for cuda with
    # AttentionSelectorConfig(head_size=576, ..., use_mla=True, ..., use_sparse=True, ...). Reasons: {FLASH_ATTN_MLA:
    # [sparse not supported, compute capability not supported, ...], ...}"
    d = classify(blind_log("blind33", "b33-002"))
    assert (d.cls, d.detail) == ("unsupported_architecture", "no_attention_backend")
    assert advice_for(d) is NO_ATTENTION_BACKEND and isinstance(next_step(d, Settings()), Stop)


def test_the_kv_cache_dtype_among_the_reasons_stays_the_kv_cache_reading() -> None:
    # blind21/b21-004: --kv-cache-dtype nvfp4 that no backend takes, read before the general selection failure
    d = classify(blind_log("blind21", "b21-004"))
    assert (d.cls, d.detail) == ("quant_unsupported", "kv_cache_dtype")


def test_the_kv_cache_dtype_among_reasons_past_the_long_selector_config() -> None:
    # found by a review: the reasons follow the whole AttentionSelectorConfig(...), past 500 characters
    config = ", ".join(f"field_{n}=False" for n in range(40))
    d = classify(f"ValueError: No valid attention backend found for cuda with AttentionSelectorConfig({config}). "
                 "Reasons: {FLASHINFER: [compute capability not supported], TRITON_ATTN: [kv_cache_dtype not "
                 "supported]}.\n")
    assert (d.cls, d.detail) == ("quant_unsupported", "kv_cache_dtype")
    step = next_step(d, Settings(kv_cache_dtype="nvfp4"))
    assert isinstance(step, Step) and (step.param, step.value) == ("kv-cache-dtype", "auto")


def test_a_chosen_backend_refusing_the_kv_cache_dtype_undoes_the_dtype() -> None:
    # found by a review: a profile pinning FLASH_ATTN and an fp8 KV cache the ladder set
    d = classify("ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
                 "Reason: ['kv_cache_dtype not supported']\n")
    assert (d.cls, d.detail) == ("quant_unsupported", "kv_cache_dtype")
    step = next_step(d, Settings(kv_cache_dtype="fp8"), guard_set_kv_dtype=True)
    assert isinstance(step, Step) and (step.param, step.value) == ("kv-cache-dtype", "auto")


def test_an_attention_backend_chosen_that_refuses_the_model() -> None:
    d = classify("ValueError: Selected backend FLASHMLA is not valid for this configuration. Reason: ['compute "
                 "capability not supported']\n")
    assert (d.cls, d.detail) == ("usage_error", "attention_backend")


def test_bitsandbytes_before_the_models_class_supports_it() -> None:
    # vLLM 0.6: "AttributeError: Model LlavaForConditionalGeneration does not support BitsAndBytes quantization yet."
    d = classify(blind_log("blind33", "b33-007"))
    assert (d.cls, d.detail) == ("quant_unsupported", "bnb_model")
    assert advice_for(d) is BNB_MODEL and isinstance(next_step(d, Settings()), Stop)


def test_an_npu_graph_capture_that_cannot_get_memory() -> None:
    # vllm-ascend: "capture_begin:... NPU function error: c10_npu::acl::AclmdlRICaptureBegin(capture_stream_,
    # capture_mode), error code is 207005", "[ERROR] ... PTA call acl api failed", "[Error]: Failed to apply for
    # memory."
    d = classify(blind_log("blind33", "b33-008"))
    assert (d.cls, d.stage) == ("oom_cudagraph", "cuda_graph")
    step = next_step(d, Settings(max_model_len=8192))
    assert isinstance(step, Step) and (step.param, step.value) == ("enforce-eager", True)


def test_a_capture_that_failed_for_another_reason_is_not_an_oom() -> None:
    # vllm-ascend's stream limit: the same call failing without CANN's allocation words
    log = ("ERROR [model_runner_v1.py:3556] RuntimeError: capture_begin:build/CMakeFiles/torch_npu.dir/compiler_depend"
           ".ts:156 NPU function error: c10_npu::acl::AclmdlRICaptureBegin(capture_stream_, capture_mode), error code "
           "is 207004\n"
           "ERROR [model_runner_v1.py:3556] ACLgraph has insufficient available streams to capture the configured "
           "number of sizes.\n")
    assert classify(log).cls != "oom_cudagraph"


def test_what_blind33_read_right_at_its_score() -> None:
    want = {"b33-001": "unknown", "b33-003": "version_mismatch", "b33-004": "unknown", "b33-005": "too_few_gpus",
            "b33-006": "quant_unsupported", "b33-009": "unknown", "b33-010": "unsupported_architecture",
            "b33-011": "version_mismatch", "b33-012": "unknown", "b33-013": "unknown"}
    assert {p: classify(blind_log("blind33", p)).cls for p in want} == want
