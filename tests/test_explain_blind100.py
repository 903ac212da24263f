"""`explain` on blind100 (none of 2 at dc9bca5, pooling, encoder-decoder and speech models), scored once (README.md
there). What its misses taught: a multimodal processor or feature extractor without what the other side calls (a
transformers of another release), and an embedding model's checkpoint started as a generator."""

from __future__ import annotations

import pytest

from tests.conftest import assert_reads_and_stops, blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("folder", "prefix", "cls", "detail", "helps"), [
    # transformers 5.10 calling fetch_audio on vLLM 0.22's MistralCommonFeatureExtractor (Voxtral)
    ("blind100", "b100-001", "version_mismatch", "processor_api", "pip show transformers"),
    # transformers' Qwen2VLProcessor without image_token (blind39's, labelled so)
    ("blind39", "b39-011", "version_mismatch", "processor_api", "pip show transformers"),
    # Qwen3-Embedding under GPUStack's vLLM 0.8.5, "Defaulting to 'generate'"
    ("blind100", "b100-002", "usage_error", "pooling_checkpoint", "--runner pooling"),
])
def test_what_the_misses_read_now(folder: str, prefix: str, cls: str, detail: str, helps: str) -> None:
    assert_reads_and_stops(blind_log(folder, prefix), cls, detail, helps)


@pytest.mark.parametrize("name", ["model.embed_tokens", "lm_head", "score", "visual.blocks.0.attn"])
def test_other_missing_names_stay_a_candidate(name: str) -> None:
    # a causal LM's own names, a classifier's head, a tower: labelled several ways (certainty._WEIGHT_KEY)
    d = classify(f"ValueError: There is no module or parameter named '{name}' in Qwen3ForCausalLM")
    assert d.cls == "unknown"


def test_a_processor_attribute_in_a_start_that_served_is_no_failure() -> None:
    text = ("INFO 06-01 10:00:00 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000\n"
            "INFO:     Application startup complete.\n"
            "AttributeError: 'Qwen2VLProcessor' object has no attribute 'image_token'\n")
    assert classify(text).cls == "unknown"
