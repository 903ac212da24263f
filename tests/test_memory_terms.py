"""The memory terms beyond weights and KV (issue 27), each against a real start-up log that printed it.

The logs are tests/data/real-logs/startups (index.json names each source); the configs are the bundled ones
(vllm_guard/data/bundled-models.json, each citing where it was read). `check` runs as a user runs it, against a
machine snapshot written here from the shipped T4 one, and its --json and text are read back.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight import kv_cache, memory_terms
from vllm_guard.preflight.memory_params import Params
from vllm_guard.probes import bundled, model_config

ROOT = Path(__file__).resolve().parents[1]
STARTUPS = ROOT / "tests" / "data" / "real-logs" / "startups"
GIB = 2**30


def facts(model_id: str, *, drop_quantization: bool = False) -> ModelFacts:
    entry = bundled.entries()[model_id]
    config = dict(entry["config"])
    if drop_quantization:
        config.pop("quantization_config", None)
    fields = model_config.normalize(config)
    weights = entry.get("weights_bytes") if not drop_quantization else None
    weights = weights or model_config.estimate_weights_bytes(fields, config)
    return ModelFacts(model=model_id, source="bundled", weights_bytes=weights,
                      weights_source="index" if entry.get("weights_bytes") and not drop_quantization else "estimate",
                      **fields)


def printed(log: str, pattern: str) -> str:
    m = re.search(pattern, (STARTUPS / log).read_text(errors="replace"))
    assert m, (log, pattern)
    return m.group(1)


# --- the hybrid block size: vLLM's own "Setting attention block size to N tokens" ------------------------------

@pytest.mark.parametrize(("log", "model_id", "params"), [
    # Qwen3.5-27B at TP 4 (vLLM 0.19.0): 48 gated-delta-net layers of a (3 x 10,240)-row conv and 48 x 128 x 128
    # fp32 state per GPU against 1,024 attention bytes per token
    ("048-qwen3.5-27b.log", "Qwen/Qwen3.5-27B", Params(tensor_parallel_size=4, max_model_len=32768)),
    ("049-qwen3.5-27b.log", "Qwen/Qwen3.5-27B", Params(tensor_parallel_size=4, max_model_len=32768)),
    # Qwen3.6-27B at TP 2 (vLLM 0.27.1), the shapes of nvidia's NVFP4 checkpoint of it
    ("063-qwen3.6-27b.log", "nvidia/Qwen3.6-27B-NVFP4", Params(tensor_parallel_size=2, max_model_len=65536)),
    # Qwen3.6-35B-A3B at TP 1 (vLLM 0.19.2rc1)
    ("078-qwen3.6-35b-a3b.log", "Qwen/Qwen3.6-35B-A3B", Params(max_model_len=131072)),
    # the same model with MTP drafting 3 tokens (vLLM 0.25.1): three more conv rows per state layer
    ("032-qwen3.6-35b-a3b-nvfp4.log", "nvidia/Qwen3.6-35B-A3B-NVFP4",
     Params(max_model_len=262144, speculative_config={"method": "mtp", "num_speculative_tokens": 3})),
])
def test_a_hybrid_models_block_size_is_the_one_vllm_set(log: str, model_id: str, params: Params) -> None:
    said = int(printed(log, r"Setting attention block size to (\d+) tokens"))
    model = facts(model_id)
    if log.startswith("063"):  # the bf16 model: nvidia's checkpoint declares the FP8 KV cache it does not have
        model = dataclasses.replace(model, checkpoint_kv_dtype=None)
    assert kv_cache.block_size(model, params) == said


def test_a_model_without_state_layers_keeps_the_default_block() -> None:
    assert kv_cache.block_size(facts("Qwen/Qwen3-8B"), Params()) == kv_cache.DEFAULT_BLOCK_SIZE


# --- check shows each term, from a real start-up that printed it --------------------------------------------------

def machine(tmp_path: Path, gpus: int) -> Path:
    """The shipped T4 snapshot with ``gpus`` GPUs (Kaggle's 2 x T4 of startups/044)."""
    snap = json.loads((ROOT / "profiles" / "machines" / "t4-16gb.json").read_text())
    one = snap["gpus"][0]
    snap["gpus"] = [{**one, "index": i, "uuid": f"{one['uuid']}-{i}", "pci_bus_id": f"00000000:0{i + 1}:00.0"}
                    for i in range(gpus)]
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(snap))
    return path


def check(tmp_path: Path, gpus: int, *args: str) -> tuple[dict, str]:
    cmd = [sys.executable, "-m", "vllm_guard", "check", "--machine", str(machine(tmp_path, gpus))]
    env = {"HF_HUB_OFFLINE": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "NO_COLOR": "1",
           "COLUMNS": "200"}
    done = subprocess.run([*cmd, "--json", *args], capture_output=True, text=True, env=env, timeout=60)
    text = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=60)
    assert "Traceback" not in done.stderr + text.stderr, done.stderr + text.stderr
    return json.loads(done.stdout), text.stdout


def terms(report: dict) -> dict[str, dict]:
    estimate = report["memory"]
    return {t["name"]: t for t in estimate["terms"]}


def test_a_lora_profile_shows_its_buffers_in_the_weights_vllm_loaded(tmp_path: Path) -> None:
    # startups/044 (vLLM 0.22.1, 2 x T4, Kaggle): Qwen3-8B in float16 at TP 2 with --enable-lora and vLLM's
    # defaults of one slot of rank 16; each worker printed "Model loading took 7.7 GiB", the weights and the
    # LoRA buffers together (gpu_model_runner.load_model measures both).
    loaded = float(printed("044-qwen3-8b-lora.log", r"Model loading took ([0-9.]+) GiB"))
    report, text = check(tmp_path, 2, "Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--dtype", "float16",
                         "--enable-lora", "--max-model-len", "4096", "--gpu-memory-utilization", "0.85",
                         "--enforce-eager", "--max-num-seqs", "1")
    lora = terms(report)["LoRA buffers"]
    assert lora["where"] == "weights" and lora["bytes_per_gpu"] > 0
    weights = report["memory"]["weights_bytes_per_gpu"]
    assert abs((weights + lora["bytes_per_gpu"]) / GIB - loaded) <= 0.05 + 1e-9  # the log prints one decimal
    assert "LoRA buffers" in text and "1 adapter slot(s) x rank 16" in text


def test_a_multimodal_model_shows_its_encoder_cache_at_the_budget_vllm_printed(tmp_path: Path) -> None:
    # startups/048 (vLLM 0.19.0): Qwen3.5-27B at TP 4, "Encoder cache will be initialized with a budget of 16384
    # tokens"; the guard's term is that many language-model embeddings in the profile run's peak.
    budget = int(printed("048-qwen3.5-27b.log", r"Encoder cache will be initialized with a budget of (\d+) tokens"))
    report, text = check(tmp_path, 4, "Qwen/Qwen3.5-27B", "--tensor-parallel-size", "4",
                         "--max-model-len", "32768")
    encoder = terms(report)["encoder cache"]
    assert encoder["where"] == "activation"
    hidden = bundled.entries()["Qwen/Qwen3.5-27B"]["config"]["text_config"]["hidden_size"]
    assert encoder["bytes_per_gpu"] == budget * hidden * 2
    assert f"a budget of {budget:,} tokens" in text
    # text only: no encoder is profiled, and the term says so
    report, _ = check(tmp_path, 4, "Qwen/Qwen3.5-27B", "--tensor-parallel-size", "4", "--max-model-len", "32768",
                      "--limit-mm-per-prompt", '{"image": 0, "video": 0}')
    assert terms(report)["encoder cache"]["bytes_per_gpu"] == 0


def test_a_speculative_profile_shows_its_drafter_and_the_block_size_it_forces(tmp_path: Path) -> None:
    # startups/032 (vLLM 0.25.1): Qwen3.6-35B-A3B with '{"method": "mtp", "num_speculative_tokens": 3}': "Loading
    # drafter model...", "Setting attention block size to 1072 tokens" (1,056 without MTP: startups/078), and the
    # drafter's attention layer in the KV pool.
    block = int(printed("032-qwen3.6-35b-a3b-nvfp4.log", r"Setting attention block size to (\d+) tokens"))
    spec = '{"method": "mtp", "num_speculative_tokens": 3}'
    report, text = check(tmp_path, 1, "Qwen/Qwen3.6-35B-A3B", "--max-model-len", "8192",
                         "--speculative-config", spec)
    mtp = terms(report)["MTP layers"]
    assert mtp["where"] == "weights" and mtp["bytes_per_gpu"] > GIB  # one MoE decoder layer of 256 experts, 16-bit
    assert report["memory"]["block_size"] == block
    assert f"in blocks of {block:,} tokens" in text and "MTP layers" in text
    plain, _ = check(tmp_path, 1, "Qwen/Qwen3.6-35B-A3B", "--max-model-len", "8192")
    assert "MTP layers" not in terms(plain)
    # the drafter adds one full-attention layer to the ten of the target
    assert report["memory"]["kv_bytes_per_token"] == plain["memory"]["kv_bytes_per_token"] * 11 // 10


def test_a_dflash_drafter_is_its_checkpoint_and_holds_full_kv(tmp_path: Path) -> None:
    # startups/067 (vLLM 0.25.1): poolside/Laguna-S-2.1-INT4 with poolside's DFlash drafter, "Checkpoint size:
    # 2.08 GiB" for the drafter (a bf16 one despite its -INT4 name), which decodes with the target's embeddings and
    # lm_head ("Sharing target model embedding weights with the draft model" in vLLM's DFlash runs: startups/075).
    drafter_gib = float(re.findall(r"Checkpoint size: ([0-9.]+) GiB",
                                   (STARTUPS / "067-laguna-s-2.1-int4-dflash.log").read_text())[1])
    spec = '{"method": "dflash", "model": "poolside/Laguna-S-2.1-DFlash", "num_speculative_tokens": 15}'
    report, text = check(tmp_path, 1, "poolside/Laguna-S-2.1-FP8", "--max-model-len", "8192",
                         "--speculative-config", spec)
    draft = terms(report)["draft model"]
    assert draft["where"] == "weights"
    assert abs(draft["bytes_per_gpu"] / GIB - drafter_gib) <= 0.005 + 1e-9  # the log prints two decimals
    assert "draft model" in text and "with the target's embeddings and lm_head" in text
    # the logs' own --speculative-config names no method: vLLM reads "dflash" from the drafter's name
    # (config/speculative.py), and so does the guard
    spec_as_logged = '{"model": "poolside/Laguna-S-2.1-DFlash", "num_speculative_tokens": 15}'
    logged, _ = check(tmp_path, 1, "poolside/Laguna-S-2.1-FP8", "--max-model-len", "8192",
                      "--speculative-config", spec_as_logged)
    assert terms(logged)["draft model"]["bytes_per_gpu"] == draft["bytes_per_gpu"]
    # its 6 sliding-window layers take full KV (vLLM clears a DFlash drafter's window), the target's full shape:
    # 12 full + 6 drafter layers beside the target's 36 sliding ones
    target = facts("poolside/Laguna-S-2.1-FP8")
    params = Params(max_model_len=8192, speculative_config=json.loads(spec),
                    draft=facts("poolside/Laguna-S-2.1-DFlash"))
    assert kv_cache.layer_counts(target, params) == (18, 36, 0)


# --- the pure terms -----------------------------------------------------------------------------------------------

def test_lora_buffers_follow_vllms_shapes() -> None:
    # Llama-3.1-8B, 4 slots of rank 64 at TP 1: per layer A (rank x in) and B (out x rank) for qkv (3 A slices),
    # o, gate_up (2 slices each) and down: 81,920 rank-columns per layer x 32 layers x 4 x 64 x 2 bytes
    term = memory_terms.lora(facts("meta-llama/Llama-3.1-8B-Instruct"), 4, 64, 2, 1)
    assert term.bytes_per_gpu == 81920 * 32 * 4 * 64 * 2


def test_an_unknown_draft_model_is_unknown_not_zero() -> None:
    spec = memory_terms.speculative(facts("Qwen/Qwen3-8B"), {"method": "eagle3", "model": "someone/eagle3-head"},
                                    None, 1)
    assert spec is not None and spec.weights.bytes_per_gpu is None and "not known" in spec.weights.how
    assert spec.kv_layers == 1
    ngram = memory_terms.speculative(facts("Qwen/Qwen3-8B"), {"method": "ngram", "num_speculative_tokens": 4},
                                     None, 1)
    assert ngram is not None and ngram.weights.bytes_per_gpu == 0 and ngram.kv_layers == 0


# --- NVFP4's KV cache: 4 bits per element and one FP8 scale per 16 -------------------------------------------

@pytest.mark.parametrize(("log", "model_id", "fp16_log"), [
    # gemma-4-31B-it at --kv-cache-dtype nvfp4 (a vLLM 0.22.1rc1 build; a source build), against the same model's
    # bf16 cache on the same build (107: vLLM's per-token figure of one request, 8,192 tokens)
    ("116-gemma-4-31b-it.log", "google/gemma-4-31B-it", "107-gemma-4-31b-it.log"),
    ("119-gemma-4-31b-it.log", "google/gemma-4-31B-it", "107-gemma-4-31b-it.log"),
    # gemma-4-E4B-it, nvfp4 against bf16 on the same build
    ("109-gemma-4-e4b-it.log", "google/gemma-4-E4B-it", "108-gemma-4-e4b-it.log"),
])
def test_an_nvfp4_kv_cache_is_nine_sixteenths_of_a_byte_per_element(log: str, model_id: str, fp16_log: str) -> None:
    def per_token(name: str) -> float:
        gib = float(printed(name, r"Available KV cache memory: ([\d.]+) GiB"))
        tokens = int(printed(name, r"GPU KV cache size: ([\d,]+) tokens").replace(",", ""))
        return gib * GIB / tokens

    model = facts(model_id)
    assert kv_cache.kv_dtype_bytes(model, Params(kv_cache_dtype="nvfp4")) == 0.5625
    # vLLM's own ratio: the nvfp4 cache holds 2 / 0.5625 = 3.56 times the bf16 cache's tokens per byte
    assert per_token(fp16_log) / per_token(log) == pytest.approx(2 / 0.5625, rel=0.01)
