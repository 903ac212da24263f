"""`explain` on blind12 (tests/data/real-logs/blind12), the twelfth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit fc7c1d8 (17 of 23 right, one
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: PyTorch's own check of a device index, a vLLM platform plugin's launcher refusing its command line, and the
unspecified platform's empty device string (a hint, as vLLM's "No platform detected" is).
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("prefix", "cls", "hint"), [
    ("b12-007", "too_few_gpus", None),  # "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED ... device=1"
    ("b12-023", "usage_error", None),  # "vllm-metal: error: the following arguments are required: --model/-m"
    ("b12-009", "unknown", "version_mismatch"),  # "Device string must not be empty" (Xinference on an AMD iGPU)
])
def test_what_blind12_taught(prefix: str, cls: str, hint: str | None) -> None:
    d = classify(blind_log("blind12", prefix))
    assert d.cls == cls
    assert (d.hint[0] if d.hint else None) == hint


def test_a_users_own_program_named_like_vllm_is_not_vllm() -> None:
    # only vLLM's launchers: "vllm-metal" is a plugin's; a sentence or another tool is not read as vLLM's argparse
    assert classify("vllm-metal: error: the following arguments are required: --model/-m\n").cls == "usage_error"
    assert classify("myvllmtool: error: bad value\n").cls == "unknown"
