"""`explain` on blind131 and blind132 (tests/data/real-logs/blind131, blind132), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier. blind131, vLLM started in notebooks, scored once at 283f4d1: 12
of 14, 1 confident error (PyTorch's fork refusal, labelled `unknown` where four earlier logs are labelled
`usage_error`); its other miss, IPython's `ImportError` header over a paste cut before the message, names no more
than the type and stays `unknown`. blind132, vLLM inside vendors' distributions, scored once at dafe3d2: 9 of 10, no
confident error. Its one miss taught a reading: a module one level under vllm/ that only some releases have.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_versions import VLLM_MODULE


def test_an_adapter_built_for_an_older_vllm_is_a_version_mismatch() -> None:
    # Open Data Hub's TGIS adapter importing vllm.prompt_adapter, which vLLM 0.10 removed
    d = classify(blind_log("blind132", "b132-002"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "vllm_module", "high")
    assert advice_for(d) is VLLM_MODULE


@pytest.mark.parametrize(("module", "read"), [
    ("vllm.spec_decode", True),  # V0's, gone with it
    ("vllm.tokenizers", True),  # new in 0.32
    ("vllm.entrypoints", False),  # in every release read: a local vllm.py or a broken install, not a layout
    ("vllm.utils", False),
    ("vllm._C", False),  # the compiled part: vLLM logs it and may go on
    ("vllm.vllm_flash_attn", False),
])
def test_one_level_down_only_a_module_some_releases_lack(module: str, read: bool) -> None:
    d = classify(f"ModuleNotFoundError: No module named '{module}'\n")
    assert (d.detail == "vllm_module") is read


def test_vllm_0_4s_commit_hash_warning_is_no_layout_of_another_release() -> None:
    # version.py warns and goes on (newcomer review): a start killed after it is not a version mismatch
    log = ("/usr/lib/python3/dist-packages/vllm/version.py:10: RuntimeWarning: Failed to read commit hash:\n"
           "No module named 'vllm.commit_id'\n"
           "INFO 05-01 10:00:00 llm_engine.py:100] Initializing an LLM engine (v0.4.2) with config: model='m'\n"
           "Killed\n")
    assert classify(log).detail != "vllm_module"
