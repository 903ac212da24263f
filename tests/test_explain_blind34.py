"""`explain` on blind34 (tests/data/real-logs/blind34), the thirty-fourth blind set of issue 26, after its one scoring.

Collected from vllm-project threads by a helper that found the organisation's stored threads nearly exhausted, and
scored once, whole, at commit 93dbcdd (2 of 5 right, no confident error; README.md there). What its misses taught:
AWS Neuron's runtime refusing an allocation (an OOM whose stage its frames cannot tell), and vLLM 0.5's demand for
FlashInfer under Gemma-2's logit soft-capping.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import SOFTCAP_BACKEND, advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_neurons_allocation_failure_is_an_oom_its_frames_cannot_place() -> None:
    # 'RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"' under transformers_neuronx's
    # shard_along_on_cpu -> parallel_to_nc, which place the KV cache (decoder.py init_caches) as well as the weights:
    # labelled oom_loading, read gpu_oom (a known confident error, found by a review)
    d = classify(blind_log("blind34", "b34-002"))
    assert (d.cls, d.stage, d.template) == ("gpu_oom", "unknown", SOURCES["neuron_oom"])


def test_neurons_allocation_failure_alone_is_an_oom_at_an_unknown_stage() -> None:
    d = classify('RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"\n')
    assert (d.cls, d.stage) == ("gpu_oom", "unknown")


def test_gemma2s_soft_capping_without_flashinfer() -> None:
    # vLLM 0.5.3: "ValueError: Please use Flashinfer backend for models with logits_soft_cap (i.e., Gemma-2). ..."
    d = classify(blind_log("blind34", "b34-005"))
    assert (d.cls, d.detail) == ("usage_error", "softcap_backend")
    assert advice_for(d) is SOFTCAP_BACKEND and isinstance(next_step(d, Settings()), Stop)
    # vLLM 0.5.1 wrote it without the space (vllm #6218)
    assert classify("ValueError: Please use Flashinfer backend for models withlogits_soft_cap (i.e., Gemma-2). "
                    "Otherwise, the output might be wrong.\n").detail == "softcap_backend"


def test_what_blind34_read_right_at_its_score() -> None:
    want = {"b34-001": "usage_error", "b34-004": "unsupported_architecture"}
    assert {p: classify(blind_log("blind34", p)).cls for p in want} == want
