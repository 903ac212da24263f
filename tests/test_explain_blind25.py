"""`explain` on blind25 (tests/data/real-logs/blind25), the twenty-fifth blind set of issue 26, after its one scoring.

Collected from threads of the vllm-project organisation by a helper that never read the classifier, and scored once,
whole, at commit 0c7bbea (6 of 18 right, 1 confident error; tests/data/real-logs/README.md). What its misses taught:
torch.distributed's rendezvous that cannot be reached, vLLM's parser refusing a quantization method, the Mistral
tokenizer without its file, and vLLM's own argument checks in vllm/utils.py.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import MISTRAL_TOKENIZER


@pytest.mark.parametrize(("name", "prefix", "cls", "detail", "confidence"), [
    # "RuntimeError: The client socket has failed to connect to any network address of (x.x.x.x, 48247)"
    ("blind25", "b25-003", "network", "rendezvous", "high"),
    # only c10d's retry warnings, until a person pressed ^C (vllm-metal on a Mac)
    ("blind25", "b25-002", "network", "rendezvous", "medium"),
    # the same warning on Windows, "The requested address is not valid in its context"
    ("blind11", "b11-012", "network", "rendezvous", "medium"),
    # "vllm serve: error: argument --quantization/-q: invalid choice: 'ascend'": the method is not registered
    ("blind25", "b25-008", "quant_unsupported", "unknown_method", "high"),
    # "No tokenizer file found in directory: ..." (Qwen3-Omni loaded with the Mistral tokenizer)
    ("blind25", "b25-007", "model_access", "mistral_tokenizer", "high"),
    # vLLM 0.8's FlexibleArgumentParser (vllm/utils.py) refusing --model for `vllm serve`
    ("blind25", "b25-014", "usage_error", "config_check", "medium"),
])
def test_what_blind25s_misses_taught(name: str, prefix: str, cls: str, detail: str, confidence: str) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail, d.confidence) == (cls, detail, confidence)


def test_the_mistral_tokenizer_advice_names_the_tokenizer_mode() -> None:
    d = classify(blind_log("blind25", "b25-007"))
    assert advice_for(d) is MISTRAL_TOKENIZER and "--tokenizer-mode hf" in MISTRAL_TOKENIZER.helps[0]


def test_a_rendezvous_warning_yields_to_a_decisive_error() -> None:
    # blind2/b011: a c10d warning, then the GPU held by another process
    assert classify(blind_log("blind2", "b011")).cls == "gpu_busy"


def test_what_blind25_read_right_at_its_score() -> None:
    want = {"b25-001": "kv_cache_too_small", "b25-009": "quant_unsupported", "b25-013": "usage_error",
            "b25-016": "version_mismatch", "b25-017": "no_kv_memory", "b25-018": "unknown"}
    assert {p: classify(blind_log("blind25", p)).cls for p in want} == want
