"""`explain` on blind24 (tests/data/real-logs/blind24), the twenty-fourth blind set of issue 26, after its one scoring.

Collected from threads outside the vllm-project organisation by a helper that never read the classifier, and scored
once, whole, at commit e0f837c (9 of 10 right, 1 confident error; tests/data/real-logs/README.md). Its one miss
taught: PyTorch's out-of-memory message names the other processes on the GPU and what this one holds (NVML's
processes in its order, this one written in place as "this process").
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import OOM_OTHER_PROCESS, advice_for
from vllm_guard.diagnose.ladder import Limits, Settings, Step, next_step


def test_an_oom_that_names_another_process_holding_the_gpu_is_gpu_busy() -> None:
    # b24-004: Xinference loading a second model, "GPU 0 has a total capacty of 23.53 GiB of which 329.44 MiB is
    # free. Process 35156 has 22.14 GiB memory in use. Including non-PyTorch memory, this process has 1.05 GiB"
    d = classify(blind_log("blind24", "b24-004"))
    assert (d.cls, d.detail, d.confidence) == ("gpu_busy", "oom_other_process", "medium")
    assert (d.numbers["other_pid"], d.numbers["other_process_gib"], d.numbers["process_gib"]) == (35156, 22.14, 1.05)
    assert d.numbers["total_gib"] == 23.53  # PyTorch 2.1's "capacty"
    assert advice_for(d) is OOM_OTHER_PROCESS
    step = next_step(d, Settings())
    assert isinstance(step, Step) and step.wait_for_gpu  # 0.32 GiB free: nothing to lower to


_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 "
        "GiB of which 1.02 GiB is free. {listed}Including non-PyTorch memory, this process has {this} GiB memory in "
        "use. Of the allocated memory 70.00 GiB is allocated by PyTorch.\n")


@pytest.mark.parametrize(("listed", "this"), [
    ("Process 99 has 10.10 GiB memory in use. ", "68.00"),  # a small other process
    ("Process 99 has 38.10 GiB memory in use. ", "40.00"),  # not twice what this one holds
    # a MIG slice (9.75 GiB here) whose OOM lists its parent GPU's processes: more than the slice holds
    ("Process 99 has 30.00 GiB memory in use. ", "9.50"),
])
def test_an_oom_that_names_no_dominant_other_process_stays_an_oom(listed: str, this: str) -> None:
    text = _OOM.format(listed=listed, this=this)
    if this == "9.50":
        text = text.replace("total capacity of 79.15 GiB of which 1.02 GiB", "total capacity of 9.75 GiB of which "
                            "20.00 MiB")
    d = classify(text)
    assert d.cls == "gpu_oom" and d.detail is None


def test_two_other_processes_together_hold_the_gpu() -> None:
    d = classify(_OOM.format(listed="Process 98 has 30.00 GiB memory in use. Process 99 has 30.00 GiB memory in use. ",
                             this="17.00"))
    assert (d.cls, d.numbers["other_processes_gib"], d.numbers["other_pid"]) == ("gpu_busy", 60.0, 98)


def test_a_sibling_worker_of_the_same_vllm_is_not_another_process() -> None:
    # two tensor-parallel workers put on one GPU: the "other" process is vLLM's own, and dies with it
    oom = _OOM.format(listed="Process 4242 has 66.00 GiB memory in use. ", this="12.50")
    text = ("(Worker_TP0 pid=4242) INFO 01-01 00:00:01 [gpu_worker.py:1] Loading weights\n"
            f"(Worker_TP1 pid=4243) ERROR 01-01 00:00:02 [multiproc_executor.py:1] {oom}")
    d = classify(text)
    assert d.cls in ("gpu_oom", "oom_loading") and d.detail is None  # an OOM, not a GPU another program holds


def test_in_a_containers_pid_namespace_this_process_is_not_named_so_nothing_is_read() -> None:
    # PyTorch names its own process "this process" by its pid; inside a container NVML answers host pids, so every
    # process is a "Process N" and none is this one: the reading stays an OOM
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.02 GiB is free. Process 3100 has 60.00 GiB memory in use. Process 3200 has 18.00 GiB "
            "memory in use. Of the allocated memory 17.00 GiB is allocated by PyTorch.\n")
    assert classify(text).cls == "gpu_oom"


def test_the_ladder_never_raises_the_utilization_it_lowers() -> None:
    # the next value (3 free + 20 held - margin) / 80 = 0.28 is above the 0.25 the start ran with: wait instead
    text = _OOM.format(listed="Process 99 has 55.00 GiB memory in use. ", this="20.00").replace(
        "79.15 GiB of which 1.02 GiB", "80.00 GiB of which 3.00 GiB")
    d = classify(text)
    assert d.cls == "gpu_busy"
    step = next_step(d, Settings(gpu_memory_utilization=0.25), Limits(min_gpu_memory_utilization=0.2))
    assert isinstance(step, Step) and step.wait_for_gpu and step.param is None


def test_what_blind24_read_right_at_its_score() -> None:
    want = {"b24-001": "dtype_unsupported", "b24-002": "usage_error", "b24-003": "unknown", "b24-005":
            "kv_cache_too_small", "b24-006": "version_mismatch", "b24-007": "version_mismatch", "b24-008":
            "model_access", "b24-009": "unsupported_architecture", "b24-010": "unknown"}
    assert {p: classify(blind_log("blind24", p)).cls for p in want} == want


def test_the_ladder_counts_what_vllm_held_as_free_after_it_exits() -> None:
    # another process holds 49 GiB of 79; vLLM held 20 when it ran out with 10 free: 30 are there for the next start
    text = _OOM.format(listed="Process 99 has 49.00 GiB memory in use. ", this="20.00").replace(
        "of which 1.02 GiB is free", "of which 10.00 GiB is free")
    d = classify(text)
    assert (d.cls, d.detail) == ("gpu_busy", "oom_other_process")
    assert next_step(d, Settings()).wait_for_gpu  # 30 of 79 GiB is below the default floor of half the GPU
    step = next_step(d, Settings(), Limits(min_gpu_memory_utilization=0.3))
    assert isinstance(step, Step) and step.param == "gpu-memory-utilization"
    assert step.value == pytest.approx(0.37, abs=0.01)  # (10 + 20 - margin) / 79.15, not (10 - margin) / 79.15
