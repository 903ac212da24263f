"""The bundled model facts (issue 18): every entry says where its config was read; aliases and MXFP4 sizes."""

from __future__ import annotations

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight import kv_cache, memory_params
from vllm_guard.probes import bundled, model_config

GIB = 2**30


def test_every_bundled_model_names_its_source() -> None:
    models = bundled.entries()
    assert len(bundled.models()) >= 40
    assert all(entry["source"] and "search id" not in entry["source"] for entry in models.values()
               if "(before issue 18)" not in entry["source"])


def test_an_instruct_alias_has_its_base_shapes_and_its_own_length() -> None:
    # Qwen2.5-32B-Instruct: vLLM 0.6.3.post1 derived max_seq_len=32768 (shared startups/023); the base says 131072.
    found = bundled.find("qwen/qwen2.5-32b-instruct")
    assert found is not None
    config = found[0]
    base = bundled.entries()["Qwen/Qwen2.5-32B"]["config"]
    assert config["max_position_embeddings"] == 32768 and base["max_position_embeddings"] == 131072
    assert {k: v for k, v in config.items() if k != "max_position_embeddings"} == \
        {k: v for k, v in base.items() if k != "max_position_embeddings"}


def test_gpt_oss_weights_are_mxfp4_experts_and_16_bit_rest() -> None:
    # openai/gpt-oss-120b: the estimate is the checkpoint's size (about 60.7 GiB), 4.25 bits per expert weight.
    config = bundled.entries()["openai/gpt-oss-120b"]["config"]
    fields = model_config.normalize(config)
    weights = model_config.estimate_weights_bytes(fields, config)
    assert weights is not None and 59 * GIB < weights < 62 * GIB


def test_gpt_oss_20b_shapes_give_its_checkpoint_size_and_kv() -> None:
    # openai/gpt-oss-20b: the config's shapes in MXFP4 give 12.80 GiB; the index pasted beside it says 13,761,264,768
    # bytes (12.82 GiB): within 0.2%, a check that the config is the real one. KV per token at TP 1, as vLLM's
    # formula counts it (every layer full): 24 layers x 2 x 8 KV heads x 64 x 2 bytes.
    entry = bundled.entries()["openai/gpt-oss-20b"]
    config = entry["config"]
    fields = model_config.normalize(config)
    estimate = model_config.estimate_weights_bytes(fields, config)
    assert entry["weights_bytes"] == 13_761_264_768
    assert estimate is not None and abs(estimate - entry["weights_bytes"]) / entry["weights_bytes"] < 0.002
    model = ModelFacts(model="openai/gpt-oss-20b", source="bundled", weights_bytes=entry["weights_bytes"], **fields)
    assert kv_cache.kv_bytes_per_token(model, memory_params.Params()) == 24 * 2 * 8 * 64 * 2


def test_the_r1_distills_resolve_to_their_qwen_bases() -> None:
    # The -Distill-Qwen-14B/-32B shapes are their bases' (shared startups/007 and 019: weights within 0.7%).
    for alias, base in (("deepseek-ai/deepseek-r1-distill-qwen-14b", "Qwen/Qwen2.5-14B"),
                        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "Qwen/Qwen2.5-32B")):
        found = bundled.find(alias)
        assert found is not None and found[0] == bundled.entries()[base]["config"]


def test_every_bundled_index_total_is_what_the_config_estimate_gives() -> None:
    # Each bundled model whose safetensors index was seen (weights_bytes: its metadata.total_size) checks the
    # estimator that plans the others: dense, MoE (Mixtral 8x22B), MXFP4 experts (gpt-oss), vision towers
    # (Qwen2.5-VL, Qwen3-VL, medgemma's SigLIP), tied heads (gemma), Falcon's ungated MLP. The worst is 1.9%
    # (tencent/HunyuanOCR's tower), within the 3% the memory model is held to on real start-ups.
    checked = 0
    for model_id, entry in bundled.entries().items():
        if not entry.get("weights_bytes"):
            continue
        fields = model_config.normalize(entry["config"])
        estimate = model_config.estimate_weights_bytes(fields, entry["config"])
        assert estimate is not None, model_id
        assert abs(estimate - entry["weights_bytes"]) / entry["weights_bytes"] < 0.02, (model_id, estimate)
        checked += 1
    assert checked >= 12
