"""`explain` on blind135 and blind136 (tests/data/real-logs/blind135, blind136), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier, side by side. blind135, research code reproducing papers, scored
once at 733fe4f: 18 of 18. blind136, Kubernetes operators that start vLLM, scored once at the same commit: 15 of 16,
14 of 15 once its copy of blind135/b135-018 (the same thread and paste, answered right) was removed; 1 confident
error. That one taught: vLLM 0.2-0.3's engine settings line, which names no version, is a settings dump, not the
P2P check's step.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify

V0_CONFIG = ("INFO 03-11 02:55:27 llm_engine.py:72] Initializing an LLM engine with config: model='m', "
             "tokenizer='m', tensor_parallel_size=2, disable_custom_all_reduce=False, quantization=None, "
             "enforce_eager=False, seed=0)\n")


def test_an_xinference_paste_cut_after_vllm_0_3s_settings_line_is_no_p2p_hang() -> None:
    # "# GPU bloc" cut, after 0.3's "Initializing an LLM engine with config: ... disable_custom_all_reduce=False"
    d = classify(blind_log("blind136", "b136-012"))
    assert d.cls == "unknown"
    assert d.hint is not None and d.hint[0] == "startup_hang"


def test_the_settings_line_without_a_version_names_no_step() -> None:
    assert classify(V0_CONFIG).cls == "unknown"
    # a real P2P check line after it still does
    p2p = "INFO 03-11 02:55:40 custom_all_reduce_utils.py:232] generating GPU P2P access cache in /root/.cache/x.json\n"
    assert (classify(V0_CONFIG + p2p).cls, classify(V0_CONFIG + p2p).stage) == ("startup_hang", "custom_allreduce")
