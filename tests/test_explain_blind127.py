"""`explain` on blind127 (tests/data/real-logs/blind127), a blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier, from pipelines that start vLLM for batch generation and
evaluation; scored once at edc0a9b: 16 of 17, no confident error. Its one miss taught a reading: torch's device
out-of-memory exception named with its message cut off (IPython's header names the class above the frames).
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_ipythons_header_naming_the_oom_is_an_oom() -> None:
    # "OutOfMemoryError                          Traceback (most recent call last)" above LLM.__init__'s frames,
    # the paste cut before the message: an OOM at a stage the log does not show, so no setting is changed
    d = classify(blind_log("blind127", "b127-005"))
    assert (d.cls, d.stage, d.confidence) == ("gpu_oom", "unknown", "medium")
    assert isinstance(next_step(d, Settings(max_model_len=4096)), Stop)


LOADING = ("INFO 10-08 12:00:01 [default_loader.py:262] Loading weights took 2.00 seconds\n"
           "INFO 10-08 12:00:01 [gpu_model_runner.py:2653] Model loading took 14.99 GiB and 2.5 seconds\n")
PROFILING_TB = ("ERROR 10-08 12:00:03 [core.py:700] Traceback (most recent call last):\n"
                'ERROR 10-08 12:00:03 [core.py:700]   File "/vllm/v1/worker/gpu_worker.py", line 270, in '
                "determine_available_memory\n"
                'ERROR 10-08 12:00:03 [core.py:700]   File "/vllm/v1/worker/gpu_model_runner.py", line 3200, in '
                "profile_run\n")


FULL = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 22.49 GiB"


@pytest.mark.parametrize("before", ["", LOADING, LOADING + PROFILING_TB])
@pytest.mark.parametrize("cut", ["torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError: ",
                                 "OutOfMemoryError                          Traceback (most recent call last)"])
def test_the_oom_type_with_its_message_cut_is_read_as_the_whole_message(before: str, cut: str) -> None:
    # placed as the whole message is: by the frames, else by the progress lines, else not at all
    whole = classify(before + FULL + "\n")
    assert whole.cls in ("gpu_oom", "oom_profiling")
    assert (classify(before + cut + "\n").cls, classify(before + cut + "\n").stage) == (whole.cls, whole.stage)


@pytest.mark.parametrize("line", [
    "    except torch.OutOfMemoryError:\n",  # a source line under a frame quotes the name
    "INFO 10-08 12:00:02 [utils.py:10] retrying after OutOfMemoryError\n",
    "java.lang.OutOfMemoryError: Java heap space\n",  # not torch's
])
def test_a_line_that_only_names_the_type_is_no_oom(line: str) -> None:
    assert classify(LOADING + line).cls == "unknown"
