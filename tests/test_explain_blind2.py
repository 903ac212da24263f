"""`explain` on blind2 (tests/data/real-logs/blind2), the second blind set of issue 26, after its one scoring.

It was scored once, whole, before any rule was written for it (20 of 27 right, 2 confident errors: the table in
tests/data/real-logs/README.md). The rules each miss taught are checked here on the log that taught it, and on a
variant that must not match, so a rule is never only "the fixture's own words".
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose import logread
from vllm_guard.diagnose.classify import classify


def _log(prefix: str) -> str:
    return blind_log("blind2", prefix)


@pytest.mark.parametrize(("prefix", "cls", "stage", "detail"), [
    # flash-attn built for another torch: the loader's undefined C++ symbol (vllm #9377)
    ("b003", "version_mismatch", "before_start", "extension_abi"),
    # a CUDA 12 wheel on a CUDA 11.8 install: libcudart.so.12 missing (vllm #1738, 0.2.2)
    ("b017", "version_mismatch", "before_start", "extension_abi"),
    # HF_HUB_OFFLINE=1 with a Hub id: huggingface_hub's OfflineModeIsEnabled (vllm #3719)
    ("b007", "network", "before_start", "hub"),
    # no config.json at the revision asked for: the Hub's 404 (vllm PR #8501)
    ("b016", "model_access", "before_start", "config_missing"),
    # PyTorch's OOM figures quoted without the "CUDA out of memory" head, hard-wrapped (vllm PR #57595)
    ("b015", "gpu_oom", "unknown", None),
])
def test_what_the_misses_taught(prefix: str, cls: str, stage: str, detail: str | None) -> None:
    d = classify(_log(prefix))
    assert (d.cls, d.stage, d.detail) == (cls, stage, detail)
    assert d.confidence in ("high", "medium") and d.template


def test_v1_worker_prefix_with_a_rank_is_a_process_and_its_frames_place_the_oom() -> None:
    # "(VllmWorker rank=3 pid=1090)" (vLLM 0.8-0.10): read as a prefix, the traceback's capture_end frame says
    # the OOM came in CUDA-graph capture (vllm #19186), not "stage unknown".
    lines = logread.read(_log("b014"))
    assert lines[0].proc == "VllmWorker rank=3 pid=1090" and lines[0].text.startswith("ERROR 06-05")
    d = classify(_log("b014"))
    assert (d.cls, d.stage, d.confidence) == ("oom_cudagraph", "cuda_graph", "high")


def test_a_workers_oom_is_not_placed_by_the_other_workers_later_lines() -> None:
    # V0: every worker calls itself VllmWorkerProcess; pid 3897243 OOMs on the first line, then the driver and
    # the other workers log "Using model weights format" (vllm PR #9045). Nothing shows where 3897243 was. Its OOM
    # says another process (3888866) holds 71.11 GiB of GPU 2 against its own 8.08: the GPU was taken
    # (tests/test_explain_blind24.py).
    d = classify(_log("b018"))
    assert (d.cls, d.detail, d.stage) == ("gpu_busy", "oom_other_process", "unknown")
    assert d.numbers["gpu_index"] == 2 and d.numbers["tried_to_allocate_gib"] == pytest.approx(60 / 1024, abs=1e-3)
    assert (d.numbers["other_pid"], d.numbers["other_process_gib"]) == (3888866, 71.11)


def test_the_same_process_own_progress_still_places_its_oom() -> None:
    # The prefixed process's own loading line places it, and an unprefixed bar (a redraw loses vLLM's prefix)
    # counts for every process; an unprefixed INFO record is another (undecorated) process's.
    own = ("(VllmWorkerProcess pid=7) INFO 10-03 18:29:16 weight_utils.py:242] Using model weights format "
           "['*.safetensors']\n(VllmWorkerProcess pid=7) ERROR 10-03 18:29:17 multiproc_worker_utils.py:231] "
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 60.00 MiB. GPU 2 has a total capacity of "
           "79.22 GiB of which 2.06 MiB is free.\n")
    assert classify(own).cls == "oom_loading"
    load, oom = own.replace("(VllmWorkerProcess pid=7) INFO", "(VllmWorkerProcess pid=8) INFO").splitlines()
    other = f"{oom}\n{load}\n"  # another worker's line after the OOM: nothing said of pid 7
    assert classify(other).cls == "gpu_oom"
    assert classify(f"{load}\n{oom}\n").cls == "oom_loading"  # before it: the start had reached loading
    bar = other + "Loading safetensors checkpoint shards:   3% Completed | 1/37 [00:02<01:39,  2.77s/it]\n"
    assert classify(bar).cls == "oom_loading"


_C_WARNING = ("WARNING 10-16 05:20:48 _custom_ops.py:19] Failed to import from vllm._C with ImportError('/x/"
              "_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')")


def test_vllms_extension_warning_is_supporting_evidence_not_a_decisive_line() -> None:
    # vLLM warns and goes on when its extension does not load: not the .so rule's exception line. In a start that
    # never got ready it is the likeliest cause (three collectors labelled such pastes so, blind3/b3-020, blind4/
    # b4-029, blind8/b8-023), said with medium confidence; in a start that got ready it is nothing.
    d = classify(_C_WARNING + "\n")
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "extension_abi", "medium")
    ready = _C_WARNING + "\nINFO:     Application startup complete.\n"
    assert classify(ready).cls == "unknown"
    # a decisive message after it wins
    oom = _C_WARNING + ("\nValueError: No available memory for the cache blocks. Try increasing "
                        "`gpu_memory_utilization`.\n")
    assert classify(oom).cls == "no_kv_memory"


@pytest.mark.parametrize("text", [
    # a 404 for an optional file vLLM looks up and does without
    "404 Client Error: Not Found for url: https://huggingface.co/org/m/resolve/main/generation_config.json",
    # libcuda.so.1 is the driver, not a library a wheel was built against
    "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
])
def test_the_new_rules_leave_their_near_misses_alone(text: str) -> None:
    assert classify(text).cls == "unknown"
