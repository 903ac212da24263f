"""`explain` on blind109 (tests/data/real-logs/blind109), the hundred-and-ninth blind set of issue 26, after its one
scoring.

Collected by a helper that never read the classifier, and scored once, whole, at commit aee37c7: 12 of 14, two
confident errors, both on pastes cut before their failure (labelled `unknown`). What they taught: a wrapper's repr of
the engine arguments names the P2P step ("disable_custom_all_reduce=False") and is no step; and a warning vLLM went
on after is the failure only when the paste shows one (an error, a traceback, an exit) or ends at the warning.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify

C_WARNING = ("WARNING 08-27 13:59:59 _custom_ops.py:15] Failed to import from vllm._C with ImportError('/x/vllm/"
             "_C.abi3.so: undefined symbol: _ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj')\n")
ENGINE = ("INFO 08-27 14:00:04 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: model='m', "
          "dtype=torch.bfloat16\n")


def test_a_paste_cut_in_a_wrappers_engine_arguments_shows_no_stage() -> None:
    # Ray Serve's vLLM example: "Starting with engine args: AsyncEngineArgs(... disable_custom_all_reduce=False"
    d = classify(blind_log("blind109", "b109-009"))
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "startup_hang")


def test_a_warning_the_start_went_on_after_is_a_lead_in_a_paste_with_no_failure() -> None:
    # 0.5.4's "Failed to import from vllm._C with ImportError('libcudart.so.12: ...')", then the engine's set-up,
    # and the paste stops (the thread's failure, bfloat16 on a V100, is not in it)
    d = classify(blind_log("blind109", "b109-004"))
    assert (d.cls, d.detail, d.hint and d.hint[0]) == ("unknown", "no_error", "version_mismatch")
    assert any("no error, traceback or exit besides this warning" in e for e in d.evidence)


def test_the_same_warning_is_the_failure_where_the_paste_ends_at_it_or_shows_one() -> None:
    assert classify(C_WARNING).cls == "version_mismatch"  # the last word of the paste (blind3/b3-020)
    failed = C_WARNING + ENGINE + "RuntimeError: Engine process failed to start\n"
    assert classify(failed).cls == "version_mismatch"
    assert classify(C_WARNING + ENGINE).cls == "unknown"


def test_what_blind109_read_right_at_its_score() -> None:
    assert classify(blind_log("blind109", "b109-014")).cls == "no_kv_memory"
    assert {classify(blind_log("blind109", f"b109-{n:03d}")).cls for n in range(1, 14) if n not in (4, 9)} \
        == {"unknown"}


def test_a_warning_the_start_went_on_after_does_not_hide_a_hang_after_it() -> None:
    waits = "".join(f"(APIServer pid=1) INFO 08-27 14:0{n}:00 [utils.py:1] Waiting for 1 local, 0 remote core engine "
                    "proc(s) to start.\n" for n in range(1, 5))
    d = classify(C_WARNING + ENGINE + waits)
    assert (d.cls, d.stage) == ("startup_hang", "engine_handshake")
