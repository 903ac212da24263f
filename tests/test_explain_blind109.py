"""`explain` on blind109 (tests/data/real-logs/blind109), the hundred-and-ninth blind set of issue 26, after its one
scoring.

Collected by a helper that never read the classifier, and scored once, whole, at commit aee37c7: 12 of 14, two
confident errors, both on pastes cut before their failure (labelled `unknown`). What they taught: a wrapper's repr of
the engine arguments names the P2P step ("disable_custom_all_reduce=False") and is no step; and a warning vLLM went
on after is the failure only when the paste shows one (an error, a traceback, an exit) or ends at the warning.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify

C_WARNING = ("WARNING 08-27 13:59:59 _custom_ops.py:15] Failed to import from vllm._C with ImportError('/x/vllm/"
             "_C.abi3.so: undefined symbol: _ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj')\n")
C_WARNING_LIBCUDART = ("WARNING 08-27 13:59:59 _custom_ops.py:15] Failed to import from vllm._C with ImportError("
                       "'libcudart.so.12: cannot open shared object file: No such file or directory')\n")
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


C_WARNING_WORKER = ("(VllmWorkerProcess pid=4242) WARNING 08-27 14:00:06 _custom_ops.py:15] Failed to import from "
                    "vllm._C with ImportError('libcudart.so.12: cannot open shared object file: No such file or "
                    "directory')\n")
P2P_WARNING = ("WARNING 08-27 14:00:10 custom_all_reduce.py:131] Custom allreduce is disabled because your platform "
               "lacks GPU P2P capability or P2P test failed. To silence this warning, specify "
               "disable_custom_all_reduce=True explicitly.\n")
OMNI = ("WARNING 05-01 10:00:0{} [version.py:30] vLLM and vLLM-Omni appear to have mismatched major/minor versions: "
        "vLLM 0.12.0, vLLM-Omni 0.11.0.\n")


@pytest.mark.parametrize("after", [
    # each worker logs the same warning as it imports _custom_ops (another time, another process), then its set-up
    C_WARNING_WORKER + "(VllmWorkerProcess pid=4242) INFO 08-27 14:00:07 multiproc_worker_utils.py:215] Worker "
                       "ready; awaiting tasks\n",
    # vLLM's routine warning on consumer GPUs ("... or P2P test failed") is no failure
    P2P_WARNING,
])
def test_the_warnings_repeats_and_routine_warnings_are_no_failure_shown(after: str) -> None:
    # a review's finding: with tensor parallelism the b109-004 shape was read version_mismatch again
    d = classify(C_WARNING_LIBCUDART + ENGINE + after)
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "version_mismatch")


def test_a_warning_read_from_its_wrapped_lines_is_found_in_the_log() -> None:
    # PyTorch's capability warning wrapped at 80 columns: read from the rejoined line, then the start went on
    text = ("/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:235: UserWarning:\n"
            "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the cu\n"
            "rrent PyTorch installation.\n"
            "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
            "INFO 05-01 10:00:01 [api_server.py:1043] vLLM API server version 0.9.2\n"
            "INFO 05-01 10:00:03 [core.py:455] Waiting for init message from front-end.\n")
    d = classify(text)
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "version_mismatch")


def test_a_paste_that_ends_at_the_warning_repeated_is_read_by_it() -> None:
    assert classify(OMNI.format(0) + OMNI.format(3)).cls == "version_mismatch"


def test_a_later_warning_the_paste_ends_at_decides_when_an_earlier_one_does_not() -> None:
    text = (OMNI.format(0) + "INFO 05-01 10:00:05 [model_runner_v1.py:2000] Loading model weights took 15.2 GB\n"
            "INFO 05-01 10:00:30 [worker_v1.py:180] Available memory: 0, total memory: 65452113920\n")
    assert classify(text).cls == "no_kv_memory"


def test_a_lead_that_is_itself_unknown_keeps_its_detail_and_hint() -> None:
    text = ("ERROR 11-02 10:00:00 registry.py:300] Error in inspecting model architecture 'Qwen2ForCausalLM'\n"
            "INFO 11-02 10:00:05 config.py:905] Defaulting to use mp for distributed inference\n")
    d = classify(text)
    assert (d.cls, d.detail, d.hint and d.hint[0]) == ("unknown", "inspection_failed", "version_mismatch")
