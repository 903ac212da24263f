"""`explain` on blind57 and blind58 (tests/data/real-logs/), scored once at acbce62 (4 of 5, one confident error; 2 of
2, both labelled `unknown`; README.md in each) before anyone read them.

blind57's miss, b57-003, is vLLM's weight loader naming a checkpoint weight the model's class lacks ("There is no
module or parameter named 'X' in Ovis"), labelled model_access with quant_unsupported as its second reading. The same
message had been read as unsupported_architecture with confidence; real reports label it and its KeyError wording
four ways (diagnose/certainty.py), so neither wording decides a class: both are a candidate, named as the hint.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("folder", "prefix", "label"), [
    ("blind57", "b57-003", "model_access"),  # an Ovis GPTQ checkpoint's vision tower
    ("blind9", "b9-001", "unsupported_architecture"),  # a sequence-classification 'score' head on Qwen2-VL
    ("blind22", "b22-011", "unknown"),  # a MiniCPM-V release's attention layout
    ("blind37", "b37-009", "unsupported_architecture"),
    ("blind49", "b49-005", "unsupported_architecture"),
    ("blind25", "b25-012", "quant_unsupported"),  # the message cut after "named"
    ("blind39", "b39-004", "model_access"),  # the KeyError wording
])
def test_a_weight_the_models_class_lacks_is_a_candidate_whatever_the_label(folder: str, prefix: str,
                                                                           label: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert d.cls == "unknown" and d.confidence == "none"
    assert d.hint is not None and d.hint[0] == "model_access" and "class for the model does not" in d.hint[1]


def test_what_blind57_and_blind58_read_right_at_their_score() -> None:
    want = {"b57-001": "unsupported_architecture", "b57-002": "unsupported_architecture",
            "b57-004": "unsupported_architecture", "b57-005": "dtype_unsupported"}
    assert {p: classify(blind_log("blind57", p)).cls for p in want} == want
    assert {classify(blind_log("blind58", p)).cls for p in ("b58-001", "b58-002")} == {"unknown"}


@pytest.mark.parametrize("text", [
    # wrapped after "in" and after "parameter": the loader's own phrase is enough for the candidate
    "ValueError: There is no module or parameter named 'visual_tokenizer.vte.qweight' in\n"
    "OvisForConditionalGeneration\n",
    "ValueError: There is no module or parameter\nnamed 'score' in Qwen2VLForConditionalGeneration\n",
])
def test_the_weight_loaders_candidate_survives_a_wrap(text: str) -> None:
    d = classify(text)
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "model_access"
