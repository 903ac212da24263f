"""Model facts from real config.json fixtures, checked against hand computations."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.conftest import DATA
from vllm_guard.preflight.kv_cache import kv_bytes_for_length, kv_bytes_per_token
from vllm_guard.preflight.memory_params import Params
from vllm_guard.probes import bundled
from vllm_guard.probes.model import probe_model
from vllm_guard.probes.model_config import normalize

MODELS = DATA / "models"


def facts(name: str):
    return probe_model(str(MODELS / name), revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir="/nonexistent")


# (fixture, derived max len, its key, KV bytes/token in the model dtype at TP=1, hand computation)
CASES = [
    ("llama-3.1-8b", 131072, "max_position_embeddings", 2 * 32 * 8 * 128 * 2),  # llama3 RoPE: not scaled
    ("llama-2-13b", 4096, "max_position_embeddings", 2 * 40 * 40 * 128 * 2),  # no GQA: 800 KiB
    ("qwen2.5-7b", 32768, "max_position_embeddings", 2 * 28 * 4 * 128 * 2),
    ("mistral-7b-v0.3", 32768, "max_position_embeddings", 2 * 32 * 8 * 128 * 2),
    ("gemma-2-9b", 8192, "max_position_embeddings", 2 * 42 * 8 * 256 * 2),  # head dim 256
    ("deepseek-v2-lite", 4096 * 40, "max_position_embeddings", 27 * (512 + 64) * 2),  # MLA latent, YaRN x40
    ("mistral-small-3.1-multimodal", 131072, "max_position_embeddings", 2 * 40 * 8 * 128 * 2),  # text_config
    ("qwen2.5-32b-awq", 32768, "max_position_embeddings", 2 * 64 * 8 * 128 * 2),  # fp16 checkpoint
    ("qwen3-0.6b", 40960, "max_position_embeddings", 2 * 28 * 8 * 128 * 2),  # explicit head_dim 128
]


@pytest.mark.parametrize(("name", "derived", "key", "kv"), CASES, ids=[c[0] for c in CASES])
def test_fixture_models(name: str, derived: int, key: str, kv: int) -> None:
    f = facts(name)
    assert f.source == "local"
    assert (f.derived_max_len, f.derived_max_len_key) == (derived, key)
    assert kv_bytes_per_token(f, Params()) == kv


def test_llama_3_1_8b_exact() -> None:
    f = facts("llama-3.1-8b")
    assert kv_bytes_per_token(f, Params()) == 131072  # 128 KiB
    assert kv_bytes_for_length(f, Params(), 131072, 16, 8192) == 16 * 2**30  # 16 GiB for 131072 tokens
    assert (f.weights_bytes, f.weights_source) == (16060522496, "index")
    assert f.weights_local is False  # the index names shards that are not in the fixture


def test_llama_2_13b_is_800_kib_per_token() -> None:
    assert kv_bytes_per_token(facts("llama-2-13b"), Params()) == 800 * 1024


def test_kv_dtype_and_tensor_parallel() -> None:
    f = facts("llama-3.1-8b")
    assert kv_bytes_per_token(f, Params(kv_cache_dtype="fp8")) == 65536
    assert kv_bytes_per_token(f, Params(tensor_parallel_size=2)) == 65536  # 4 of the 8 KV heads per GPU
    assert kv_bytes_per_token(f, Params(tensor_parallel_size=16)) == 2 * 32 * 1 * 128 * 2  # replicated
    assert kv_bytes_per_token(f, Params(pipeline_parallel_size=2)) == 65536  # half the layers per stage
    awq = facts("qwen2.5-32b-awq")
    assert kv_bytes_per_token(awq, Params(tensor_parallel_size=2)) == 2 * 64 * 4 * 128 * 2


def test_mla_latent_is_not_split_by_tensor_parallel() -> None:
    f = facts("deepseek-v2-lite")
    assert f.is_mla
    assert kv_bytes_per_token(f, Params(tensor_parallel_size=2)) == 27 * 576 * 2
    assert kv_bytes_per_token(f, Params(kv_cache_dtype="fp8_ds_mla")) == 27 * 656


def test_gemma_2_sliding_window_layers() -> None:
    f = facts("gemma-2-9b")
    assert f.sliding_window == 4096 and f.head_dim == 256
    assert f.layer_types is not None and f.layer_types[:4] == ("sliding", "full", "sliding", "full")
    page = 16 * 2 * 8 * 256 * 2  # one block of one layer
    # 21 full layers hold all 512 blocks; 21 sliding layers hold ceil((4095 + 2048) / 16) + 1 = 385.
    assert kv_bytes_for_length(f, Params(), 8192, 16, 2048) == 21 * 512 * page + 21 * 385 * page
    # Below the window every layer holds the whole request.
    assert kv_bytes_for_length(f, Params(), 1024, 16, 2048) == 42 * 64 * page


def test_multimodal_reads_the_text_config() -> None:
    f = facts("mistral-small-3.1-multimodal")
    assert f.is_multimodal and f.architecture == "Mistral3ForConditionalGeneration"
    assert (f.num_layers, f.num_kv_heads, f.hidden_size, f.vocab_size) == (40, 8, 5120, 131072)


def test_awq_quantization_config() -> None:
    f = facts("qwen2.5-32b-awq")
    assert (f.quant_method, f.quant_bits, f.quant_group_size, f.torch_dtype) == ("awq", 4, 128, "float16")
    assert f.weights_source == "estimate"
    assert 18.5e9 < (f.weights_bytes or 0) < 20e9  # the real checkpoint is about 19.3 GB


def test_qwen2_5_unused_sliding_window_is_ignored() -> None:
    assert facts("qwen2.5-7b").sliding_window is None


@pytest.mark.parametrize(
    ("config", "derived", "key"),
    [({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}, 8192,
      "max_position_embeddings"),
     ({"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0,
                                                          "original_max_position_embeddings": 32768}}, 131072,
      "max_position_embeddings"),
     ({"max_position_embeddings": 8192, "seq_length": 4096}, 4096, "seq_length"),
     ({"n_positions": 1024}, 1024, "n_positions"),
     ({}, 2048, "default"),
     ({"max_position_embeddings": 131072, "model_type": "gemma3_text", "rope_scaling": {"rope_type": "linear",
                                                                                         "factor": 8.0}}, 131072,
      "max_position_embeddings")],
)
def test_derived_max_len_rules(config: dict, derived: int, key: str) -> None:
    f = normalize(config)
    assert (f["derived_max_len"], f["derived_max_len_key"]) == (derived, key)


def test_no_gqa_key_means_every_head_has_kv() -> None:
    assert normalize({"num_attention_heads": 40, "hidden_size": 5120})["num_kv_heads"] == 40


def test_disable_sliding_window_caps_the_length() -> None:
    f = normalize({"max_position_embeddings": 32768, "sliding_window": 4096, "num_hidden_layers": 2},
                  disable_sliding_window=True)
    assert f["derived_max_len"] == 4096 and f["layer_types"] is None


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    header, offset = {}, 0
    sizes = {"BF16": 2, "F32": 4}
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)
    return offset


def test_local_safetensors_headers_give_the_exact_size(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((MODELS / "qwen3-0.6b" / "config.json").read_text())
    size = _write_safetensors(tmp_path / "model.safetensors", {"a": ("BF16", [64, 32]), "b": ("F32", [10])})
    f = probe_model(str(tmp_path), revision=None, environ={}, cache_dir="/nonexistent")
    assert (f.weights_bytes, f.weights_source, f.weights_local) == (size, "safetensors", True)
    assert size == 64 * 32 * 2 + 40


def test_hf_cache_is_read_offline(tmp_path: Path) -> None:
    """A model in the Hugging Face cache layout is found without any network."""
    snap = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("abc123")
    (snap / "config.json").write_text((MODELS / "llama-3.1-8b" / "config.json").read_text())
    size = _write_safetensors(snap / "model.safetensors", {"w": ("BF16", [8, 8])})
    f = probe_model("org/tiny", revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir=str(tmp_path))
    assert (f.source, f.weights_bytes, f.weights_local) == ("cache", size, True)


def test_bundled_facts_work_offline() -> None:
    for model in bundled.models():
        f = probe_model(model, revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir="/nonexistent")
        assert f.source == "bundled" and f.weights_bytes and f.derived_max_len, model
        assert kv_bytes_per_token(f, Params()), model


def test_unknown_model_is_a_fact_not_an_error() -> None:
    f = probe_model("nobody/nothing", revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir="/nonexistent")
    assert f.source == "unknown" and f.weights_bytes is None and f.notes


def test_bundled_ids_are_case_insensitive() -> None:
    f = probe_model("qwen/QWEN3-8b", revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir="/nonexistent")
    assert f.source == "bundled" and f.num_layers == 36 and f.weights_bytes


def test_quantized_variants_resolve_to_their_base_with_their_own_weight_size() -> None:
    env = {"HF_HUB_OFFLINE": "1"}
    base = probe_model("Qwen/Qwen3-32B", revision=None, environ=env, cache_dir="/nonexistent")
    awq = probe_model("Qwen/Qwen3-32B-AWQ", revision=None, environ=env, cache_dir="/nonexistent")
    fp8 = probe_model("RedHatAI/Qwen3-32B-FP8-dynamic", revision=None, environ=env, cache_dir="/nonexistent")
    assert awq.num_layers == fp8.num_layers == base.num_layers == 64
    assert awq.quant_method == "awq" and fp8.quant_method == "fp8"
    assert base.weights_bytes and awq.weights_bytes and fp8.weights_bytes
    # 4-bit is about a quarter of bf16, FP8 about half (embeddings stay 16-bit in both).
    assert 0.25 < awq.weights_bytes / base.weights_bytes < 0.35
    assert 0.5 < fp8.weights_bytes / base.weights_bytes < 0.55
    unknown = probe_model("Nobody/Unknown-7B-AWQ", revision=None, environ=env, cache_dir="/nonexistent")
    assert unknown.source == "unknown"
