"""`vllm-guard serve` end to end: the real guard, the fake vLLM, real processes, signals, sockets and files."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import MACHINES, ROOT, free_port, wait_healthy

FAKE = ROOT / "tests" / "fake_vllm.py"
L4 = str(MACHINES / "l4-24gb.json")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and prctl are Linux's")


STARTED: list[subprocess.Popen[str]] = []  # every guard a test started, stopped by the fixture if still running


class Rig:
    """One test's world: a simulated GPU, the fake vLLM on a wrapper script, the guard's dirs."""

    def __init__(self, tmp: Path, **gpu: object) -> None:
        self.tmp = tmp
        self.gpu = tmp / "gpu.json"
        self.gpu.write_text(json.dumps({"total_gib": 22.49, "weights_gib": 14.99, "load_s": 0.1, **gpu}))
        self.vllm = tmp / "bin" / "vllm"
        self.vllm.parent.mkdir()
        self.vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
        self.vllm.chmod(0o755)
        self.port = free_port()
        self.log = tmp / "state" / "attempts.jsonl"
        self.env = {
            "PATH": f"{self.vllm.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp),
            "HF_HUB_OFFLINE": "1", "FAKE_VLLM_GPU": str(self.gpu), "VLLMGUARD_ATTEMPT_LOG": str(self.log),
            "VLLMGUARD_LOCK_DIR": str(tmp / "locks"), "PYTHONPATH": str(ROOT),
        }

    def profile(self, vllm: str = "", extra: str = "", model: str = "meta-llama/Llama-3.1-8B-Instruct",
                stop_timeout: float = 5) -> str:
        path = self.tmp / "p.toml"
        path.write_text(f'[model]\nid = "{model}"\n[vllm]\nport = {self.port}\nhost = "127.0.0.1"\n{vllm}\n'
                        f"[guard]\nstop-timeout = {stop_timeout}\n{extra}\n")
        return str(path)

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", L4, *args],
                                 env={**self.env, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=self.tmp)
        STARTED.append(guard)
        return guard

    def run(self, *args: str, timeout: float = 60, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        p = self.start(*args, env=env)
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err

    def wait_ready(self, guard: subprocess.Popen[str], timeout: float = 30) -> None:
        """Until the guard itself has declared vLLM ready (its attempt log says so) and /health answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert guard.poll() is None, guard.communicate()
            if self.log.exists() and any(r["outcome"] == "ready" for r in self.records()):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    assert r.status == 200
                return
            time.sleep(0.1)
        raise AssertionError("vLLM never became ready")

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def fake_processes() -> list[int]:
    """Every process of the fake vLLM still alive (API server, EngineCore, TP workers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            # Only the fake's: a real vLLM of the real-vLLM tier (VLLM::EngineCore too) is not this test's.
            if b"fake_vllm" in cmd and state != "Z":
                found.append(int(proc.name))
    return found


def gone_soon(timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not fake_processes():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(autouse=True)
def no_leftovers():
    assert gone_soon(), f"processes left by an earlier test: {fake_processes()}"
    yield
    assert not kill_running_guards(), "a guard was still running after the test"
    assert gone_soon(), f"processes left behind: {fake_processes()}"


def kill_running_guards() -> list[subprocess.Popen[str]]:
    """Guards a test started and did not stop (it failed first); the keeper then stops their vLLM."""
    running = [g for g in STARTED if g.poll() is None]
    for guard in running:
        guard.kill()
        guard.wait()
    STARTED.clear()
    return running


def test_a_start_that_fits_then_a_clean_stop(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    rig.wait_ready(guard)
    assert len(fake_processes()) >= 2  # the API server and its VLLM::EngineCore
    guard.send_signal(signal.SIGTERM)
    out, err = guard.communicate(timeout=30)
    assert guard.returncode == 143, err
    assert "Application startup complete." in out  # vLLM's own lines, relayed unchanged
    (ready, stopped) = rig.records()
    assert (ready["attempt"], ready["outcome"], ready["changed"]) == (1, "ready", {})
    assert ready["schema"] == "vllm-guard.attempt/1" and ready["preflight"] == "pass"
    assert ready["reported"]["kv_cache_tokens"] > 8192 and ready["reported"]["model_loading_gib"] == 14.99
    assert (stopped["outcome"], stopped["phase"], stopped["signal"]) == ("stopped", "serving", 15)


def test_kv_misfit_then_exactly_vllms_estimate(tmp_path: Path) -> None:
    # The real checkpoint is bigger than the guard's facts say: preflight passes, vLLM does not fit.
    rig = Rig(tmp_path, weights_gib=16.6)
    guard = rig.start(rig.profile("max-model-len = 32768"))
    rig.wait_ready(guard)
    guard.send_signal(signal.SIGINT)
    _, err = guard.communicate(timeout=30)
    assert guard.returncode == 130
    first, second, _ = rig.records()
    assert first["failure"]["class"] == "kv_cache_too_small"
    estimate = first["failure"]["numbers"]["estimated_max_len"]
    assert first["next"] == {"param": "max-model-len", "value": estimate, "reason": first["next"]["reason"]}
    assert second["outcome"] == "ready" and second["changed"] == {"max-model-len": [32768, estimate]}
    assert f"--max-model-len {estimate}" in " ".join(second["argv"])
    assert "RELAXED START" in err and f"max-model-len = {estimate}" in err


def test_misfit_without_an_estimate_converges_by_computation(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6, wording="v1_old")
    guard = rig.start(rig.profile("max-model-len = 32768"))
    rig.wait_ready(guard)
    guard.terminate()
    guard.communicate(timeout=30)
    records = [r for r in rig.records() if r.get("phase") != "serving"]
    assert records[0]["failure"]["class"] == "kv_cache_too_small"
    assert "estimated_max_len" not in records[0]["failure"]["numbers"]
    assert records[-1]["outcome"] == "ready" and 2 <= len(records) <= 3


def test_gpu_busy_lowers_utilization(tmp_path: Path) -> None:
    others = tmp_path / "others"
    others.write_text("6")
    rig = Rig(tmp_path, weights_gib=1.2, others_file=str(others))
    guard = rig.start(rig.profile("max-model-len = 8192", model="Qwen/Qwen3-0.6B"))
    rig.wait_ready(guard)
    guard.terminate()
    guard.communicate(timeout=30)
    first, second, _ = rig.records()
    assert first["failure"]["class"] == "gpu_busy"
    assert second["changed"] == {"gpu-memory-utilization": [0.92, 0.71]}  # (16.49 - 0.5) / 22.49


def test_gpu_busy_with_lowering_forbidden_waits_for_the_gpu(tmp_path: Path) -> None:
    others = tmp_path / "others"
    others.write_text("6")
    rig = Rig(tmp_path, weights_gib=1.2, others_file=str(others))
    threading.Timer(2.0, others.unlink).start()  # the other job finishes
    guard = rig.start(rig.profile("max-model-len = 8192", model="Qwen/Qwen3-0.6B",
                                  extra="[guard.ladder]\nallow-lower-utilization = false\ngpu-poll-interval = 0.5\n"
                                        "max-attempts = 20"))
    rig.wait_ready(guard)
    guard.terminate()
    _, err = guard.communicate(timeout=30)
    records = [r for r in rig.records() if r.get("phase") != "serving"]
    assert records[0]["failure"]["class"] == "gpu_busy" and records[0]["next"]["wait_for_gpu"]
    assert all(r["changed"] == {} for r in records)  # retried unchanged
    assert records[-1]["outcome"] == "ready" and "waiting up to" in err


def test_cuda_graph_oom_then_enforce_eager(tmp_path: Path) -> None:
    rig = Rig(tmp_path, graph_oom_unless_eager=True)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    rig.wait_ready(guard)
    guard.terminate()
    guard.communicate(timeout=30)
    first, second, _ = rig.records()
    assert (first["failure"]["class"], first["failure"]["stage"]) == ("oom_cudagraph", "cuda_graph")
    assert second["changed"] == {"enforce-eager": [False, True]} and "--enforce-eager" in second["argv"]


def test_port_in_use_is_not_retried(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", rig.port))
        holder.listen()
        code, _, err = rig.run(rig.profile("max-model-len = 8192"))
    assert code == 5
    (record,) = rig.records()
    assert record["failure"]["class"] == "port_in_use" and "stop" in record["next"]
    assert "another --port" in err


def test_tensor_parallel_indivisible_is_not_retried(tmp_path: Path) -> None:
    rig = Rig(tmp_path, heads=32)
    code, _, err = rig.run("--force", rig.profile("max-model-len = 8192\ntensor-parallel-size = 3"))
    assert code == 5
    (record,) = rig.records()
    assert record["failure"]["class"] == "tp_indivisible" and record["preflight"] == "forced"
    assert "tensor-parallel-size that divides" in err


def test_ladder_exhausted_at_the_floors(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6)
    code, _, err = rig.run(rig.profile("max-model-len = 32768", extra="[guard.ladder]\nmin-max-model-len = 30000\n"
                                                                     "allow-fp8-kv-cache = false\n"
                                                                     "max-gpu-memory-utilization = 0.92"))
    assert code == 5
    records = rig.records()
    assert records[-1]["failure"]["class"] == "kv_cache_too_small" and "stop" in records[-1]["next"]
    assert "start failed" in err and "kv_cache_too_small" in err and "what helps" in err


def test_max_attempts_exhausted(tmp_path: Path) -> None:
    rig = Rig(tmp_path, graph_oom_unless_eager=True)
    code, _, err = rig.run(rig.profile("max-model-len = 8192", extra="[guard.ladder]\nmax-attempts = 1"))
    assert code == 5 and "every start failed" in err
    assert len(rig.records()) == 1


def subtree(root: int) -> list[int]:
    """Every process below ``root`` (a guard), from /proc."""
    parents: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(proc.name))
    out, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def wait_for_engine(guard: subprocess.Popen[str], timeout: float = 20) -> None:
    """Until this guard's vLLM has started its EngineCore (other tests' processes do not count)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in subtree(guard.pid):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"VLLM::EngineCore"):
                    return
        assert guard.poll() is None, guard.communicate()
        time.sleep(0.1)
    raise AssertionError("no EngineCore started")


@pytest.mark.parametrize("hostile", [False, True], ids=["vllm", "hostile-children"])
@pytest.mark.parametrize("when", ["starting", "serving"])
def test_sigkill_of_the_guard_leaves_nothing(tmp_path: Path, when: str, hostile: bool) -> None:
    """The keeper outlives the guard and stops the whole launch: an API server that ignores SIGTERM (as the
    real one does while it starts, and this one always), descendants that left the group by setsid()."""
    rig = Rig(tmp_path, load_s=5.0 if when == "starting" else 0.1, escapees=hostile, ignore_sigterm=hostile)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=30))
    if when == "serving":
        rig.wait_ready(guard)
    else:
        wait_for_engine(guard)
    assert len(fake_processes()) >= 2
    guard.kill()
    guard.communicate()
    assert gone_soon(10.0), fake_processes()


def test_sigterm_during_startup_ends_quickly_and_says_so(tmp_path: Path) -> None:
    """vLLM ignores SIGTERM until it serves: the guard kills it once its engine is gone, not after the grace."""
    rig = Rig(tmp_path, load_s=30.0)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=60))
    wait_for_engine(guard)
    started = time.monotonic()
    guard.send_signal(signal.SIGTERM)
    _out, err = guard.communicate(timeout=60)
    assert guard.returncode == 143
    assert time.monotonic() - started < 15, "waited for the 60 s grace"
    assert "stopping vLLM during start-up" in err
    assert "API server ignores SIGTERM until it is ready" in err
    assert rig.records()[-1]["outcome"] == "stopped"


def test_a_vllm_deaf_to_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    rig = Rig(tmp_path, ignore_sigterm=True)
    guard = rig.start(rig.profile("max-model-len = 8192", stop_timeout=2))
    rig.wait_ready(guard)
    guard.send_signal(signal.SIGTERM)
    _out, err = guard.communicate(timeout=30)
    assert guard.returncode == 143
    assert "still running after the 2s grace" in err


def test_a_huge_unterminated_line_and_progress_bars_are_relayed_unchanged(tmp_path: Path) -> None:
    """Bytes out equal bytes in: a 48 MiB line is relayed in pieces, a carriage-return bar as it came."""
    rig = Rig(tmp_path, unterminated_mib=48, progress_bar=0.05)
    with (tmp_path / "out").open("w") as out_file, (tmp_path / "err").open("w") as err_file:
        guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", "--machine", L4,
                                  rig.profile("max-model-len = 8192")], env=rig.env, stdout=out_file,
                                 stderr=err_file, text=True, cwd=tmp_path)
        try:
            rig.wait_ready(guard, timeout=60)
        finally:
            guard.terminate()
            assert guard.wait(60) == 143
    out, err = ((tmp_path / name).read_bytes().decode() for name in ("out", "err"))  # keep the \r
    assert "y" * 2**20 * 48 + "\n" in out
    bar = "".join(f"\rLoading safetensors checkpoint shards: {i:3d}% Completed | {i // 25}/4"
                  for i in range(0, 101, 25))
    assert bar + "\n" in err


def can_lower_oom_score() -> bool:
    return subprocess.run(["sh", "-c", "echo -1 > /proc/self/oom_score_adj"], capture_output=True).returncode == 0


@pytest.mark.skipif(not can_lower_oom_score(), reason="lowering oom_score_adj needs CAP_SYS_RESOURCE, which this "
                    "machine does not grant (containers often drop it)")
def test_the_oom_killer_picks_vllm_or_the_guard_never_the_keeper(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    try:
        rig.wait_ready(guard)
        scores = {pid: Path(f"/proc/{pid}/oom_score_adj").read_text().strip() for pid in subtree(guard.pid)}
        names = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in scores}
    finally:
        guard.terminate()
        assert guard.wait(30) == 143
    keeper = [pid for pid, cmd in names.items() if b"vllm-guard-keeper" in cmd]
    assert len(keeper) == 1 and scores[keeper[0]] == "-1000", scores
    own = Path("/proc/self/oom_score_adj").read_text().strip()
    assert all(score == own for pid, score in scores.items() if pid != keeper[0]), scores  # vLLM keeps its own


def test_a_killed_keeper_still_leaves_nothing(tmp_path: Path) -> None:
    """Should the keeper itself die, vLLM is re-parented to the guard (a subreaper too), which stops it."""
    rig = Rig(tmp_path)
    guard = rig.start(rig.profile("max-model-len = 8192"))
    rig.wait_ready(guard)
    keepers = [pid for pid in subtree(guard.pid) if b"vllm-guard-keeper" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(keepers) == 1
    os.kill(keepers[0], signal.SIGKILL)
    guard.communicate(timeout=60)
    assert guard.returncode == 6
    assert gone_soon(10.0), fake_processes()


def test_two_guards_on_one_gpu_take_turns(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = Rig(tmp_path / "a", weights_gib=1.2), Rig(tmp_path / "b", weights_gib=1.2)
    shared = {"VLLMGUARD_LOCK_DIR": str(tmp_path / "locks"), "FAKE_VLLM_GPU": str(a.gpu)}
    a.gpu.write_text(json.dumps({"total_gib": 22.49, "weights_gib": 1.2, "load_s": 3.0}))
    conf = "max-model-len = 8192\ngpu-memory-utilization = 0.45"
    guard_a = a.start(a.profile(conf, model="Qwen/Qwen3-0.6B"), env=shared)
    deadline = time.monotonic() + 20  # B starts once A holds the GPU's launch lock
    while not any(f'"pid": {guard_a.pid}' in p.read_text() for p in (tmp_path / "locks").glob("*.lock")):
        assert time.monotonic() < deadline and guard_a.poll() is None
        time.sleep(0.05)
    guard_b = b.start(b.profile(conf, model="Qwen/Qwen3-0.6B"), env=shared)
    a.wait_ready(guard_a)
    b.wait_ready(guard_b)
    for g in (guard_a, guard_b):
        g.terminate()
    _, err_b = guard_b.communicate(timeout=30)
    guard_a.communicate(timeout=30)
    assert f"held by pid {guard_a.pid}" in err_b
    ready_a = a.records()[0]
    first_b = b.records()[0]
    assert ready_a["outcome"] == "ready" and first_b["outcome"] == "ready"
    assert first_b["started_at"] >= ready_a["ended_at"]  # B started only once A was ready


def test_secrets_never_in_the_log_or_output(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    guard = rig.start(rig.profile("max-model-len = 8192\napi-key = \"sk-guard-test-secret\""),
                      env={"HF_TOKEN": "hf_guard_test_secret"})
    rig.wait_ready(guard)
    guard.terminate()
    _out, err = guard.communicate(timeout=30)
    log = rig.log.read_text()
    for secret in ("sk-guard-test-secret", "hf_guard_test_secret"):
        assert secret not in log and secret not in err
    assert "--api-key" not in log  # the key reaches vLLM as VLLM_API_KEY, never on its command line


def test_crash_after_ready_exits_6_and_is_recorded(tmp_path: Path) -> None:
    rig = Rig(tmp_path, crash_after_ready_s=1.0)
    code, _, err = rig.run(rig.profile("max-model-len = 8192"))
    assert code == 6, err
    ready, ended = rig.records()
    assert ready["outcome"] == "ready" and (ended["outcome"], ended["phase"]) == ("exited", "serving")
    # The ready line says where, the exit says what vLLM last said and where the diagnosis is.
    assert re.search(r"vLLM is ready on http://127\.0\.0\.1:\d+ after 1 attempt\(s\), [\d.]+ s", err), err
    assert "vllm-guard explain --unit UNIT" in err


def test_startup_timeout_retries_once_then_stops(tmp_path: Path) -> None:
    rig = Rig(tmp_path, hang=True)
    code, _, _ = rig.run(rig.profile("max-model-len = 8192", extra="startup-timeout = 2"))
    assert code == 5
    records = rig.records()
    assert [r["failure"]["class"] for r in records] == ["startup_timeout", "startup_timeout"]
    assert records[0]["next"]["param"] is None and "stop" in records[1]["next"]


def test_preflight_failure_stops_before_launch(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    code, _, err = rig.run(rig.profile(""))  # 131072 tokens do not fit a 24 GB card
    assert code == 4 and "model.kv_fit" in err
    assert not rig.log.exists() and not fake_processes()


def test_attempts_command_shows_history_and_skips_a_torn_line(tmp_path: Path) -> None:
    rig = Rig(tmp_path, weights_gib=16.6)
    guard = rig.start(rig.profile("max-model-len = 32768"))
    rig.wait_ready(guard)
    guard.terminate()
    guard.communicate(timeout=30)
    with rig.log.open("a") as f:
        f.write('{"schema": "vllm-guard.attempt/1", "attempt": 9, "outco')  # power loss mid-write
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "attempts", str(rig.log)], env=rig.env,
                       capture_output=True, text=True)
    assert r.returncode == 0
    assert "kv_cache_too_small" in r.stdout and "ready" in r.stdout
    assert "skipped a partly written line" in r.stderr


def test_exec_mode_replaces_the_guard_by_vllm(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    guard = rig.start("--exec", rig.profile("max-model-len = 8192"))

    def alive() -> None:
        assert guard.poll() is None, guard.communicate()

    wait_healthy(rig.port, alive, 30)
    # The same process is now vLLM itself: no supervisor, no ladder, no attempt log.
    assert b"fake_vllm.py" in Path(f"/proc/{guard.pid}/cmdline").read_bytes()
    guard.send_signal(signal.SIGTERM)
    _, err = guard.communicate(timeout=30)
    assert guard.returncode == 0 and "vllm-guard: exec vllm serve" in err
    assert not rig.log.exists()


def test_exec_mode_under_a_notify_socket_is_refused(tmp_path: Path) -> None:
    """Issue 23: exec never sends READY=1 (vLLM does not speak sd_notify): a Type=notify unit killed it after
    TimeoutStartSec and restarted it, and nothing said why. Now it is refused, with what to do instead."""
    rig = Rig(tmp_path)
    code, _, err = rig.run("--exec", rig.profile("max-model-len = 8192"),
                           env={"NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
    assert code == 2 and "vLLM never sends READY=1" in err and "Type=exec" in err
    assert not rig.log.exists()
