"""`explain` on blind89 (3 of 4 at b01beb3, vLLM's threads filed in 2026) and blind90 (1 of 1 at b01beb3, a project
that starts vLLM inside it), each scored once (README.md in each). What blind89's miss taught: a set of missing
weights that a paste wrapped after "checkpoint:", and those weights being an MTP draft layer's, which vLLM's own MTP
classes also say in their words."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


def test_an_mtp_layer_the_checkpoint_does_not_have() -> None:
    # GLM-OCR under --speculative-config method mtp: every weight listed is layer 16's, the MTP layer's
    d = classify(blind_log("blind89", "b89-003"))
    assert (d.cls, d.detail, d.stage, d.confidence) == ("model_access", "mtp_weights_missing", "weight_loading",
                                                        "high")
    assert any("--speculative-config" in h for h in advice_for(d).helps)
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL["mtp_weights_missing"]


@pytest.mark.parametrize("text", [
    # vLLM 0.20-0.33 deepseek_mtp.py DeepSeekMTP.load_weights
    "ValueError: MTP speculative decoding layer 61 weights missing from checkpoint. The checkpoint may have been "
    "quantized without including the MTP layers. Use a checkpoint that includes MTP layer weights, or disable "
    "speculative decoding.",
    # bailing_moe_mtp.py
    "ValueError: Bailing MTP speculative decoding layer 20 weights missing from checkpoint.",
    # step3p5_mtp.py
    "RuntimeError: Some parameters like model.layers.45.mtp_block.mlp.experts.w13_weight are not in the checkpoint "
    "and will falsely use random initialization",
])
def test_vllms_mtp_classes_saying_so(text: str) -> None:
    d = classify(text)
    assert (d.cls, d.detail) == ("model_access", "mtp_weights_missing")


@pytest.mark.parametrize(("names", "detail"), [
    ("'model.layers.61.eh_proj.weight', 'model.layers.61.self_attn.q_proj.weight'", "mtp_weights_missing"),
    ("'mtp.fc.weight', 'mtp.layers.0.mlp.gate.weight'", "mtp_weights_missing"),
    # a main layer's weight among them: the checkpoint lacks more than the draft
    ("'model.layers.61.eh_proj.weight', 'model.layers.3.self_attn.q_proj.weight'", "weights_missing"),
    ("'lm_head.weight'", "weights_missing"),
])
def test_which_missing_sets_are_an_mtp_layers(names: str, detail: str) -> None:
    d = classify(f"ValueError: Following weights were not initialized from checkpoint: {{{names}}}")
    assert (d.cls, d.detail) == ("model_access", detail)


def test_a_set_wrapped_over_lines_is_read_to_its_end() -> None:
    # the MTP reading needs every name: the fourth line's main-layer weight makes the set no MTP layer's
    text = blind_log("blind89", "b89-003").replace("'model.layers.16.mtp_block.input_layernorm.weight'",
                                                   "'model.layers.3.input_layernorm.weight'")
    assert classify(text).detail == "weights_missing"


def test_a_vision_towers_set_wrapped_over_lines() -> None:
    text = ("ValueError: Following weights were not initialized from checkpoint:\n"
            "{'visual.blocks.0.norm1.weight', 'visual.blocks.0.norm2.weight',\n"
            " 'visual.merger.mlp.0.weight'}\n")
    assert classify(text).detail == "tower_weights_missing"


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind89", "b89-001", "tp_indivisible"), ("blind89", "b89-002", "unknown"), ("blind89", "b89-004", "startup_hang"),
    ("blind90", "b90-001", "version_mismatch"),
])
def test_what_blind89_and_blind90_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls
