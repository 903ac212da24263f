"""`explain` on blind127 and blind128 (tests/data/real-logs/blind127, blind128), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier. blind127, pipelines that start vLLM for batch generation and
evaluation, scored once at edc0a9b: 16 of 17, no confident error. Its one miss taught a reading: torch's device
out-of-memory exception named with its message cut off (IPython's header names the class above the frames).
blind128, starts that fail on a feature switched on, scored once at 013a916: 16 of 20, 2 confident errors (vLLM's
'does not support LoRA yet', labelled unsupported_architecture where three earlier logs are labelled usage_error).
Its misses taught the speculative-decoding CUDA-graph sizes refusal; a PR branch's 'Speculative decoding is not
supported with Ray.', in no release, stays a miss.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_settings import SPEC_CUDAGRAPH
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


def test_the_speculative_decoding_cuda_graph_refusal_is_a_settings_refusal() -> None:
    # V1's wrapper quoting 0.11-0.30's "Can't determine cudagraph shapes that are both a multiple of 3
    # (num_speculative_tokens + 1) required by spec-decode and 4 (tensor_parallel_size) ..." (EAGLE at TP 4)
    d = classify(blind_log("blind128", "b128-003"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "spec_cudagraph", "high")
    assert advice_for(d) is SPEC_CUDAGRAPH
    assert isinstance(next_step(d, Settings(max_model_len=4096)), Stop)


@pytest.mark.parametrize("inside", ["num_speculative_tokens + 1 or tp if sequence parallelism is enabled",  # 0.20-0.30
                                    "num_speculative_tokens + 1"])  # 0.32-0.33
def test_the_later_wording_of_the_cuda_graph_sizes_refusal(inside: str) -> None:
    # vLLM's raise when no capture size rounds up to a multiple under the largest (config/compilation.py)
    line = (f"ValueError: No valid cudagraph sizes after rounding to multiple of 5 ({inside}) please adjust "
            "num_speculative_tokens (4) or max_cudagraph_capture_size (4) or cudagraph_capture_sizes ([1, 2, 4])\n")
    assert (classify(line).cls, classify(line).detail) == ("usage_error", "spec_cudagraph")


def test_vllm_0_11s_warning_of_the_same_is_no_failure() -> None:
    # 0.11 only warned, and went on with the sizes it had (config/compilation.py)
    line = ("WARNING 11-20 10:00:00 [compilation.py:948] No valid cudagraph sizes after rounding to multiple of  "
            "num_speculative_tokens + 1 (5); please adjust num_speculative_tokens or max_cudagraph_capture_size (or "
            "cudagraph_capture_sizes)\n")
    assert classify(line).detail != "spec_cudagraph"


HEADER = "OutOfMemoryError                          Traceback (most recent call last)\n"
CELL = ("Cell In[2], line 1\n----> 1 llm = LLM(model='m', gpu_memory_utilization=0.9)\n"
        "File /opt/conda/lib/python3.12/site-packages/vllm/entrypoints/llm.py:214, in LLM.__init__(self, model)\n")
HELD = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of "
        "which 120.00 MiB is free. Process 31337 has 60.00 GiB memory in use. Including non-PyTorch memory, this "
        "process has 18.90 GiB memory in use.\n")
RAY = ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
       "Memory on the node (IP: 10.0.0.1, ID: 5f1a) where the task (task ID: 3c2e, name=run_vllm, pid=4242, memory "
       "used=20.10GB) was running was 60.00GB / 62.00GB (0.9677), which exceeds the memory usage threshold of 0.95. "
       "Ray killed this worker (ID: 9a8b) because it was the most recently scheduled task.\n")


@pytest.mark.parametrize("before", ["", LOADING])
def test_ipythons_header_gives_way_to_the_whole_message_below(before: str) -> None:
    # (newcomer review) the header read first had hidden the message's own reading: another process's 60 GiB
    plain = classify(before + "Traceback (most recent call last):\n" + CELL + HELD)
    with_header = classify(before + HEADER + CELL + HELD)
    assert (with_header.cls, with_header.detail, with_header.numbers) == (plain.cls, plain.detail, plain.numbers)
    assert with_header.cls == "gpu_busy" and with_header.numbers["other_pid"] == 31337


def test_rays_out_of_memory_under_ipythons_header_is_the_hosts() -> None:
    # Ray's exception has the same short name, and is the node's RAM: never a GPU setting to change
    assert classify(LOADING + HEADER + CELL + RAY).cls == classify(LOADING + CELL + RAY).cls == "host_oom"


def test_the_type_alone_on_its_line_gives_way_to_the_message_on_the_next() -> None:
    d = classify(LOADING + "torch.OutOfMemoryError:\n" + HELD.replace("OutOfMemoryError: ", ""))
    assert d.cls == "gpu_busy"
