"""`explain` on blind60 (tests/data/real-logs/blind60), scored once at ac1a94d (5 of 7, one confident error; its
README.md), found by error messages sampled at random from vLLM's own raise sites. Its misses: the engine core's
handshake with its front-end timing out (b60-003, vLLM's own fixed 5 minutes: startup_timeout, engine_handshake),
and a .gguf file inside a Hub repository given as the model (b60-007, read model_access with confidence where vLLM
0.9-0.11's own message says a GGUF is read only from a local path: usage_error, remote_gguf)."""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Step, Stop, next_step


def test_the_engine_cores_handshake_with_its_front_end_timed_out() -> None:
    d = classify(blind_log("blind60", "b60-003"))  # the paste cuts "minutes" to "minute"
    assert (d.cls, d.detail, d.confidence, d.numbers) == ("startup_timeout", "engine_handshake", "high",
                                                          {"waited_min": 5})
    assert any("--data-parallel-address" in fix for fix in advice_for(d).helps)
    assert isinstance(next_step(d, Settings()), Step)  # once more unchanged, as any start that timed out
    assert isinstance(next_step(d, Settings(), unchanged_retries=1), Stop)


def test_a_gguf_file_in_a_hub_repository_is_a_setting_not_a_model_that_cannot_be_reached() -> None:
    d = classify(blind_log("blind60", "b60-007"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "remote_gguf", "high")
    assert any("REPO:QUANT_TYPE" in fix for fix in advice_for(d).helps)
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and ".gguf" in stop.reason


def test_a_repository_id_or_a_local_gguf_path_is_still_the_hubs() -> None:
    head = "ValueError: Invalid repository ID or local directory specified: '{}'.\n"
    for model in ("neuralmagic/Meta-Llama-3-8B-Instruct-FP8-dynamic", "/models/llama-3-8b.Q4_K_M.gguf",
                  "./gguf/unsloth/model/llama.Q4_K_M.gguf"):
        assert classify(head.format(model)).cls == "model_access", model


def test_what_blind60_read_right_at_its_score() -> None:
    want = {"b60-001": "model_access", "b60-002": "remote_code_required", "b60-004": "usage_error",
            "b60-005": "model_access", "b60-006": "no_kv_memory"}
    assert {p: classify(blind_log("blind60", p)).cls for p in want} == want
