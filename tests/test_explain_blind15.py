"""`explain` on blind15 (tests/data/real-logs/blind15), the fifteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 5fe5eb5 (7 of 13 right, one
confident error; tests/data/real-logs/README.md). What its misses taught, from the source that writes the message:
transformers' AutoConfig.register refusing a config type it already defines, which vLLM (or a model's own code)
registers when transformers is newer than it.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


def test_a_config_type_transformers_already_defines_is_a_version_mismatch() -> None:
    d = classify(blind_log("blind15", "b15-004"))  # vLLM 0.9.2's 'aimv2' under transformers 4.56.2
    assert (d.cls, d.detail, d.stage) == ("version_mismatch", "python_package", "before_start")


def test_the_register_message_is_read_only_as_transformers_words_it() -> None:
    assert classify("ValueError: 'x' is already used by a Transformers config, pick another name.\n").cls \
        == "version_mismatch"
    assert classify("ValueError: 'x' is already used by another config\n").cls == "unknown"
