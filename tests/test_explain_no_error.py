"""`explain` on a pasted log with no error in it: no error line, no traceback, no line saying vLLM serves. Its
reading stays `unknown` (the paste may stop there, or the start may have stayed there: the same text), but it says
so instead of showing "the last error lines", and names the hang at that stage as the candidate below the bar.

Real cases: blind13/b13-023 (an RL framework's vLLM 0.11 rollout server that never printed its address; the
reporter: it stays stuck at this point) and blind13/b13-004 (2023: LLM() stops after 'Initializing an LLM engine').
"""

from __future__ import annotations

import io
import json

import pytest

from tests.conftest import DATA, blind_log
from vllm_guard.cli import main as cli
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("folder", "prefix", "stage"), [
    ("blind13", "b13-023", "weight_loading"),  # ends at 'Starting to load model'
    ("blind13", "b13-004", "before_start"),  # ends at V0's 'Initializing an LLM engine with config: ...'
])
def test_a_paste_with_no_error_says_so_and_names_the_hang_as_the_candidate(folder: str, prefix: str,
                                                                            stage: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail, d.stage, d.confidence) == ("unknown", "no_error", stage, "none")
    assert d.hint is not None and d.hint[0] == "startup_hang"
    assert "no error" in advice_for(d).explanation
    assert isinstance(next_step(d, Settings()), Stop)  # a candidate is never acted on


def test_the_cli_prints_the_candidate_and_the_json_carries_it() -> None:
    text = blind_log("blind13", "b13-023")
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["explain", "--json", "-"], environ={}, stdout=out, stderr=err, stdin=io.StringIO(text)) == 7
    report = json.loads(out.getvalue())
    assert (report["class"], report["detail"], report["hint"]["class"]) == ("unknown", "no_error", "startup_hang")
    assert "weight loading" in report["hint"]["why"]


@pytest.mark.parametrize("name", ["031-qwen3-4b.log", "038-gemma-3-27b-it.log"])
def test_an_offline_start_that_finished_its_engine_is_no_hang(name: str) -> None:
    # LLM(...) prints no server line: 'init engine (profile, create kv cache, warmup model) took N seconds' is its end
    d = classify((DATA / "real-logs" / "startups" / name).read_text())
    assert d.detail != "no_error" and d.hint is None


def test_a_start_whose_end_is_known_is_not_read_as_one_that_may_still_run() -> None:
    text = blind_log("blind13", "b13-023")
    d = classify(text, exit_status=1)
    assert d.detail != "no_error" and (d.hint is None or d.hint[0] != "startup_hang")


def test_error_lines_keep_the_last_error_lines_reading() -> None:
    d = classify("INFO 10-17 16:49:15 [gpu_model_runner.py:2602] Starting to load model\n"
                 "ERROR 10-17 16:49:16 [core.py:1] something no rule knows went wrong\n")
    assert d.cls == "unknown" and d.detail is None
