"""The guard as a pod's entrypoint (issue 25): its own /livez, /startupz, /readyz and /metrics, and the
termination message of a failed exit.

The real guard against the fake vLLM, asked over real HTTP; the state, the endpoint and the termination file
also on their own, with real sockets and files."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port
from tests.test_json_schemas import documented, problems
from tests.test_serve import Rig, gone_soon, kill_running_guards
from vllm_guard import schemas
from vllm_guard.diagnose.markers import STAGE_NAMES
from vllm_guard.launch.notify import Notifier
from vllm_guard.launch.phases import PhaseTracker
from vllm_guard.report import termination
from vllm_guard.report.endpoint import StatusEndpoint
from vllm_guard.report.guardstate import GuardState, ObservedStatus

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and prctl are Linux's")


@pytest.fixture(autouse=True)
def _no_fake_left() -> Iterator[None]:
    yield
    assert not kill_running_guards(), "a guard was still running after the test"
    assert gone_soon(10.0)


def ask(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {f.name: [(s.labels, s.value) for s in f.samples] for f in text_string_to_metric_families(text)}


def wait_for(check, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("never happened")


@linux
def test_a_slow_start_is_told_to_the_kubelet_honestly(tmp_path: Path) -> None:
    rig = Rig(tmp_path, load_s=4.0)
    port = free_port()
    secret = "sk-never-on-the-status-endpoint"
    guard = rig.start("--status-address", f"127.0.0.1:{port}",
                      rig.profile(f'max-model-len = 8192\napi-key = "{secret}"'))
    bodies = []
    try:
        # During the load: alive, starting (attempt 1 of 5, the weights), not ready.
        def loading() -> tuple[int, dict] | None:
            try:
                code, body = ask(port, "/startupz")
            except OSError:
                return None
            doc = json.loads(body)
            return (code, doc) if doc["phase"] == "weight_loading" else None

        code, doc = wait_for(loading)
        assert problems(doc, documented()[schemas.STATUS]) == []
        assert code == 503 and doc["attempt"] == 1 and doc["of"] == 5 and doc["waiting_for"] is None
        assert isinstance(doc["since_s"], float) and doc["since_s"] >= 0
        assert ask(port, "/livez")[0] == 200
        assert ask(port, "/readyz")[0] == 503
        during = metrics(ask(port, "/metrics")[1])
        assert during["vllm_guard_attempt"] == [({}, 1.0)]
        assert during["vllm_guard_startup_phase"] == [({"phase": "weight_loading"}, 1.0)]
        assert during["vllm_guard_ready"] == [({}, 0.0)]
        # Ready: the guard's ready (the first request passed), not vLLM's port alone.
        rig.wait_ready(guard)
        assert wait_for(lambda: ask(port, "/readyz")[0] == 200)
        assert ask(port, "/startupz")[0] == 200 and ask(port, "/livez")[0] == 200
        for path in ("/livez", "/startupz", "/readyz"):
            doc = json.loads(ask(port, path)[1])
            assert problems(doc, documented()[schemas.STATUS]) == [] and doc["state"] == "ready" and doc["ready"]
        after = metrics(ask(port, "/metrics")[1])
        assert after["vllm_guard_attempts"] == [({}, 1.0)]
        assert after["vllm_guard_ready"] == [({}, 1.0)]
        assert after["vllm_guard_time_to_ready_seconds"][0][1] >= 4.0
        shares = dict((labels["phase"], value) for labels, value in after["vllm_guard_startup_phase_seconds"])
        assert shares["weights"] >= 4.0
        assert ask(port, "/nothing")[0] == 404
        bodies = [ask(port, path)[1] for path in ("/livez", "/startupz", "/readyz", "/metrics", "/nothing")]
    finally:
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=30)
    assert guard.returncode == 143, err
    assert bodies and not any(secret in body for body in bodies)
    with pytest.raises(OSError):  # closed with the guard
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


@linux
def test_a_taken_status_port_is_a_usage_error_before_any_start(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = rig.run("--status-address", f"127.0.0.1:{port}", rig.profile("max-model-len = 8192"))
    assert code == 2, err
    assert "status endpoint cannot listen on 127.0.0.1:" in err and "hint:" in err
    assert not rig.log.exists()


def test_a_malformed_status_address_is_a_usage_error(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    code, _, err = rig.run("--status-address", "nowhere", rig.profile("max-model-len = 8192"))
    assert code == 2 and "--status-address" in err and "HOST:PORT" in err
    message = tmp_path / "why"
    code, _, err = rig.run("--status-address", env={"VLLMGUARD_TERMINATION_LOG": str(message)})  # no value
    assert code == 2 and message.read_text().startswith("vllm-guard: exit 2 (usage error")
    code, _, err = rig.run(rig.profile("max-model-len = 8192", extra='status-address = "127.0.0.1:99999"'),
                           env={"VLLMGUARD_TERMINATION_LOG": str(message)})
    assert code == 3 and "status-address" in err
    assert message.read_text().startswith("vllm-guard: exit 3 (profile or machine snapshot invalid): ")
    assert "status-address" in message.read_text()


@linux
def test_an_exhausted_ladder_leaves_the_last_class_and_what_helps(tmp_path: Path) -> None:
    rig = Rig(tmp_path, hang=True)
    message = tmp_path / "why"
    extra = f'startup-timeout = 2\ntermination-log = "{message}"'
    code, _, err = rig.run(rig.profile("max-model-len = 8192", extra=extra))
    assert code == 5, err
    text = message.read_text()
    assert text.startswith("vllm-guard: exit 5 (start failed") and "startup_timeout" in text and "fix: " in text
    assert len(text.encode()) <= 4096


@linux
def test_a_failed_preflight_leaves_a_termination_message_naming_the_check(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    message = tmp_path / "termination-log"
    code, _, err = rig.run(rig.profile("", extra=f'termination-log = "{message}"'))  # 131072 tokens: no fit
    assert code == 4, err
    text = message.read_text()
    assert len(text.encode()) <= 4096
    assert text.startswith("vllm-guard: exit 4 (preflight check failed")
    assert "model.kv_fit" in text and "fix: model.kv_fit:" in text


def test_a_planted_symlink_is_never_followed_and_never_fatal(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "termination-log"
    link.symlink_to(victim)
    note = termination.write("vllm-guard: exit 4\n", str(link), kubelet_path=tmp_path / "absent")
    assert note is not None and "symbolic link" in note
    assert victim.read_text() == "precious\n"
    assert termination.write("x", str(tmp_path / "no" / "dir" / "f"), kubelet_path=tmp_path / "absent") is not None
    hard = tmp_path / "hard"
    os.link(victim, hard)
    note = termination.write("vllm-guard: exit 4\n", str(hard), kubelet_path=tmp_path / "absent")
    assert note is not None and "hard links" in note and victim.read_text() == "precious\n"


def test_the_kubelet_file_comes_first_and_the_message_fits_its_limit(tmp_path: Path) -> None:
    kubelet = tmp_path / "kubelet"
    kubelet.write_text("old text that is longer than the new one\n")
    mine = tmp_path / "mine"
    text = termination.summary(5, "start failed: \x1b[31mkv_cache_too_small", ["x" * 900] * 8)
    assert termination.write(text, str(mine), kubelet_path=kubelet) is None
    written = kubelet.read_bytes()
    assert len(written) <= termination.LIMIT_BYTES and written.endswith(b"...\n")
    assert b"\x1b" not in written and b"exit 5 (start failed" in written
    assert not mine.exists()


class _Quiet:
    """A live status that shows nothing (the real one writes to the terminal)."""

    def relay(self, raw: bytes, stream: str) -> None: ...
    def progress(self, text: str) -> None: ...
    def message(self, text: str, style: str = "bold") -> None: ...
    def attempt_started(self, label: str) -> None: ...
    def phase(self, text: str, *, heartbeat: bool = False) -> None: ...
    def ready(self, *args: object, **kwargs: object) -> None: ...
    def attempts_table(self, history: list[object], *, exhausted: bool) -> None: ...
    def close(self) -> None: ...


def test_every_stage_the_phase_tracker_names_is_read_back_as_its_key() -> None:
    state = GuardState(of=3)
    observed = ObservedStatus(_Quiet(), state)  # type: ignore[arg-type]
    label = "attempt 2/3: max-model-len 4096 (relaxed from 8192)"
    observed.attempt_started("attempt 1/3")
    observed.attempt_started(label)
    tracker = PhaseTracker(observed, Notifier({}), label, time.monotonic)
    for stage in STAGE_NAMES:
        tracker.stage = stage
        tracker.heartbeat()
        assert state.view().phase == stage
    observed.phase("waiting for GPU 0's launch lock, held by p.toml on h for 1m02s", heartbeat=True)
    assert state.view().waiting_for == "GPU 0's launch lock, held by p.toml on h"
    observed.relay(b"INFO a line of vLLM's\n", "stdout")
    assert state.view().waiting_for is None and state.view().attempt == 2


def test_a_client_that_never_sends_does_not_stop_the_endpoint() -> None:
    state = GuardState(of=5)
    endpoint = StatusEndpoint(state, "127.0.0.1", 0)
    try:
        with socket.create_connection(("127.0.0.1", endpoint.port), timeout=5):  # says nothing
            code, body = ask(endpoint.port, "/startupz")
            assert code == 503 and json.loads(body)["attempt"] is None
            state.change(stage="gave_up")
            assert ask(endpoint.port, "/startupz")[0] == 500
    finally:
        endpoint.close()



@linux
def test_a_stop_waits_for_vllms_drain_beyond_stop_timeout(tmp_path: Path) -> None:
    """--shutdown-timeout 3 with stop-timeout 1: one SIGTERM, /readyz 503 at once, and the drain ends on its own
    (exit 0), no SIGKILL."""
    rig = Rig(tmp_path)
    port = free_port()
    guard = rig.start("--status-address", f"127.0.0.1:{port}",
                      rig.profile("max-model-len = 8192\nshutdown-timeout = 3", stop_timeout=1))
    rig.wait_ready(guard)
    assert wait_for(lambda: ask(port, "/readyz")[0] == 200)
    guard.send_signal(signal.SIGTERM)
    # While vLLM drains: no new traffic (/readyz 503), and the guard is alive.
    code, body = wait_for(lambda: (got := ask(port, "/readyz"))[0] == 503 and got, timeout=2.5)
    assert code == 503 and json.loads(body)["stopping"] is True
    assert ask(port, "/livez")[0] == 200 and guard.poll() is None
    _, err = guard.communicate(timeout=60)
    assert guard.returncode == 143, err
    assert "SIGKILL after 8s" in err  # 3 s of drain plus the margin, not the 1 s stop-timeout
    end = rig.records()[-1]
    assert end["phase"] == "serving" and end["outcome"] == "stopped" and end["exit"] == 0, end


@linux
def test_a_start_waiting_for_a_launch_lock_is_alive_and_says_what_it_waits_for(tmp_path: Path) -> None:
    from vllm_guard.launch.lock import GpuLocks

    rig = Rig(tmp_path)
    port = free_port()
    held = GpuLocks(tmp_path / "locks", ["GPU-00000000-example-nvidia-l4"], {"profile": "other.toml", "host": "h"})
    assert held.acquire(on_wait=lambda uuid, who: None)
    guard = rig.start("--status-address", f"127.0.0.1:{port}", rig.profile("max-model-len = 8192"))
    try:
        def waiting() -> dict | None:
            try:
                doc = json.loads(ask(port, "/startupz")[1])
            except OSError:
                return None
            return doc if doc["waiting_for"] else None

        doc = wait_for(waiting)
        assert problems(doc, documented()[schemas.STATUS]) == []
        assert doc["attempt"] == 1 and "launch lock" in doc["waiting_for"] and doc["phase"] is None
        assert ask(port, "/livez")[0] == 200 and ask(port, "/startupz")[0] == 503 and ask(port, "/readyz")[0] == 503
        held.release()
        rig.wait_ready(guard)
        assert wait_for(lambda: ask(port, "/readyz")[0] == 200)
        assert json.loads(ask(port, "/startupz")[1])["waiting_for"] is None
    finally:
        held.release()
        guard.send_signal(signal.SIGTERM)
        guard.communicate(timeout=30)
    assert guard.returncode == 143


@linux
def test_readyz_follows_the_looks_at_health_after_ready(tmp_path: Path) -> None:
    """A stall after ready: /readyz 503 at the first failed look (traffic elsewhere), the guard still alive; then
    exit 6 with its termination message."""
    rig = Rig(tmp_path, stall_after_ready_s=4.0)
    port = free_port()
    message = tmp_path / "why"
    extra = f'health-interval = 0.3\nhealth-failures = 12\ntermination-log = "{message}"'
    guard = rig.start("--status-address", f"127.0.0.1:{port}", rig.profile("max-model-len = 8192", extra=extra))
    rig.wait_ready(guard)
    assert ask(port, "/readyz")[0] == 200
    assert wait_for(lambda: ask(port, "/readyz")[0] == 503)
    assert ask(port, "/livez")[0] == 200 and ask(port, "/startupz")[0] == 200
    _, err = guard.communicate(timeout=60)
    assert guard.returncode == 6, err
    assert message.read_text().startswith("vllm-guard: exit 6 (vLLM exited after it was ready")


def test_status_addresses_are_host_and_port() -> None:
    from vllm_guard.options.values import ValueProblem
    from vllm_guard.profile.settings import parse_address

    assert parse_address("0.0.0.0:9090") == ("0.0.0.0", 9090)
    assert parse_address("[::]:9090") == ("::", 9090)
    assert parse_address("guard.local:1") == ("guard.local", 1)
    for bad in ("9090", ":9090", "host:0", "host:65536", "host:port", "a b:80", "x" * 300 + ":80", 9090):
        with pytest.raises(ValueProblem):
            parse_address(bad)
