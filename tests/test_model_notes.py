"""What the guard says about a model it looked up: offline notes only when they mattered, a missing local
path as such, the way out for an unknown model, ids in any case with "did you mean"."""

from __future__ import annotations

import json

from tests.conftest import L4, free_port, run_cli

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
# A Hub endpoint on a local port nobody listens on: "not reachable" in milliseconds, without HF_HUB_OFFLINE.
UNREACHABLE = {"HF_HUB_OFFLINE": "", "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}


def check(model: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    r = run_cli("check", "--json", "--machine", L4, model, env=env)
    doc = json.loads(r.out)
    text = json.dumps(doc)
    return r.code, doc, text


def test_a_bundled_model_offline_says_nothing_about_the_hub() -> None:
    for env in ({"HF_HUB_OFFLINE": "1"}, UNREACHABLE):
        _, doc, text = check(MODEL, env)
        assert doc["model"]["source"] == "bundled"
        assert "not reachable" not in text and "Hub" not in text


def test_an_unknown_model_with_the_hub_unreachable_says_so() -> None:
    _, _, text = check("someone/unknown-model-xyz", UNREACHABLE)
    assert "the Hugging Face Hub is not reachable from here" in text


def test_hf_hub_offline_is_named() -> None:
    code, doc, _ = check("someone/unknown-model-xyz", {"HF_HUB_OFFLINE": "1"})
    facts = next(c for c in doc["checks"] if c["id"] == "model.facts")
    assert code == 4 and "HF_HUB_OFFLINE=1: the Hub was not asked" in facts["message"]
    assert "a directory holding just the model's config.json" in facts["message"]
    assert "`vllm-guard models` lists the bundled models" in facts["message"]


def test_a_missing_local_path_is_no_such_directory() -> None:
    _, doc, _ = check("/models/not-there")
    facts = next(c for c in doc["checks"] if c["id"] == "model.facts")
    assert "/models/not-there: no such directory" in facts["message"]
    assert "HF_TOKEN" not in facts["fix"] and "config.json" in facts["fix"]


def test_ids_match_in_any_case_and_near_misses_get_did_you_mean() -> None:
    _, doc, _ = check(MODEL.upper())
    assert doc["model"]["source"] == "bundled"
    _, doc, _ = check("meta-llama/Llama-3.1-8B-Instruc")
    facts = next(c for c in doc["checks"] if c["id"] == "model.facts")
    assert f"did you mean {MODEL}?" in facts["message"]


def test_models_lists_the_bundled_models() -> None:
    r = run_cli("models")
    assert r.code == 0 and MODEL in r.out and "LlamaForCausalLM" in r.out
