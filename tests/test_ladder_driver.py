"""The real Supervisor's ladder, driven by scripted histories: a scripted vLLM, a fake clock, a fake host.

No process, socket or sleep: each scenario is what one start (or several) of vLLM did, and the test reads
the exit code, the attempt log (a real file), what the guard showed and what it told systemd. The pieces
(``Relaxer``, the first request) get table tests of their own.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.scripted import (
    FakeClock,
    FakeHost,
    FakePort,
    RecordingNotifier,
    RecordingStatus,
    Script,
    ScriptedChild,
    ScriptedVllm,
    World,
    context,
    with_free,
)
from vllm_guard.diagnose import ladder
from vllm_guard.exit_codes import ExitCode
from vllm_guard.launch.child import ChildEnder
from vllm_guard.launch.first_request import Result
from vllm_guard.launch.journal import Attempt
from vllm_guard.launch.plan import build_plan
from vllm_guard.launch.readiness import FirstRequest
from vllm_guard.launch.relax import Relaxer
from vllm_guard.launch.supervisor import Supervisor
from vllm_guard.state import registry

KV_MISFIT = (
    "(EngineCore pid=41301) INFO [gpu_model_runner.py] Model loading took 16.60 GiB and 12.1 seconds",
    "(EngineCore pid=41301) ERROR [core.py:1584] ValueError: To serve at least one request with the model's max "
    "seq len (32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.12 GiB). "
    "Based on the available memory, the estimated maximum model length is 9200. Try increasing "
    "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    "(APIServer pid=41125) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
    "proc(s): {'EngineCore': 1}",
)
SERVING = ("(APIServer pid=41125) INFO:     Application startup complete.",)
PORT_IN_USE = ("(APIServer pid=41125) OSError: [Errno 98] error while attempting to bind on address "
               "('127.0.0.1', 8123): address already in use",)


class Rig:
    """One guard: the world's profile and machine, the scripted vLLM, the fake clock and host."""

    def __init__(self, world: World, *scripts: Script, vllm: str = "max-model-len = 32768",
                 guard: str = "first-request = false", ladder: str = "", env: dict[str, str] | None = None,
                 gpu_probe=None, port: FakePort | None = None) -> None:
        self.world = world
        self.port = port or FakePort()
        self.pre, self.facts = world.preflight(vllm, guard, ladder)
        self.clock = FakeClock()
        self.vllm = ScriptedVllm(self.clock, *scripts)
        self.fake_host = FakeHost()
        self.status = RecordingStatus()
        self.notifier = RecordingNotifier({**world.env, **(env or {})})
        self.supervisor = Supervisor(
            self.pre, self.facts, environ=world.env, status=self.status, spawner=self.vllm.spawn,
            ready=self.vllm.ready, gpu_probe=gpu_probe, clock=self.clock, notifier=self.notifier,
            pause=self.clock.pause, host=self.fake_host.host(), port=self.port)

    def signal_at(self, elapsed: float, signum: int = signal.SIGTERM) -> None:
        self.clock.at(elapsed, lambda: self.fake_host.signal(signum))

    def run(self) -> int:
        code = self.supervisor.run()
        assert self.status.closed and self.fake_host.restored  # however it ended
        return code


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


# --- the ladder ------------------------------------------------------------------------------------------


def test_kv_cache_misfit_then_vllms_own_number_becomes_ready(world: World) -> None:
    rig = Rig(world, Script(KV_MISFIT, exit_at=20), Script(SERVING, ready_at=25))
    rig.signal_at(200)
    assert rig.run() == ExitCode.TERMINATED == 143
    first, second, ended = world.records()
    assert (first["outcome"], first["failure"]["class"], first["exit"]) == ("failed", "kv_cache_too_small", 1)
    assert first["failure"]["numbers"]["estimated_max_len"] == 9200
    assert first["next"] == {"param": "max-model-len", "value": 9200, "reason": first["next"]["reason"]}
    assert (second["attempt"], second["outcome"]) == (2, "ready")
    assert second["changed"] == {"max-model-len": [32768, 9200]}
    assert "--max-model-len 9200" in rig.vllm.argv(1) and "--max-model-len 32768" in rig.vllm.argv(0)
    assert second["reported"]["time_to_ready_s"] == 25.0 and second["phases"]["health"] == 25.0
    assert (ended["phase"], ended["outcome"], ended["signal"], ended["exit"]) == ("serving", "stopped", 15, -15)
    (ready,) = rig.status.of("ready")
    assert ready["number"] == 2 and ready["relaxed"] == {"max-model-len": [32768, 9200]}
    assert ready["set_by_user"] == frozenset({"max-model-len"})
    assert rig.status.of("attempt") == ["attempt 1/5", "attempt 2/5: max-model-len 9200 (relaxed from 32768)"]
    # systemd: READY=1 only once vLLM answers, with what it runs as; STOPPING=1 on the signal.
    (ready_dgram,) = [f for f in rig.notifier.sent if f[0] == "READY=1"]
    assert ready_dgram[1] == "STATUS=ready: p on :8123, max-model-len 9200 (relaxed: max-model-len 9200)"
    assert ("STOPPING=1", "STATUS=stopping: signal 15") in rig.notifier.sent
    assert rig.vllm.spawned[1].child.ready_marked and not rig.vllm.spawned[0].child.ready_marked
    assert "remembered for the next start of this profile: max-model-len 9200" in rig.status.messages()


def test_another_server_on_the_port_is_a_failed_start_never_ready(world: World) -> None:
    """Issue 23: a colleague's server answers /health on our port while ours loads; the guard must not
    call that ready (no READY=1, no first request, no key sent), and stops with port_in_use naming it."""
    holder = "pid 4242 (bob: vllm serve Qwen/Qwen3-8B --port 8123)"
    rig = Rig(world, Script(SERVING, ready_at=2), port=FakePort(foreign=holder))
    assert rig.run() == ExitCode.START_FAILED
    (record,) = world.records()
    assert record["outcome"] == "failed" and record["failure"]["class"] == "port_in_use"
    assert holder in record["failure"]["evidence"][0] and "stop" in record["next"]
    assert rig.notifier.fields("READY=") == [] and not rig.vllm.spawned[0].child.ready_marked


def test_remembered_relaxations_are_the_next_starts_first_attempt(world: World) -> None:
    first = Rig(world, Script(KV_MISFIT, exit_at=20), Script(SERVING, ready_at=25))
    first.signal_at(200)
    assert first.run() == 143
    again = Rig(world, Script(SERVING, ready_at=25))
    again.signal_at(100, signal.SIGINT)
    assert again.run() == ExitCode.INTERRUPTED == 130
    start = world.records()[3]
    assert (start["attempt"], start["outcome"]) == (1, "ready")
    assert start["remembered"] == {"max-model-len": 9200} and start["changed"] == {"max-model-len": [32768, 9200]}
    assert "--max-model-len 9200" in again.vllm.argv(0) and len(again.vllm.spawned) == 1
    assert any(m.startswith("STARTING FROM REMEMBERED RELAXATIONS: max-model-len 9200")
               for m in again.status.messages())
    assert "STATUS=starting from remembered relaxations: max-model-len 9200" in again.notifier.fields("STATUS=")


def test_remembering_off_starts_as_written(world: World) -> None:
    first = Rig(world, Script(KV_MISFIT, exit_at=20), Script(SERVING, ready_at=25), ladder="remember = false")
    first.signal_at(200)
    first.run()
    again = Rig(world, Script(SERVING, ready_at=25), ladder="remember = false")
    again.signal_at(100)
    again.run()
    assert "--max-model-len 32768" in again.vllm.argv(0) and world.records()[3]["remembered"] is None


def test_startup_timeout_retries_once_unchanged_then_stops(world: World) -> None:
    rig = Rig(world, Script(("(APIServer pid=1) INFO Loading weights",)), guard="first-request = false\n"
              "startup-timeout = 30")
    assert rig.run() == ExitCode.START_FAILED == 5
    first, second = world.records()
    assert [r["failure"]["class"] for r in (first, second)] == ["startup_timeout", "startup_timeout"]
    assert first["failure"]["numbers"] == {"startup_timeout_s": 30.0} and first["next"]["param"] is None
    assert "stop" in second["next"] and second["changed"] == {}
    assert all(s.child.stopped_with == 30.0 for s in rig.vllm.spawned)  # stopped with the stop-timeout's grace
    assert 60 <= rig.clock.elapsed < 62  # two starts of 30 s each, in fake time
    assert len(rig.status.of("heartbeat")) >= 4  # "still in ..." every HEARTBEAT_S
    assert rig.status.of("table") == [{"attempts": 2, "exhausted": False}]


def test_stop_signal_during_startup_stops_vllm_and_exits_143(world: World) -> None:
    rig = Rig(world, Script(("(APIServer pid=1) INFO Loading weights",), ready_at=300))
    rig.signal_at(5)
    assert rig.run() == 143
    (record,) = world.records()
    assert (record["outcome"], record["exit"], record["failure"]) == ("stopped", -15, None)
    assert rig.vllm.spawned[0].child.stopped_with == 30.0
    assert any(m.startswith("stopping vLLM during start-up (") and "signal SIGTERM" in m
               for m in rig.status.messages())
    assert "vLLM stopped in 1.5s" in rig.status.messages()
    assert 5 <= rig.clock.elapsed < 6


def test_a_failure_no_step_fixes_is_start_failed_at_once(world: World) -> None:
    rig = Rig(world, Script(PORT_IN_USE, exit_at=3))
    assert rig.run() == ExitCode.START_FAILED
    (record,) = world.records()
    assert record["failure"]["class"] == "port_in_use" and "stop" in record["next"]
    assert rig.status.of("table") == [{"attempts": 1, "exhausted": False}]


def test_ladder_exhausted_after_max_attempts(world: World) -> None:
    rig = Rig(world, Script(KV_MISFIT, exit_at=20), ladder="max-attempts = 2")
    assert rig.run() == ExitCode.START_FAILED
    records = world.records()
    assert [r["outcome"] for r in records] == ["failed", "failed"] and len(rig.vllm.spawned) == 2
    assert rig.status.of("table") == [{"attempts": 2, "exhausted": True}]


def test_gpu_busy_from_the_recheck_under_the_lock_lowers_utilization(world: World) -> None:
    looks: list[float] = []

    def gpu_probe():
        looks.append(rig.clock.elapsed)
        # Another job holds memory at the first look, under the lock; it is still there for the second start.
        return with_free(rig.facts.gpus, 0.72)

    rig = Rig(world, Script(SERVING, ready_at=20), vllm="max-model-len = 8192", gpu_probe=gpu_probe)
    rig.signal_at(100)
    assert rig.run() == 143
    first, second, _ = world.records()
    assert (first["outcome"], first["failure"]["class"], first["failure"]["stage"]) == ("failed", "gpu_busy",
                                                                                    "before_start")
    assert first["failure"]["evidence"][0].startswith("re-check under the launch lock: GPU 0 has 16.20 GiB free, "
                                                 "utilization 0.92 needs 20.69 GiB")
    assert first["exit"] is None and first["next"]["param"] == "gpu-memory-utilization"
    assert second["changed"] == {"gpu-memory-utilization": [0.92, first["next"]["value"]]}
    assert f"--gpu-memory-utilization {first['next']['value']}" in rig.vllm.argv(0)
    assert len(rig.vllm.spawned) == 1  # the busy attempt never started vLLM
    # Utilization lowered for a busy moment is not remembered for the next start.
    assert not any(m.startswith("remembered for the next start") for m in rig.status.messages())


def test_gpu_busy_with_lowering_forbidden_waits_for_the_gpu(world: World) -> None:
    def gpu_probe():
        return with_free(rig.facts.gpus, 0.5 if rig.clock.elapsed < 12 else 0.99)

    rig = Rig(world, Script(SERVING, ready_at=20), vllm="max-model-len = 8192", gpu_probe=gpu_probe,
              ladder="allow-lower-utilization = false\ngpu-poll-interval = 2")
    rig.signal_at(100)
    assert rig.run() == 143
    first, second, _ = world.records()
    assert first["failure"]["class"] == "gpu_busy" and first["next"]["wait_for_gpu"]
    assert second["outcome"] == "ready" and second["changed"] == {}
    assert "waiting up to 600s for the GPU to free up" in rig.status.messages()
    # vLLM started only once the GPU was free, after waits of gpu-poll-interval (in fake time).
    assert rig.vllm.spawned[0].child.started - rig.clock.start >= 12 and rig.clock.waits[:6] == [2.0] * 6


def test_a_stall_after_ready_exits_6_and_the_watchdog_pings_stop(world: World) -> None:
    rig = Rig(world, Script(SERVING, ready_at=10, stall_at=60), env={"WATCHDOG_USEC": "20000000"})
    assert rig.run() == ExitCode.CHILD_EXITED == 6
    ready, ended = world.records()
    assert ready["outcome"] == "ready"
    assert (ended["phase"], ended["outcome"]) == ("serving", "stalled")
    assert ended["reason"] == "/health failed 3 times in a row, 10s apart"  # min(health-interval, watchdog / 2)
    assert "vLLM did not answer /health (3 of 3 in a row)" in rig.status.messages()
    pings = rig.notifier.fields("WATCHDOG=1")
    assert 4 <= len(pings) <= 6  # every 10 s from ready until the stall, none after
    assert "STATUS=stalled: /health failed 3 times in a row, 10s apart" in rig.notifier.fields("STATUS=")


def test_vllm_exiting_after_ready_exits_6_and_points_to_explain(world: World) -> None:
    rig = Rig(world, Script((*SERVING, "(EngineCore pid=2) ERROR torch.OutOfMemoryError: CUDA out of memory."),
                            ready_at=10, exit_at=40, status=1))
    assert rig.run() == 6
    _, ended = world.records()
    assert (ended["outcome"], ended["exit"]) == ("exited", 1)
    messages = rig.status.messages()
    assert "vLLM exited on its own after it was ready (status 1)" in messages
    assert any("vllm-guard explain --unit UNIT" in m for m in messages)


def test_registry_entry_follows_the_attempts(world: World) -> None:
    rig = Rig(world, Script(KV_MISFIT, exit_at=20), Script(SERVING, ready_at=25))
    entry = registry.path_for(world.tmp / "locks", os.getpid())
    seen: list[dict] = []
    for elapsed in (10, 100):
        rig.clock.at(elapsed, lambda: seen.append(json.loads(entry.read_text())))
    rig.signal_at(200)
    rig.run()
    starting, relaxed = seen
    assert (starting["state"], starting["attempt"], starting["keeper_pid"]) == ("starting", 1, 40000)
    assert (relaxed["state"], relaxed["attempt"], relaxed["vllm_pid"]) == ("relaxed", 2, 40011)
    assert not entry.exists()  # removed when the guard ends


# --- the Relaxer: table tests ----------------------------------------------------------------------------


@pytest.mark.parametrize(("vllm", "dest", "log_context", "expected"), [
    ("max-model-len = 32768", "max_model_len", {"max_model_len": 4096}, 32768),  # the profile's, first
    ("max-model-len = 32768", "max_num_seqs", {"max_num_seqs": 64}, 64),  # else what vLLM's log said
    ("max-model-len = 32768", "max_num_seqs", None, "estimate"),  # else the preflight's resolution
    ("max-model-len = 32768", "gpu_memory_utilization", None, 0.92),  # never the estimate's: the option default
    ("max-model-len = 32768\ngpu-memory-utilization = 0.8", "gpu_memory_utilization", None, 0.8),
    ("max-model-len = 32768", "enforce_eager", None, False),
])
def test_effective_values(world: World, vllm: str, dest: str, log_context: dict | None, expected: object) -> None:
    pre, facts = world.preflight(vllm)
    relax = Relaxer(context(world, pre, facts))
    if expected == "estimate":
        assert pre.estimate is not None
        expected = pre.estimate.max_num_seqs
    assert relax.effective(pre.profile, dest, log_context) == expected


RAISE = ladder.Step("gpu-memory-utilization", 0.95, "raise it")


@pytest.mark.parametrize(("step", "free", "ladder_lines", "expected"), [
    (RAISE, 0.99, "", ("gpu-memory-utilization", 0.95)),  # memory free for all of it
    (RAISE, 0.955, "", ("gpu-memory-utilization", 0.93)),  # only as far as is free, 2 % kept
    (RAISE, 0.93, "", ("kv-cache-dtype", "fp8")),  # nothing to raise to: fp8 KV, native on an L4 (8.9)
    (RAISE, 0.93, "allow-fp8-kv-cache = false", "stop"),
    (RAISE, None, "", ("kv-cache-dtype", "fp8")),  # no GPU reported: nothing says the memory is free
    (ladder.Step("gpu-memory-utilization", 0.7, "lower it"), 0.5, "", ("gpu-memory-utilization", 0.7)),
    (ladder.Step("max-model-len", 4096, "shorter"), 0.1, "", ("max-model-len", 4096)),
    (ladder.Stop("no"), 0.99, "", "stop"),
])
def test_within_limits(world: World, step: ladder.Step | ladder.Stop, free: float | None, ladder_lines: str,
                       expected: object) -> None:
    pre, facts = world.preflight(ladder=ladder_lines)
    relax = Relaxer(context(world, pre, facts, gpu_probe=lambda: () if free is None else with_free(facts.gpus, free)))
    got = relax.within_limits(step, pre.profile)
    if expected == "stop":
        assert isinstance(got, ladder.Stop)
    else:
        assert isinstance(got, ladder.Step) and (got.param, got.value) == expected


def test_changed_resolves_defaults(world: World) -> None:
    pre, facts = world.preflight("max-model-len = 32768")
    relax = Relaxer(context(world, pre, facts))
    after = pre.profile.with_value("max_model_len", 9200).with_value("enforce_eager", True)
    assert relax.changed(pre.profile, after) == {"max-model-len": [32768, 9200], "enforce-eager": [False, True]}
    assert relax.changed(pre.profile, pre.profile) == {}


# --- the first request, with a scripted answer --------------------------------------------------------------


def _first_request(world: World, answers: list[Result], *, stop_first: bool = False, foreign: str | None = None):
    pre, facts = world.preflight(guard="")
    ctx = context(world, pre, facts)
    ctx.port = FakePort(foreign=foreign)
    child = ScriptedChild(Script(SERVING, ready_at=0), FakeClock(), 7, lambda raw, stream: None)
    plan = build_plan(pre.profile, environ=world.env, cuda_visible_devices=facts.cuda_visible_devices)
    attempt = Attempt(1, plan, pre.profile, {}, label="attempt 1/5")
    asked: list[tuple[str, str | None]] = []
    answered = threading.Event()

    def ask(base: str, lines: list[str], *, api_key: str | None, timeout_s: float, **_: object) -> list[Result]:
        asked.append((base, api_key))
        if stop_first:
            answered.wait(5)  # an answer that takes its time
        return answers

    if stop_first:
        ctx.stop_signal = signal.SIGTERM
    try:
        ok = FirstRequest(ctx, ChildEnder(ctx), ask=ask).passes(attempt, child, {})
    finally:
        answered.set()
    return ok, attempt, asked, child


def test_first_request_answered_is_ready(world: World) -> None:
    ok, attempt, asked, child = _first_request(world, [Result("/v1/completions", True, 200, 0.4, answer_chars=3)])
    assert ok and asked == [("http://127.0.0.1:8123", None)] and child.stopped_with is None
    assert attempt.first_request == [{"endpoint": "/v1/completions", "ok": True, "status": 200, "seconds": 0.4,
                                      "error": None, "answer_chars": 3}]


def test_no_first_request_to_a_socket_the_launch_does_not_own(world: World) -> None:
    ok, attempt, asked, child = _first_request(world, [Result("/v1/completions", True, 200, 0.4)],
                                               foreign="pid 4242 (bob: python -m http.server 8123)")
    assert not ok and asked == [] and attempt.diagnosis.cls == "port_in_use"
    assert child.stopped_with is not None


def test_first_request_refused_fails_the_attempt(world: World) -> None:
    ok, attempt, _, child = _first_request(world, [Result("/v1/completions", False, 500, 0.1, error="boom")])
    assert not ok and attempt.outcome == "failed" and child.stopped_with == 30.0
    assert attempt.diagnosis is not None and attempt.diagnosis.cls == "first_request_failed"


def test_a_stop_while_the_first_request_waits_stops_at_once(world: World) -> None:
    ok, attempt, _, child = _first_request(world, [], stop_first=True)
    assert not ok and attempt.outcome == "stopped" and attempt.exit_status == -15 and child.stopped_with == 30.0


def test_waiting_for_the_gpu_extends_the_start_timeout_within_its_limit_and_says_so(world: World) -> None:
    """Issue 23: every heartbeat of the wait sends EXTEND_TIMEOUT_USEC and STATUS, never past wait-for-gpu."""
    def gpu_probe():
        return with_free(rig.facts.gpus, 0.5 if rig.clock.elapsed < 12 else 0.99)

    rig = Rig(world, Script(SERVING, ready_at=20), vllm="max-model-len = 8192", gpu_probe=gpu_probe,
              guard="first-request = false\nheartbeat-interval = 2",
              ladder="allow-lower-utilization = false\ngpu-poll-interval = 1\nwait-for-gpu = 30")
    rig.signal_at(100)
    assert rig.run() == 143
    waits = [f for f in rig.notifier.sent if any(x.startswith("STATUS=waiting for GPU memory") for x in f)]
    assert len(waits) >= 4, rig.notifier.sent
    extends = [int(x.split("=", 1)[1]) for f in waits for x in f if x.startswith("EXTEND_TIMEOUT_USEC=")]
    assert len(extends) == len(waits) and all(0 < usec <= 30e6 for usec in extends)
    assert extends == sorted(extends, reverse=True)  # what is left of the 30 s, less at each heartbeat
    assert any("(up to 30s) for 4s" in x for f in waits for x in f), waits
    second = world.records()[1]
    assert second["outcome"] == "ready" and second["waited"][0]["for"] == "GPU memory to free up"
    assert second["waited"][0]["seconds"] >= 10
