"""`explain` on blind6 (tests/data/real-logs/blind6), the sixth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit e95aaaa (31 of 43 right,
2 confident errors: the table in tests/data/real-logs/README.md). What each miss taught is checked on the log that
taught it, and on a near miss that must not change.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("name", "prefix", "cls", "detail"), [
    # the Hub's host inside an exception's repr inside another's: HTTPSConnectionPool(host=\'huggingface.co\', ...
    # (vllm #1986, a server without internet)
    ("blind6", "b6-018", "network", "hub"),
    # only the second sentence of vLLM's bfloat16 refusal survived the paste (LlamaFactory #3717, a V100)
    ("blind6", "b6-037", "dtype_unsupported", None),
])
def test_what_the_misses_taught(name: str, prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.detail) == (cls, detail)
    assert d.template and d.confidence == "high"


@pytest.mark.parametrize(("name", "prefix"), [
    ("blind5", "b5-040"),  # the CUDA wheel on a machine without a GPU (vllm #17249)
    ("blind6", "b6-035"),  # a torch_xla nightly that broke vLLM's TPU platform (vllm #12451)
    ("blind6", "b6-009"),  # vLLM 0.3's "No supported device detected." in a Ray actor given no GPU (OpenRLHF #233)
])
def test_no_platform_found_stays_unknown_with_its_hint(name: str, prefix: str) -> None:
    # vLLM found no device platform: a build for another platform or no GPU visible; real reports are both
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.confidence) == ("unknown", "none") and d.hint is not None and d.hint[0] == "version_mismatch"


def test_the_bf16_fallback_warning_is_no_failure() -> None:
    # vLLM 0.33 with --dtype auto falls back and goes on (config/model.py): the warning decides nothing
    line = ("WARNING 05-01 10:00:00 [model.py:2457] Your device 'Tesla T4' (with compute capability 7.5) doesn't "
            "support torch.bfloat16. Falling back to torch.float16 for compatibility.\n")
    assert classify(line).cls == "unknown"
