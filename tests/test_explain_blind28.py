"""`explain` on blind27 and blind28 (tests/data/real-logs/blind27, blind28), two blind sets of issue 26 gathered side
by side, after their one scoring.

Collected by helpers that never read the classifier, and scored once, whole, at commit b6428b2 (blind27: 11 of 21
right, 4 confident errors; blind28: 4 of 10 right, 1 confident error; tests/data/real-logs/README.md). blind27's
confident errors are each its collector's own second reading; what blind28's misses taught: transformers' older
GGUF refusal, an empty quantization method, vLLM's rope_scaling check against a newer config, a script started under
torchrun, safetensors' newer words for a broken header, and advice of its own for a quantization method's dtypes.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import PROCESS_GROUP_SIZE, QUANT_DTYPE, advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("name", "prefix", "cls", "detail"), [
    ("blind28", "b28-003", "unsupported_architecture", None),  # "ValueError: Architecture chatglm not supported"
    ("blind28", "b28-005", "quant_unsupported", "unknown_method"),  # "Unknown quantization method: . Must be one of"
    ("blind28", "b28-008", "version_mismatch", "rope_format"),  # "rope_scaling should have a 'rope_type' key"
    ("blind28", "b28-009", "usage_error", "process_group_size"),  # world_size (8) against TP 1 x PP 1
    ("collected", "c041", "usage_error", "process_group_size"),  # the same, relabelled with a note
    ("blind28", "b28-010", "model_access", "weights_unreadable"),  # "invalid JSON in header: EOF while parsing"
])
def test_what_blind28s_misses_taught(name: str, prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log(name, prefix) if name != "collected" else _collected(prefix))
    assert (d.cls, d.detail) == (cls, detail)


def _collected(prefix: str) -> str:
    from tests.conftest import DATA
    return next((DATA / "real-logs" / "collected").glob(f"{prefix}-*.log")).read_text()


def test_a_launch_under_torchrun_says_how_to_start_it() -> None:
    d = classify(blind_log("blind28", "b28-009"))
    assert d.numbers == {"world_size": 8, "tp_size": 1, "pp_size": 1}
    assert advice_for(d) is PROCESS_GROUP_SIZE and isinstance(next_step(d, Settings()), Stop)


def test_a_quantization_methods_dtype_is_not_the_gpus() -> None:
    # b28-002: "torch.float16 is not supported for quantization method mxfp4. Supported dtypes: [torch.bfloat16]"; the
    # class's own advice (--dtype half on older GPUs) would name the dtype refused
    d = classify(blind_log("blind28", "b28-002"))
    assert (d.cls, d.detail) == ("dtype_unsupported", "quant_dtype")
    assert advice_for(d) is QUANT_DTYPE and "half" in QUANT_DTYPE.does_not_help[0]


def test_what_blind27_and_blind28_read_right_at_their_score() -> None:
    want = {"b27-001": "dtype_unsupported", "b27-012": "usage_error", "b27-013": "usage_error", "b27-004": "unknown",
            "b27-005": "unknown", "b27-010": "unknown", "b27-011": "unknown", "b27-014": "unknown", "b27-018":
            "unknown", "b27-019": "unknown", "b27-021": "unknown"}
    assert {p: classify(blind_log("blind27", p)).cls for p in want} == want
    want28 = {"b28-001": "gpu_busy", "b28-004": "quant_unsupported", "b28-006": "version_mismatch",
              "b28-007": "version_mismatch"}
    assert {p: classify(blind_log("blind28", p)).cls for p in want28} == want28
