"""Ready means it answers: the first real request before READY=1, start-up phases, stalls after ready.

The real guard against the fake vLLM (real processes, a real HTTP server, a real notify socket)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.foreign_server import ForeignServer
from tests.test_serve import L4 as L4_MACHINE
from tests.test_serve import Rig, gone_soon, kill_running_guards
from tests.test_systemd import NotifySocket

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and prctl are Linux's")


def stop(guard: subprocess.Popen[str]) -> tuple[int, str]:
    guard.send_signal(signal.SIGTERM)
    _, err = guard.communicate(timeout=30)
    return guard.returncode, err


def test_a_first_request_oom_is_a_failed_start_and_the_ladder_halves_max_num_seqs(tmp_path: Path) -> None:
    """/health answers, the first completion runs out of memory in the sampler: not ready, READY=1 later."""
    address = str(tmp_path / "notify.sock")
    listener = NotifySocket(address)
    rig = Rig(tmp_path, first_request_oom_above_seqs=128)
    listener.port = rig.port
    guard = rig.start(rig.profile("max-model-len = 8192"), env={"NOTIFY_SOCKET": address})
    try:
        rig.wait_ready(guard)
        code, err = stop(guard)
        time.sleep(0.3)
    finally:
        listener.close()
    assert code == 143
    first, second = rig.records()[:2]
    assert first["outcome"] == "failed" and first["failure"]["class"] == "oom_profiling"
    assert first["failure"]["stage"] == "api_server"
    assert "first request /v1/completions" in first["failure"]["evidence"][0]
    assert first["first_request"][0]["status"] == 500 and first["first_request"][0]["ok"] is False
    assert first["next"]["param"] == "max-num-seqs" and first["next"]["value"] == 128
    assert second["outcome"] == "ready" and second["changed"] == {"max-num-seqs": [256, 128]}
    assert [r["endpoint"] for r in second["first_request"]] == ["/v1/completions", "/v1/chat/completions"]
    assert all(r["ok"] and r["answer_chars"] > 0 for r in second["first_request"])
    assert "the first request failed" in err
    # READY=1 once, after the first request of the attempt that became ready, never at /health alone.
    assert listener.fields("READY") == ["1"]
    ready_at = next(t for t, m in listener.messages if "READY=1" in m)
    asked_at = [t for t, m in listener.messages if "first request" in m]
    assert len(asked_at) == 2 and asked_at[1] < ready_at


def test_phases_are_timed_recorded_and_shown(tmp_path: Path) -> None:
    rig = Rig(tmp_path, load_s=0.3)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    rig.wait_ready(guard)
    code, err = stop(guard)
    assert code == 143
    phases = rig.records()[0]["phases"]
    for name in ("first_line", "imports", "weights", "profiling", "kv_cache", "graphs", "port", "health",
                 "first_request"):
        assert isinstance(phases[name], float), (name, phases)
    order = [phases[n] for n in ("first_line", "imports", "weights", "kv_cache", "port", "health", "first_request")]
    assert order == sorted(order)
    assert phases["weights"] >= 0.3  # the fake's load time
    assert "where the start-up time went:" in err and "weights" in err and "first token" in err
    # Issue 23: one start, one duration: the ready line, the phases and the record say the same figure.
    record = rig.records()[0]
    took = record["reported"]["time_to_ready_s"]
    assert abs(record["duration_s"] - took) <= 0.2 and abs(phases["first_request"] - took) <= 0.2
    assert f"after 1 attempt(s), {took:.1f} s" in err
    shown = subprocess.run([sys.executable, "-m", "vllm_guard", "attempts", str(rig.log)], env=rig.env,
                           capture_output=True, text=True, check=True)
    assert "first token" in shown.stdout


def test_an_embedding_model_is_asked_for_an_embedding(tmp_path: Path) -> None:
    rig = Rig(tmp_path, task="embed", chat_template=False)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    rig.wait_ready(guard)
    assert stop(guard)[0] == 143
    assert [r["endpoint"] for r in rig.records()[0]["first_request"]] == ["/v1/embeddings"]


def test_the_api_key_and_served_name_are_those_vllm_serves(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    guard = rig.start(rig.profile('max-model-len = 8192\napi-key = "sk-first-request"'))
    rig.wait_ready(guard)
    assert stop(guard)[0] == 143
    assert all(r["ok"] for r in rig.records()[0]["first_request"])
    assert "sk-first-request" not in rig.log.read_text()


def test_first_request_can_be_turned_off(tmp_path: Path) -> None:
    rig = Rig(tmp_path, first_request_oom_above_seqs=1)
    guard = rig.start(rig.profile("max-model-len = 8192", extra="first-request = false"))
    rig.wait_ready(guard)
    assert stop(guard)[0] == 143
    record = rig.records()[0]
    assert record["outcome"] == "ready" and record["first_request"] is None


def test_a_stall_after_ready_stops_vllm_with_exit_6(tmp_path: Path) -> None:
    """/health fails N times in a row (not once): stop vLLM, exit 6 so that systemd restarts it."""
    rig = Rig(tmp_path, stall_after_ready_s=1.0)
    guard = rig.start(rig.profile("max-model-len = 8192", extra="health-interval = 0.3\nhealth-failures = 3"))
    rig.wait_ready(guard)
    _, err = guard.communicate(timeout=60)
    assert guard.returncode == 6
    assert "1 of 3 in a row" in err and "3 of 3 in a row" in err and "stalled" in err
    end = rig.records()[-1]
    assert end["phase"] == "serving" and end["outcome"] == "stalled" and "3 times in a row" in end["reason"]
    assert gone_soon(10.0)


def test_health_failures_below_two_is_refused(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    code, _, err = rig.run("--dry-run", rig.profile("max-model-len = 8192", extra="health-failures = 1"))
    assert code == 3 and "health-failures" in err


@pytest.fixture(autouse=True)
def _no_fake_left() -> Iterator[None]:
    yield
    assert not kill_running_guards(), "a guard was still running after the test"
    assert gone_soon(10.0)




# --- [guard.ladder] remember ------------------------------------------------------------------------------


def serve_until_ready(rig: Rig, profile: str, env: dict[str, str] | None = None) -> str:
    """One whole run: start, wait for a new ready record (the log holds the earlier runs too), stop."""
    before = len(rig.records()) if rig.log.exists() else 0
    guard = rig.start(profile, env=env)
    deadline = time.monotonic() + 60
    while not any(r.get("outcome") == "ready" for r in (rig.records()[before:] if rig.log.exists() else [])):
        assert guard.poll() is None and time.monotonic() < deadline, guard.communicate()
        time.sleep(0.1)
    code, err = stop(guard)
    assert code == 143, err
    return err


def test_a_relaxed_start_is_remembered_and_the_next_start_begins_there(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6)  # the guard's facts are optimistic: vLLM needs a shorter length
    env = {"VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    profile = rig.profile("max-model-len = 32768")
    err = serve_until_ready(rig, profile, env)
    first_run = rig.records()
    estimate = first_run[0]["next"]["value"]
    assert len([r for r in first_run if "phase" not in r]) == 2 and "remembered for the next start" in err
    err = serve_until_ready(rig, profile, env)  # a systemd restart
    second_run = [r for r in rig.records()[len(first_run):] if "phase" not in r]
    assert len(second_run) == 1, "the restart failed the same way again first"
    assert second_run[0]["remembered"] == {"max-model-len": estimate}
    assert second_run[0]["changed"] == {"max-model-len": [32768, estimate]}
    assert "STARTING FROM REMEMBERED RELAXATIONS: max-model-len" in err
    # Issue 23: the dry run is "the exact command line": the remembered value, as the real start used.
    dry = subprocess.run([sys.executable, "-m", "vllm_guard", "serve", "--machine", L4_MACHINE, "--dry-run",
                          "--json", profile], env={**rig.env, **env}, capture_output=True, text=True, cwd=tmp_path)
    doc = json.loads(dry.stdout)
    assert doc["remembered"] == {"max-model-len": estimate}, dry.stderr
    at = doc["argv"].index("--max-model-len")
    assert doc["argv"][at + 1] == str(estimate) == second_run[0]["argv"][second_run[0]["argv"].index(
        "--max-model-len") + 1]
    shown = subprocess.run([sys.executable, "-m", "vllm_guard", "serve", "--machine", L4_MACHINE, "--dry-run",
                            profile], env={**rig.env, **env}, capture_output=True, text=True, cwd=tmp_path)
    assert "STARTING FROM REMEMBERED RELAXATIONS" in shown.stdout and f"--max-model-len {estimate}" in shown.stdout


def test_a_changed_profile_starts_as_written_and_forget_drops_what_was_kept(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6)
    env = {"VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    profile = rig.profile("max-model-len = 32768")
    serve_until_ready(rig, profile, env)
    before = len(rig.records())
    changed = rig.profile("max-model-len = 32768\nmax-num-seqs = 128")  # another content hash
    err = serve_until_ready(rig, changed, env)
    assert "REMEMBERED" not in err
    run = [r for r in rig.records()[before:] if "phase" not in r]
    assert run[0]["remembered"] is None and run[0]["failure"]["class"] == "kv_cache_too_small"
    forget = subprocess.run([sys.executable, "-m", "vllm_guard", "attempts", "--forget", changed],
                            env={**rig.env, **env}, capture_output=True, text=True)
    assert forget.returncode == 0 and "forgot the relaxations" in forget.stdout
    before = len(rig.records())
    err = serve_until_ready(rig, changed, env)
    assert "REMEMBERED" not in err and len([r for r in rig.records()[before:] if "phase" not in r]) == 2


def test_remember_can_be_turned_off(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6)
    env = {"VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    profile = rig.profile("max-model-len = 32768", extra="[guard.ladder]\nremember = false")
    serve_until_ready(rig, profile, env)
    assert not (tmp_path / "state" / "remembered").exists()


def test_a_server_already_on_the_port_is_never_taken_for_ours(tmp_path: Path) -> None:
    """Under --machine there is no port check: another server answers at once. Not ready, never READY=1,
    no key sent; the start fails as port_in_use and names the holder (this test's own process)."""
    import os

    address = str(tmp_path / "notify.sock")
    listener = NotifySocket(address)
    rig = Rig(tmp_path, load_s=2)
    foreign = ForeignServer(rig.port)
    try:
        code, _, err = rig.run(rig.profile('max-model-len = 8192\napi-key = "sk-secret-1"'),
                               env={"NOTIFY_SOCKET": address})
    finally:
        foreign.close()
        listener.close()
    assert code == 5, err
    (record,) = rig.records()
    assert record["failure"]["class"] == "port_in_use" and record["first_request"] is None
    assert f"pid {os.getpid()}" in record["failure"]["evidence"][0]
    assert "sk-secret-1" not in " ".join(str(a) for a in foreign.authorizations)
    assert "/v1/models" not in foreign.paths and listener.fields("READY") == []


def test_a_server_that_takes_the_port_during_the_start_is_a_failed_start(tmp_path: Path) -> None:
    """The issue's case: ours has bound the port (not yet listening, loading weights) when another server
    binds it and listens. Its /health answers 200; the guard must see that the socket is not the launch's."""
    bound = tmp_path / "bound"
    rig = Rig(tmp_path, load_s=4, bound_file=str(bound))
    guard = rig.start(rig.profile('max-model-len = 8192\napi-key = "sk-secret-2"'))
    foreign = None
    try:
        deadline = time.monotonic() + 20
        while not bound.exists():
            assert time.monotonic() < deadline and guard.poll() is None, "the fake never bound its port"
            time.sleep(0.05)
        foreign = ForeignServer(rig.port)
        _, err = guard.communicate(timeout=30)
    finally:
        if foreign is not None:
            foreign.close()
    assert guard.returncode == 5, err
    (record,) = rig.records()
    assert record["failure"]["class"] == "port_in_use" and record["outcome"] == "failed"
    assert "no process of this launch listens there" in record["failure"]["evidence"][0]
    assert "sk-secret-2" not in " ".join(str(a) for a in foreign.authorizations if a)
    assert "ready" not in [r["outcome"] for r in rig.records()]


def test_a_trickling_health_neither_blocks_the_start_nor_a_stop(tmp_path: Path) -> None:
    """Issue 28: /health that sends a byte every half second. The start goes on (each look is a miss
    after guard.health-timeout) and a SIGTERM is acted on at once: 143 within seconds."""
    rig = Rig(tmp_path, trickle_health=True)
    guard = rig.start(rig.profile("max-model-len = 8192", "health-timeout = 30\nstartup-timeout = 120"))
    time.sleep(3)  # vLLM is up and its /health trickles; the guard is inside a look at it
    assert guard.poll() is None
    started = time.monotonic()
    code, err = stop(guard)
    assert code == 143, err
    assert time.monotonic() - started < 5 + 5  # the stop itself, within its stop-timeout of 5 s
    assert [r["outcome"] for r in rig.records()] == ["stopped"]
