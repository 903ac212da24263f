"""`explain` on blind130 (tests/data/real-logs/blind130), a blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier, from starts that could not get the model's files (proxies,
mirrors, ModelScope, offline caches, local folders, object stores); scored once at 461027c: 13 of 20, 3 confident
errors. The three are the Hugging Face Hub out of reach (a connect timeout, a refused connection), read `network`
as six earlier collectors labelled it, labelled `model_access` here: labels in dispute. What the misses taught:
ModelScope's own refusals, the Run:ai Model Streamer's file access error, and vLLM's no-weights message with its
backticks turned into quotes.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import MODELSCOPE_MISSING, NO_WEIGHTS, STREAMER_ACCESS
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("prefix", "detail", "advice"), [
    # requests' 404 for https://www.modelscope.cn/api/v1/models/gpt2/revisions (an HF id ModelScope lacks)
    ("b130-003", "modelscope_missing", MODELSCOPE_MISSING),
    # "modelscope.hub.errors.NotExistError: The model: Qwen/Qwen2.5-VL-7B-Instruct has no revision: main !"
    ("b130-004", "modelscope_missing", MODELSCOPE_MISSING),
    # "Exception: Could not send runai_request to libstreamer due to: b'File access error'" (an s3:// model)
    ("b130-007", "streamer_access", STREAMER_ACCESS),
    # "RuntimeError: Cannot find any model weights with 'meta-llama/CodeLlama-7b-Instruct-hf'" (quotes, not backticks)
    ("b130-010", "no_weights", NO_WEIGHTS),
])
def test_what_blind130_taught(prefix: str, detail: str, advice: object) -> None:
    d = classify(blind_log("blind130", prefix))
    assert (d.cls, d.detail, d.confidence) == ("model_access", detail, "high")
    assert advice_for(d) is advice
    assert isinstance(next_step(d, Settings(max_model_len=4096)), Stop)


@pytest.mark.parametrize("line", [
    # modelscope 1.15-1.37's hub/errors.py handle_http_response
    "requests.exceptions.HTTPError: The request model: Qwen/Qwen3-8B-Base does not exist!",
    # 1.24-1.37's hub/api.py, logged before its 404
    "2025-06-01 10:00:00,000 - modelscope - ERROR - Repo gpt2 not exists on either https://www.modelscope.cn or "
    "https://www.modelscope.ai",
    # 1.38's modelscope_hub package
    "modelscope_hub.errors.NotExistError: [E3020] The model: Qwen/Qwen3-8B has no revision: main !",
])
def test_modelscopes_other_releases_wordings(line: str) -> None:
    # (newcomer review: the releases' tags since 1.15 say it otherwise)
    assert (classify(line + "\n").cls, classify(line + "\n").detail) == ("model_access", "modelscope_missing")


def test_the_streamers_response_side_error() -> None:
    line = "ValueError: Could not receive runai_response from libstreamer due to: b'File access error'\n"
    assert (classify(line).cls, classify(line).detail) == ("model_access", "streamer_access")


@pytest.mark.parametrize("line", [
    # modelscope's INFO lines as it starts: no failure
    "2024-01-27 21:31:02,440 - modelscope - INFO - Loading ast index from /home/cc/.cache/modelscope/ast_indexer\n",
    # a 404 for another site's API
    "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://example.com/api/v1/models/gpt2\n",
    # the streamer's other responses are not a file it cannot read
    "Exception: Could not send runai_request to libstreamer due to: b'Insufficient fd limit'\n",
])
def test_lines_that_are_not_these_readings(line: str) -> None:
    assert classify(line).detail not in ("modelscope_missing", "streamer_access")
