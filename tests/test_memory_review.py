"""What a newcomer's review found false in `check`'s memory model, each case against a real figure: vLLM's own
"Model loading took" line, a model card's parameter count, or the config's own layer placement keys."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.kv_cache import kv_bytes_per_token
from vllm_guard.preflight.memory_params import Params
from vllm_guard.preflight.weights import loaded_weights
from vllm_guard.probes import model_arch
from vllm_guard.probes.bundled import entries as bundled_entries
from vllm_guard.probes.model import probe_model
from vllm_guard.probes.model_config import estimate_parameters, normalize
from vllm_guard.probes.model_weights import _mlp_matrices

ROOT = Path(__file__).resolve().parents[1]
STARTUPS = ROOT / "tests" / "data" / "real-logs" / "startups"
GIB = 2**30


def bundled(model_id: str) -> ModelFacts:
    return probe_model(model_id, revision=None, environ={"HF_HUB_OFFLINE": "1"}, cache_dir="/nonexistent")


def text_config(model_id: str) -> dict:
    config = bundled_entries()[model_id]["config"]
    return dict(config.get("text_config") or config)


def loaded_gib(log: str) -> float:
    m = re.search(r"Model loading took ([0-9.]+) GiB", (STARTUPS / log).read_text(errors="replace"))
    assert m, log
    return float(m.group(1))


# --- an online --quantization of a 16-bit checkpoint ---------------------------------------------------------------

def test_online_fp8_shrinks_the_weights_as_vllm_loaded_them() -> None:
    # startups/014 (vLLM 0.22.1): Qwen3-30B-A3B-Instruct-2507 in bf16 served with --quantization fp8 printed "Model
    # loading took 29.08 GiB"; the bf16 checkpoint is 56.87 GiB, which the guard used to plan with
    model = bundled("Qwen/Qwen3-30B-A3B")
    assert model.quant_method is None and model.weights_bytes is not None
    assert model.weights_bytes / GIB > 56
    got = loaded_weights(model, Params(quantization="fp8")).bytes
    assert got is not None
    assert abs(got / GIB / loaded_gib("014-qwen3-30b-a3b-instruct-2507.log") - 1) < 0.01


def test_online_quantization_leaves_a_quantized_checkpoint_and_an_unknown_scheme_alone() -> None:
    awq = bundled("Qwen/Qwen2.5-14B-AWQ")  # a bundled base plus its -AWQ suffix: quant_method awq
    assert awq.quant_method == "awq"
    assert loaded_weights(awq, Params(quantization="fp8")).bytes == awq.weights_bytes
    plain = bundled("meta-llama/Llama-3.1-8B-Instruct")
    unknown = loaded_weights(plain, Params(quantization="torchao"))
    assert unknown.bytes == plain.weights_bytes
    assert any("not modelled" in n for n in unknown.notes)


@pytest.mark.parametrize("method", ["experts_int8", "int8_per_channel_weight_only"])
def test_the_experts_only_schemes_convert_the_experts_only(method: str) -> None:
    # vLLM: ExpertsInt8Config quantizes FusedMoE layers; _ONLINE_SHORTHANDS (config/quantization.py) gives
    # int8_per_channel_weight_only and nvfp4_per_token a moe QuantSpec and no linear one
    model = bundled("Qwen/Qwen3-30B-A3B")
    assert model.weights_bytes is not None and model.expert_params
    got = loaded_weights(model, Params(quantization=method)).bytes
    assert got == model.weights_bytes - model.expert_params  # two bytes each become one
    dense = bundled("meta-llama/Llama-3.1-8B-Instruct")  # no experts: nothing changes (the review's false PASS)
    assert loaded_weights(dense, Params(quantization=method)).bytes == dense.weights_bytes
    assert loaded_weights(dense, Params(quantization="nvfp4_per_token")).bytes == dense.weights_bytes


def check(tmp_path: Path, *args: str) -> tuple[dict, str]:
    cmd = [sys.executable, "-m", "vllm_guard", "check", "--machine", str(ROOT / "profiles" / "machines" /
                                                                         "l4-24gb.json")]
    env = {"HF_HUB_OFFLINE": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run([*cmd, "--json", *args], capture_output=True, text=True, env=env, timeout=60)
    text = subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=60)
    assert "Traceback" not in done.stderr + text.stderr, done.stderr + text.stderr
    return json.loads(done.stdout), text.stdout


def test_check_no_longer_fails_llama_8b_at_64k_with_online_fp8_on_an_l4(tmp_path: Path) -> None:
    # The review's command: it said weights 14.96 GiB and kv_fit FAIL with the fix --max-model-len 38112
    report, text = check(tmp_path, "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "65536",
                         "--quantization", "fp8")
    weights = report["memory"]["weights_bytes_per_gpu"]
    assert 8.3 < weights / GIB < 8.6  # 6.98e9 linear weights in fp8, 2 x 525M embedding and head in bf16
    kv_fit = next(f for f in report["checks"] if f["id"] == "model.kv_fit")
    assert kv_fit["status"] == "pass", kv_fit
    said = "--quantization fp8 quantizes the 16-bit checkpoint as it loads"
    assert said in text and any(said in n for n in report["notes"])
    # the host still reads the whole bf16 checkpoint from disk
    host = next(f for f in report["checks"] if f["id"] == "host.disk")
    assert "14.96 GiB" in host["message"]


# --- the dtype vLLM serves a checkpoint in --------------------------------------------------------------------------

def test_a_float32_checkpoint_is_served_in_16_bits_unless_float32_is_asked_for() -> None:
    bf16 = bundled("meta-llama/Llama-3.1-8B-Instruct")
    assert bf16.weights_bytes is not None
    fp32 = dataclasses.replace(bf16, torch_dtype="float32", weights_bytes=2 * bf16.weights_bytes)
    assert loaded_weights(fp32, Params()).bytes == bf16.weights_bytes
    assert loaded_weights(fp32, Params(dtype="float32")).bytes == fp32.weights_bytes
    assert loaded_weights(bf16, Params(dtype="float32")).bytes == 2 * bf16.weights_bytes
    assert loaded_weights(bf16, Params(dtype="float16")).bytes == bf16.weights_bytes


def test_a_float32_label_over_16_bit_files_is_not_halved() -> None:
    # the index says 2 bytes a parameter (Llama-3.1-8B: 16,060,522,496 for 8.03e9): the files are 16-bit whatever
    # config.json's torch_dtype says, and vLLM serves them at that size
    bf16 = bundled("meta-llama/Llama-3.1-8B-Instruct")
    mislabelled = dataclasses.replace(bf16, torch_dtype="float32")
    loaded = loaded_weights(mislabelled, Params())
    assert loaded.bytes == bf16.weights_bytes
    assert any("holds about 2 bytes a parameter" in n for n in loaded.notes)


# --- layers by the config's own placement keys ---------------------------------------------------------------------

def test_qwen3_next_attends_fully_on_every_fourth_layer_only() -> None:
    # Qwen3-Next's config.json has full_attention_interval 4 and no layer_types: transformers' Qwen3NextConfig
    # makes layers 3, 7, ... full attention and the rest gated DeltaNet. At TP 4 its 2 KV heads are replicated,
    # one per GPU: 12 layers x K and V x 1 head x 256 x 2 bytes (the review saw 48 layers' worth, 49,152).
    model = bundled("Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert model.layer_types is not None
    assert model.layer_types.count(model_arch.FULL) == 12 and model.layer_types.count(model_arch.STATE) == 36
    assert model.layer_types[3] == model_arch.FULL and model.layer_types[0] == model_arch.STATE
    assert kv_bytes_per_token(model, Params(tensor_parallel_size=4)) == 12 * 2 * 1 * 256 * 2


@pytest.mark.parametrize(("model_id", "card_params", "moe_layers"), [
    # NVIDIA's card (replicate.com/nvidia/nemotron-3-nano-30b-a3b): "31.6 billion total parameters"; its
    # hybrid_override_pattern puts the 128 experts on its 23 "E" layers, and relu2 has no gate (the review saw
    # 190 GiB: every layer an MoE of gated experts)
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6e9, 23),
    # Meta's Llama 4 cards: Scout "109B total parameters", Maverick "400B"; Maverick's 128 experts sit on every
    # other layer (interleave_moe_layer_step 2), and each MoE layer adds one shared expert
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9, 48),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400e9, 24),
])
def test_moe_weights_match_the_model_cards(model_id: str, card_params: float, moe_layers: int) -> None:
    model = bundled(model_id)
    assert model.weights_source == "estimate" and model.weights_bytes is not None
    assert abs(model.weights_bytes / 2 / card_params - 1) < 0.02  # bf16: two bytes a parameter
    text = text_config(model_id)
    assert sum(model_arch.moe_layer_flags(text, int(text["num_hidden_layers"]))) == moe_layers


@pytest.mark.parametrize(("text", "flags"), [
    ({"num_experts": 8}, (True,) * 4),  # every layer by default (Mixtral, Qwen3-MoE)
    ({"num_experts": 8, "decoder_sparse_step": 2}, (False, True, False, True)),
    ({"num_experts": 8, "mlp_only_layers": [0]}, (False, True, True, True)),
    ({"n_routed_experts": 8, "first_k_dense_replace": 1}, (False, True, True, True)),  # DeepSeek-V3
    ({"n_routed_experts": 8, "first_k_dense_replace": 1, "moe_layer_freq": 2}, (False, False, True, False)),
    ({"num_local_experts": 8, "interleave_moe_layer_step": 2}, (False, True, False, True)),  # Llama-4 Maverick
    ({"n_routed_experts": 8, "hybrid_override_pattern": "ME*E"}, (False, True, False, True)),  # Nemotron-H
    ({"hidden_size": 8}, (False,) * 4),  # dense
])
def test_which_layers_hold_experts(text: dict, flags: tuple[bool, ...]) -> None:
    assert model_arch.moe_layer_flags(text, 4) == flags


# --- expert parallel over data-parallel ranks -----------------------------------------------------------------------

def test_data_parallel_splits_the_experts_with_or_without_expert_parallel() -> None:
    # startups/042 (vLLM 0.10.0): Qwen3-235B-A22B-FP8 at TP 8 with --enable-expert-parallel, "Model loading took
    # 27.6656 GiB" on each of 8 GPUs. At TP 4 x DP 2 the 8 ranks still share the experts: vLLM's fused_moe/config.py
    # FusedMoEParallelConfig.make gives ep_size = tp x dp with expert parallel, and without it flattens the MoE
    # layers' tensor parallel across the data-parallel ranks ("When TP = 1, DP = 2 and EP = False ... the tensors
    # are sharded across 2 devices"); each DP rank keeps the attention and embeddings whole over its 4 GPUs. The
    # first review saw experts never divided over DP ranks, the second saw them divided only under EP.
    model = bundled("Qwen/Qwen3-235B-A22B-FP8")
    loaded = loaded_weights(model, Params())
    assert loaded.bytes is not None and loaded.expert_bytes is not None
    rest = loaded.bytes - loaded.expert_bytes
    tp8 = loaded.per_gpu(Params(tensor_parallel_size=8, enable_expert_parallel=True))
    assert tp8 is not None and abs(tp8 / GIB / loaded_gib("042-qwen3-235b-a22b-fp8.log") - 1) < 0.03
    for ep in (True, False):
        split = loaded.per_gpu(Params(tensor_parallel_size=4, data_parallel_size=2, enable_expert_parallel=ep))
        assert split == int(rest / 4 + loaded.expert_bytes / 8)
    dense = loaded_weights(bundled("meta-llama/Llama-3.1-8B-Instruct"), Params())
    assert dense.per_gpu(Params(data_parallel_size=4)) == dense.bytes  # a dense model: a whole copy per DP rank


def test_gemma4_runs_its_dense_mlp_beside_the_experts_in_every_layer() -> None:
    # vLLM gemma4.py / transformers Gemma4TextDecoderLayer: with enable_moe_block the layer's MLP runs unconditionally
    # and the experts are added beside it. startups/080 (vLLM 0.20.0, gemma-4-26B-A4B-it): "Model loading took 48.5
    # GiB"; without the 30 MLPs (535M parameters) the estimate was 46.78 GiB, 3.5% low
    model = bundled("google/gemma-4-26B-A4B")
    assert model.weights_bytes is not None
    logged = float(re.search(r"Model loading took ([0-9.]+) GiB",
                             (STARTUPS / "080-gemma-4-26b-a4b-it.log").read_text()).group(1))
    assert abs(model.weights_bytes / GIB / logged - 1) < 0.02


# --- sparse MLA: DeepSeek-V3.2's indexer cache and custom fp8 format -----------------------------------------------

def test_deepseek_v32_stores_its_custom_fp8_latent_and_the_indexer_keys_in_every_layer() -> None:
    # vLLM: DeepseekV32ForCausalLM.verify_and_update_config turns an fp8 --kv-cache-dtype into fp8_ds_mla, 656
    # bytes a token (flashmla_sparse.py: 512 fp8 latent + 4 fp32 scales + 64 bf16 rope), and each layer's indexer
    # keeps fp8 keys of index_head_dim 128 plus a 4-byte scale: 132 bytes. The first review saw neither.
    model = bundled("deepseek-ai/DeepSeek-V3.2")
    assert model.indexer_key_bytes == 128 + 4
    for kv in ("fp8", "fp8_e4m3"):
        assert kv_bytes_per_token(model, Params(kv_cache_dtype=kv, tensor_parallel_size=8)) == 61 * (656 + 132)
    # 0.11.0 took "auto" to the custom format too; later releases (startswith("fp8") only) keep it at 16 bits
    for kv in ("auto", "bfloat16"):
        assert kv_bytes_per_token(model, Params(kv_cache_dtype=kv)) == 61 * ((512 + 64) * 2 + 132)
    # GLM-5 has the same indexer; vLLM's custom-format default is keyed by DeepSeek-V3.2's architecture only
    glm = bundled("zai-org/GLM-5")
    assert glm.indexer_key_bytes == 132
    assert kv_bytes_per_token(glm, Params()) == 78 * ((512 + 64) * 2 + 132)
    assert bundled("deepseek-ai/DeepSeek-V3").indexer_key_bytes is None


# --- what the review of this change found ------------------------------------------------------------------------

JAMBA_1_5_MINI = {  # the shape keys of ai21labs/AI21-Jamba-1.5-Mini's config.json (transformers JambaConfig)
    "architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536,
    "num_experts": 16, "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1,
    "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
    "mamba_dt_rank": 256, "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "max_position_embeddings": 262144,
}


def test_jamba_holds_its_experts_on_every_other_layer() -> None:
    # transformers JambaConfig: layers_num_experts[i] = num_experts where i % expert_layer_period ==
    # expert_layer_offset, else 1 (a dense MLP); vLLM jamba.py builds JambaMoE only there. AI21's card: "52B total
    # parameters"; counted on every layer the experts alone came to 90B
    text = dict(JAMBA_1_5_MINI)
    assert model_arch.moe_layer_flags(text, 32) == tuple(i % 2 == 1 for i in range(32))
    fields = normalize(text)
    total = estimate_parameters(fields, text)
    assert total is not None and abs(total / 52e9 - 1) < 0.02


def test_an_expert_share_never_exceeds_the_checkpoint() -> None:
    model = bundled("Qwen/Qwen3-30B-A3B")
    assert model.weights_bytes is not None
    wrong = dataclasses.replace(model, expert_bytes=3 * model.weights_bytes, expert_params=2 * model.weights_bytes,
                                linear_params=2 * model.weights_bytes)  # a config that does not describe the files
    share = loaded_weights(wrong, Params()).per_gpu(Params(data_parallel_size=4, enable_expert_parallel=True))
    assert share is not None and share >= 0
    assert (loaded_weights(wrong, Params(quantization="fp8")).bytes or 0) >= model.weights_bytes // 2


@pytest.mark.parametrize(("act", "model_type", "matrices"), [
    ("silu", "llama", 3), ("relu2", "nemotron_h", 2), ("relu", "opt", 2), ("gelu", "falcon", 2),
    ("gelu_new", "phi", 2), ("gelu_pytorch_tanh", "starcoder2", 2), ("gelu_fast", "gpt2", 2),
    ("gelu_pytorch_tanh", "gemma", 3), ("gelu_pytorch_tanh", "gemma3_text", 3), ("gelu", "gemma2", 3),
])
def test_which_mlps_have_a_gate(act: str, model_type: str, matrices: int) -> None:
    # vLLM phi.py fc1/fc2 and starcoder2.py c_fc/c_proj have no gate; gemma*.py's GeGLU has gate_up_proj
    assert _mlp_matrices({"hidden_act": act, "model_type": model_type}) == matrices


def test_an_experts_only_scheme_on_a_dense_model_says_it_changes_nothing() -> None:
    dense = bundled("meta-llama/Llama-3.1-8B-Instruct")
    loaded = loaded_weights(dense, Params(quantization="experts_int8"))
    assert loaded.bytes == dense.weights_bytes
    assert any("has none" in n for n in loaded.notes) and not any("quantizes" in n for n in loaded.notes)


def test_a_quantized_checkpoint_labelled_float32_keeps_its_size() -> None:
    awq = dataclasses.replace(bundled("Qwen/Qwen2.5-14B-AWQ"), torch_dtype="float32")
    loaded = loaded_weights(awq, Params())
    assert loaded.bytes == awq.weights_bytes and loaded.notes == ()


def test_a_float32_label_over_16_bit_moe_files_keeps_the_experts_at_16_bits() -> None:
    # expert_bytes are counted at the config's dtype: a float32 label over bf16 files must not leave them at 4 bytes
    # the bf16 model's size read as a measured one (2 bytes a parameter, as its safetensors hold)
    moe = dataclasses.replace(bundled("Qwen/Qwen3-235B-A22B"), weights_source="index")
    assert moe.weights_bytes is not None and moe.expert_bytes is not None
    mislabelled = dataclasses.replace(moe, torch_dtype="float32", expert_bytes=2 * moe.expert_bytes)
    params = Params(tensor_parallel_size=4, data_parallel_size=2, enable_expert_parallel=True)
    assert loaded_weights(mislabelled, params).per_gpu(params) == loaded_weights(moe, params).per_gpu(params)


def test_float32_activations_with_online_fp8_fail_with_the_dtype_that_mends_them(tmp_path: Path) -> None:
    # vLLM checks quant_config.get_supported_act_dtypes() before loading (Fp8Config and the online schemes:
    # bfloat16 and half): "torch.float32 is not supported for quantization method fp8"
    report, _ = check(tmp_path, "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192",
                         "--quantization", "fp8", "--dtype", "float32")
    dtype = next(f for f in report["checks"] if f["id"] == "gpu.dtype")
    assert dtype["status"] == "fail" and "--dtype auto" in dtype["fix"]
    assert report["fix"]["vllm"] == {"dtype": "auto"}


def test_float32_weights_that_do_not_fit_are_offered_the_models_own_16_bits(tmp_path: Path) -> None:
    # Llama-3.1-8B in float32 is 29.92 GiB on a 22.49 GiB L4; its own bf16 (14.96 GiB) fits, and no fix ends in a
    # dangling "or" when the tensor-parallel alternative cannot be had on one GPU
    report, _ = check(tmp_path, "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--dtype", "float32")
    weights = next(f for f in report["checks"] if f["id"] == "model.weights_fit")
    assert weights["status"] == "fail" and weights["fix"].startswith("--dtype auto")
    report, _ = check(tmp_path, "meta-llama/Llama-3.1-70B-Instruct", "--max-model-len", "8192")
    weights = next(f for f in report["checks"] if f["id"] == "model.weights_fit")
    assert weights["status"] == "fail" and not weights["fix"].startswith("or ")
