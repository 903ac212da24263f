"""NCCL's unhandled system and CUDA errors (rules_network.py, nccl_unhandled): network, said medium when nothing
decisive follows, except where NCCL's own lines name CUDA's out-of-memory as the failed call's cause; a paste may
cut the words; the ladder's stop says what the advice says (a newcomer's review of blind57's round)."""

from __future__ import annotations

import pytest

from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Stop, next_step

P = "(Worker_TP1 pid=7) ERROR 01-01 00:00:00 [multiproc_executor.py:1] "


@pytest.mark.parametrize("last", [
    "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
    "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
    "RuntimeError: NCCL error: unhandled system erro",  # cut where the paste ends
    "RuntimeError: NCCL error: unhandled system e",
    "RuntimeError: NCCL error: unhandled cuda err",
])
def test_nccls_unhandled_errors_and_their_cut_words_are_network(last: str) -> None:
    d = classify(P + last + "\n")
    assert (d.cls, d.detail, d.confidence) == ("network", "nccl_unhandled", "medium")
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and "/dev/shm" in stop.reason and "NCCL_DEBUG=INFO" in stop.reason


@pytest.mark.parametrize("text", [
    P + "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, unhandled cuda error (run "
    "with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n" + P + "ncclUnhandledCudaError: Call to CUDA function "
    "failed.\n" + P + "Last error:\n" + P + "Cuda failure 'out of memory'\n",
    "node1:7:7 [1] NCCL INFO Channel 00/02 : 0 1\nnode1:7:7 [1] enqueue.cc:1 NCCL WARN Cuda failure 'out of memory'\n"
    + P + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n",
])
def test_not_when_nccls_own_lines_name_cudas_out_of_memory(text: str) -> None:
    d = classify(text)
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "gpu_oom"


def test_not_in_a_start_that_got_ready() -> None:
    text = ("INFO 01-01 00:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
            "INFO:     Application startup complete.\n" + P + "RuntimeError: NCCL error: unhandled system error\n")
    assert classify(text).cls != "network"
