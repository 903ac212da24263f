"""Models planned as a bundled model of the same shapes (issue 27), and a tower vLLM does not build.

DiffusionGemma runs one Gemma 4 backbone (vLLM's diffusion_gemma.py); Qwen3-VL-Embedding-2B is Qwen3-VL-2B's shapes;
a Qwen VL model limited to no images and no videos loads no vision tower. Each is checked against the start-up log
that printed it (tests/data/real-logs/startups; index.json names each source).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.memory_params import Params
from vllm_guard.preflight.weights import loaded_weights
from vllm_guard.probes import bundled, model_config

STARTUPS = Path(__file__).resolve().parents[1] / "tests" / "data" / "real-logs" / "startups"
GIB = 2**30


def facts(model_id: str) -> ModelFacts:
    entry = bundled.entries()[model_id]
    fields = model_config.normalize(entry["config"])
    weights = model_config.estimate_weights_bytes(fields, entry["config"])
    return ModelFacts(model=model_id, source="bundled", weights_bytes=weights, weights_source="estimate", **fields)


def printed(log: str, pattern: str) -> float:
    m = re.search(pattern, (STARTUPS / log).read_text(errors="replace"))
    assert m, (log, pattern)
    return float(m.group(1).replace(",", ""))


def test_an_alias_is_its_base_under_its_own_architecture() -> None:
    diffusion, gemma = facts("google/diffusiongemma-26B-A4B-it"), facts("google/gemma-4-26B-A4B-it")
    assert (diffusion.architecture, diffusion.model_type) == ("DiffusionGemmaForBlockDiffusion", "diffusion_gemma")
    assert diffusion.weights_bytes == gemma.weights_bytes
    assert (diffusion.num_layers, diffusion.hidden_size, diffusion.num_experts) == (30, 2816, 128)


def test_diffusiongemmas_weights_are_gemma_4s_within_two_percent() -> None:
    loaded = printed("101-diffusiongemma-26b-a4b-it.log", r"Model loading took ([0-9.]+) GiB")
    planned = loaded_weights(facts("google/diffusiongemma-26B-A4B-it"), Params()).per_gpu(Params())
    assert planned is not None
    assert planned / GIB == pytest.approx(loaded, rel=0.02)  # 47.78 of 48.58: the 0.03 GiB self-conditioning left out


def test_a_model_with_no_images_or_videos_loads_no_vision_tower() -> None:
    # startups/054: Qwen3-VL-Embedding-2B, images and videos 0, float16: "running in text-only mode", 3.46 GiB loaded
    model = facts("Qwen/Qwen3-VL-Embedding-2B")
    assert model.vision_params
    both = Params(limit_mm_per_prompt={"image": 0, "video": 0})
    full, text = loaded_weights(model, Params()), loaded_weights(model, both)
    assert full.bytes is not None and text.bytes is not None
    assert full.bytes - text.bytes == 2 * model.vision_params
    assert any("no vision tower" in n for n in text.notes)
    assert text.bytes / GIB == pytest.approx(printed("054-qwen3-vl-embedding-2b.log",
                                                     r"Model loading took ([0-9.]+) GiB"), rel=0.08)
    # a video still accepted keeps the tower; --language-model-only sets every limit to 0
    assert loaded_weights(model, Params(limit_mm_per_prompt={"image": 0})).bytes == full.bytes
    assert loaded_weights(model, Params(language_model_only=True)).bytes == text.bytes


def test_language_model_only_drops_the_towers_as_the_logs_show() -> None:
    # gemma-4-31B-it loaded 58.99 GiB with its tower (startups/119) and 57.91 under --language-model-only (073);
    # gemma-4-E4B-it, whose towers read images and audio, 15.16 (011) and 14.28 (108)
    pairs = (("google/gemma-4-31B-it", "119-gemma-4-31b-it.log", "073-gemma-4-31b-it.log"),
             ("google/gemma-4-E4B-it", "011-gemma-4-e4b-it.log", "108-gemma-4-e4b-it.log"))
    for model_id, with_tower, without in pairs:
        model = facts(model_id)
        full, text = loaded_weights(model, Params()), loaded_weights(model, Params(language_model_only=True))
        assert full.bytes is not None and text.bytes is not None
        assert text.bytes < full.bytes, model_id
        for loaded, log in ((full.bytes, with_tower), (text.bytes, without)):
            assert loaded / GIB == pytest.approx(printed(log, r"Model loading took ([0-9.]+) GiB"), rel=0.03), log
    e4b = facts("google/gemma-4-E4B-it")
    assert e4b.audio_params
    dropped = loaded_weights(e4b, Params(language_model_only=True))
    assert any("vision tower and audio encoder" in n for n in dropped.notes)


def test_the_encoder_cache_counts_while_any_medium_the_model_reads_is_accepted() -> None:
    from vllm_guard.preflight import memory_terms
    model = facts("Qwen/Qwen3-VL-2B-Instruct")
    video_left = memory_terms.encoder_cache(model, Params(limit_mm_per_prompt={"image": 0}), 8192, 2)
    assert video_left is not None and video_left.bytes_per_gpu  # videos keep vLLM's default limit of 999
    none = memory_terms.encoder_cache(model, Params(limit_mm_per_prompt={"image": 0, "video": 0}), 8192, 2)
    assert none is not None and none.bytes_per_gpu == 0


def test_diffusiongemmas_own_config_plans_as_the_alias_does() -> None:
    # the real text_config (lablup/mlxcel's literal snippet): model_type diffusion_gemma_text, without the two flags
    # vLLM sets itself (attention_k_eq_v, enable_moe_block); read from a local folder or the Hub it must plan alike
    import copy
    alias = bundled.entries()["google/diffusiongemma-26B-A4B-it"]["config"]
    real = copy.deepcopy(alias)
    real["text_config"]["model_type"] = "diffusion_gemma_text"
    for flag in ("attention_k_eq_v", "enable_moe_block"):
        real["text_config"].pop(flag)
    planned = [(model_config.estimate_weights_bytes(f, c), f["expert_bytes"])
               for c in (alias, real) for f in [model_config.normalize(c)]]
    assert planned[0] == planned[1]


def test_an_image_only_tower_goes_with_images_at_zero() -> None:
    # Gemma 3's tower reads images only (vLLM 0.32 gemma3_mm.py: _mark_tower_model(vllm_config, "image")), so
    # {"image": 0} alone leaves it unbuilt, and profiles no encoder; Qwen3-VL's also reads videos and keeps it
    from vllm_guard.preflight import memory_terms
    gemma = facts("google/gemma-3-4b-it")
    images_off = Params(limit_mm_per_prompt={"image": 0})
    full, text = loaded_weights(gemma, Params()), loaded_weights(gemma, images_off)
    assert full.bytes is not None and text.bytes is not None and gemma.vision_params
    assert full.bytes - text.bytes == 2 * gemma.vision_params
    encoder = memory_terms.encoder_cache(gemma, images_off, 8192, 2)
    assert encoder is not None and encoder.bytes_per_gpu == 0
    qwen = facts("Qwen/Qwen3-VL-2B-Instruct")
    assert loaded_weights(qwen, images_off).bytes == loaded_weights(qwen, Params()).bytes


def test_a_tower_built_whatever_the_limits_is_kept() -> None:
    # GLM-4.1V builds its tower unconditionally in vLLM 0.32 (glm4v.py has no _mark_tower_model)
    import dataclasses
    glm = dataclasses.replace(facts("Qwen/Qwen3-VL-2B-Instruct"), model_type="glm4v")
    assert loaded_weights(glm, Params(language_model_only=True)).bytes == loaded_weights(glm, Params()).bytes
