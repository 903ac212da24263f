"""`explain` on blind29 (tests/data/real-logs/blind29), the twenty-ninth blind set of issue 26, after its one scoring.

18 excerpts from vllm-project threads, each stopping before its error line and labelled `unknown` by a helper that
never read the classifier; scored once, whole, at commit 4191a2e: 18 of 18, no confident error. A paste cut before
its cause must not be given a class it does not show.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize("n", range(1, 19))
def test_a_paste_cut_before_its_error_gets_no_class(n: int) -> None:
    d = classify(blind_log("blind29", f"b29-{n:03d}"))
    assert (d.cls, d.confidence) == ("unknown", "none")
