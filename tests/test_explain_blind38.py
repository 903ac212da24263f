"""`explain` on blind38 (tests/data/real-logs/blind38), the thirty-eighth blind set of issue 26, after its one scoring.

Collected from committed files, most of them Jupyter notebooks' saved outputs, by a helper that never read the
classifier, and scored once, whole, at commit 7c69adf (10 of 12 right, 1 confident error; README.md there). What its
misses taught: IPython writes tracebacks its own way (a header without the colon, "File path:N, in Class.func"), and
their frames place an error as Python's do; V0 sizes the KV cache without counting other processes, so an OOM as it
allocates it is theirs when they hold more than the headroom; the CUDA driver API's "out of memory" is an OOM.
"""

from __future__ import annotations

from tests.conftest import DATA, blind_log, run_cli
from vllm_guard.diagnose import logread
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.markers import KV_CACHE, LOADING

_IPYTHON_8 = (
    "\x1b[0;31mOutOfMemoryError\x1b[0m                          Traceback (most recent call last)\n"
    "Cell \x1b[0;32mIn[2], line 1\x1b[0m\n"
    '\x1b[0;32m----> 1\x1b[0m llm = LLM(model="/models/qwen")\n'
    "File \x1b[0;32m/env/lib/python3.12/site-packages/vllm/worker/cache_engine.py:81\x1b[0m, in "
    "\x1b[0;36mCacheEngine._allocate_kv_cache\x1b[0;34m(self, num_blocks, device)\x1b[0m\n"
    "\x1b[1;32m     80\x1b[0m     kv_cache.append(\n"
    "\x1b[0;31mOutOfMemoryError\x1b[0m: CUDA out of memory. Tried to allocate 778.00 MiB.\n"
)

_IPYTHON_7 = """\
RuntimeError                              Traceback (most recent call last)
<ipython-input-3-1b2c> in <module>
----> 1 llm = LLM(model="m")
~/env/lib/python3.8/site-packages/vllm/model_executor/model_loader/loader.py in load_model(self, model_config)
    120         model.load_weights(weights)
RuntimeError: boom
"""


def test_ipythons_tracebacks_are_read_with_their_frames() -> None:
    tb = logread.tracebacks(logread.read(_IPYTHON_8))
    assert len(tb) == 1 and tb[0].exception is not None
    assert [f.func for f in tb[0].frames] == ["_allocate_kv_cache"]
    tb7 = logread.tracebacks(logread.read(_IPYTHON_7))
    assert [(f.path, f.func) for f in tb7[0].frames] == [
        ("~/env/lib/python3.8/site-packages/vllm/model_executor/model_loader/loader.py", "load_model")]


def test_another_process_holding_what_v0_counted_on_for_the_kv_cache() -> None:
    # V0 0.7 sized the KV cache for 0.90 x 44.34 GiB; as it allocated it, "Process 358947 has 16.64 GiB memory in
    # use" against this process's 27.53 GiB
    d = classify(blind_log("blind38", "b38-002"))
    assert (d.cls, d.detail, d.stage) == ("gpu_busy", "oom_other_process", KV_CACHE)
    assert (d.numbers["other_pid"], d.numbers["other_process_gib"]) == (358947, 16.64)


def test_a_small_other_process_at_the_kv_allocation_is_not_the_cause() -> None:
    oom = blind_log("blind38", "b38-002").replace("Process 358947 has 16.64 GiB", "Process 358947 has 2.64 GiB")
    assert classify(oom).cls != "gpu_busy"


def test_the_pid_is_shown_as_written() -> None:
    result = run_cli("explain", str(next((DATA / "real-logs" / "blind38").glob("b38-002-*.log"))))
    assert "other_pid 358947" in result.out


def test_the_drivers_out_of_memory_in_a_start_that_got_ready_is_no_failure() -> None:
    # found by a review: a caller may catch it and go on (Unsloth retried), so only a start that never got ready
    ready = next((DATA / "real-logs" / "startups").glob("013-*.log")).read_text().splitlines(keepends=True)
    ready.insert(30, "(EngineCore_DP0 pid=230015) CUDA driver error: out of memory\n")
    assert classify("".join(ready)).cls == "unknown"


def test_the_headroom_is_the_logs_own_utilization() -> None:
    # V0 printed "x gpu_memory_utilization (0.90)"; at 0.50 the 16.64 GiB another process holds fits the headroom
    # of 22 GiB above it: not why the KV allocation ran out
    log = blind_log("blind38", "b38-002")
    assert classify(log.replace("gpu_memory_utilization (0.90)", "gpu_memory_utilization (0.50)")).cls != "gpu_busy"


def test_a_warning_that_names_two_paths_is_no_ipython_frame() -> None:
    text = ("RuntimeError                              Traceback (most recent call last)\n"
            "/a/b.py:12: UserWarning: see /c/d.py in foo(x)\n")
    assert logread.tracebacks(logread.read(text))[0].frames == ()


def test_the_cuda_driver_apis_out_of_memory() -> None:
    # Unsloth printed "Error:" / "CUDA driver error: out of memory" while vLLM loaded the weights, then retried in the
    # same process and failed on "Duplicate layer name"
    d = classify(blind_log("blind38", "b38-011"))
    assert (d.cls, d.stage) == ("oom_loading", LOADING)


def test_what_blind38_read_right_at_its_score() -> None:
    want = {"b38-001": "no_kv_memory", "b38-003": "model_access", "b38-004": "no_kv_memory",
            "b38-005": "oom_profiling", "b38-006": "usage_error", "b38-007": "gpu_busy", "b38-008": "no_kv_memory",
            "b38-009": "no_kv_memory", "b38-010": "too_few_gpus", "b38-012": "unknown"}
    assert {p: classify(blind_log("blind38", p)).cls for p in want} == want
