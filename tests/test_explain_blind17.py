"""`explain` on blind17 (tests/data/real-logs/blind17), server logs committed to repositories, after its one scoring.

Scored once, whole, at commit e8fa4b3 (12 of 13 right, no confident error; tests/data/real-logs/README.md). Its one
miss, b17-005, is vLLM's own refusal of a --chat-template value that names no file, raised by the API server's
argument validation before anything loads (entrypoints/chat_utils.py validate_chat_template).
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_a_chat_template_that_names_no_file_is_a_usage_error() -> None:
    # b17-005: vLLM on macOS with --chat-template tool_use: "ValueError: The supplied chat template string
    # (tool_use) appears path-like, but doesn't exist!"
    d = classify(blind_log("blind17", "b17-005"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "chat_template", "high")
    assert isinstance(next_step(d, Settings()), Stop)  # a refused option: retrying changes nothing


def test_the_older_wording_of_a_template_file_that_cannot_be_opened() -> None:
    # vLLM 0.4-0.6 load_chat_template: the same refusal when the named file cannot be opened
    line = ("ValueError: The supplied chat template (/templates/chatml.jinja) looks like a file path, but it failed "
            "to be opened. Reason: [Errno 2] No such file or directory: '/templates/chatml.jinja'")
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("usage_error", "chat_template")


def test_a_template_path_with_a_parenthesis_and_the_path_wording() -> None:
    # validate_chat_template's value is any string: a path may hold ")"; a Path that is not there has its own words
    for line in ("ValueError: The supplied chat template string (templates/chat (v2).jinja) appears path-like, "
                 "but doesn't exist!", "FileNotFoundError: the supplied chat template path doesn't exist"):
        d = classify(line + "\n")
        assert (d.cls, d.detail) == ("usage_error", "chat_template"), line
