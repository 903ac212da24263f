"""The bundled model facts (issue 18): every entry says where its config was read; aliases and MXFP4 sizes."""

from __future__ import annotations

from vllm_guard import model_config
from vllm_guard.probes.model import _bundled, _from_bundled, bundled_models

GIB = 2**30


def test_every_bundled_model_names_its_source() -> None:
    models = _bundled()
    assert len(bundled_models()) >= 38
    assert all(entry["source"] and "search id" not in entry["source"] for entry in models.values()
               if "(before issue 18)" not in entry["source"])


def test_an_instruct_alias_has_its_base_shapes_and_its_own_length() -> None:
    # Qwen2.5-32B-Instruct: vLLM 0.6.3.post1 derived max_seq_len=32768 (shared startups/023); the base says 131072.
    found = _from_bundled("qwen/qwen2.5-32b-instruct")
    assert found is not None
    config = found[1]
    base = _bundled()["Qwen/Qwen2.5-32B"]["config"]
    assert config["max_position_embeddings"] == 32768 and base["max_position_embeddings"] == 131072
    assert {k: v for k, v in config.items() if k != "max_position_embeddings"} == \
        {k: v for k, v in base.items() if k != "max_position_embeddings"}


def test_gpt_oss_weights_are_mxfp4_experts_and_16_bit_rest() -> None:
    # openai/gpt-oss-120b: the estimate is the checkpoint's size (about 60.7 GiB), 4.25 bits per expert weight.
    config = _bundled()["openai/gpt-oss-120b"]["config"]
    fields = model_config.normalize(config)
    weights = model_config.estimate_weights_bytes(fields, config)
    assert weights is not None and 59 * GIB < weights < 62 * GIB
