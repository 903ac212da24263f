"""`explain` on blind42 (tests/data/real-logs/blind42), the forty-second blind set of issue 26, after its one scoring.

Collected from threads of libraries that start vLLM's engine themselves by a helper that never read the classifier,
and scored once, whole, at commit 9e6c3e1: 7 of 7 by class, but its two hangs, cut inside the engine's settings
line, were read as stopping in the P2P check because that line spells "disable_custom_all_reduce" (README.md there).
What that taught: the settings line names steps, it is none.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.hang import activity_of


@pytest.mark.parametrize("prefix", ["b42-004", "b42-005"])
def test_a_log_cut_in_the_engines_settings_line_shows_no_stage(prefix: str) -> None:
    d = classify(blind_log("blind42", prefix))
    assert d.cls == "unknown"


@pytest.mark.parametrize("line", [
    "INFO 08-07 00:11:39 llm_engine.py:176] Initializing an LLM engine (v0.5.3.post1) with config: model='m', "
    "tensor_parallel_size=4, disable_custom_all_reduce=False, quantization=None, enforce_eager=False",
    "(EngineCore pid=7) INFO 11-02 15:01:37 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
    "model='m', load_format=auto, compilation_config={'level': 3, 'use_inductor': True}",
    "(APIServer pid=1) INFO 11-02 15:01:42 [utils.py:233] non-default args: {'model': 'm', "
    "'disable_custom_all_reduce': True}",
    # 0.4-0.10's api_server (a real line's shape: blind17/b17-002)
    "INFO 05-26 18:53:37 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='m', port=8000, "
    "disable_custom_all_reduce=False, enforce_eager=False)",
    # a wrapper's repr of the engine arguments it passes (Ray Serve's vLLM example; blind109/b109-009)
    "INFO 2024-11-18 01:46:34,210 default_VLLMDeployment ujj4diu5 llm_vllm_llama_31.py:47 - Starting with engine "
    "args: AsyncEngineArgs(model='m', tensor_parallel_size=2, disable_custom_all_reduce=False)",
])
def test_the_engines_settings_are_no_activity(line: str) -> None:
    assert activity_of(line) is None


def test_the_p2p_checks_own_line_is_still_read() -> None:
    line = ("INFO 09-23 10:01:02 custom_all_reduce_utils.py:232] generating GPU P2P access cache in "
            "/root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json")
    assert activity_of(line) == "custom_allreduce"


def test_what_blind42_read_right_at_its_score() -> None:
    want = {"b42-001": "usage_error", "b42-002": "unsupported_architecture", "b42-003": "unknown",
            "b42-006": "unknown", "b42-007": "gpu_oom"}
    assert {p: classify(blind_log("blind42", p)).cls for p in want} == want
