"""`vllm-guard ps`: every vLLM on the host, which guard started it, orphans flagged (issue 14).

Real processes: a real guard in front of the fake vLLM, an engine orphaned under a
container-style init, `vllm serve` and `vllm preload` started without a guard; and the
pure join of registry, process table and NVML as tables of cases.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_gpus_auto import two_a100
from tests.test_serve import L4, Rig, no_leftovers  # noqa: F401 (the fixture checks for leftover processes)
from vllm_guard.facts.machine import HostProcess
from vllm_guard.probes import load_machine
from vllm_guard.proctitles import vllm_command
from vllm_guard.state import registry
from vllm_guard.state.instances import find_instances, from_snapshot

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def ps(lock_dir: Path, *args: str) -> dict:
    env = {**os.environ, "VLLMGUARD_LOCK_DIR": str(lock_dir), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "vllm_guard", "ps", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "vllm-guard.ps/1"
    return doc


def mine(doc: dict, pids: set[int]) -> list[dict]:
    """The instances of this test (other vLLMs may run on the machine)."""
    return [i for i in doc["instances"] if set(i["pids"]) & pids or i["guard_pid"] in pids]


def tree(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A live process of this user, standing in for a vLLM (ps sees processes, not what they do)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that has exited: a guard that is gone."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- real processes -------------------------------------------------------------------------------------


def test_a_guard_started_vllm_is_listed_with_its_state(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    profile = rig.profile("max-model-len = 4096")
    guard = rig.start(profile)
    try:
        rig.wait_ready(guard)
        doc = ps(tmp_path / "locks")
        found = [i for i in doc["instances"] if i["guard_pid"] == guard.pid]
        assert len(found) == 1, doc
        inst = found[0]
        assert inst["kind"] == "guard" and inst["state"] == "ready"
        assert inst["profile"] == profile and inst["port"] == rig.port and inst["gpus"] == [0]
        assert inst["pid"] in tree(guard.pid) and len(inst["pids"]) >= 3  # keeper, API server, EngineCore
        text = subprocess.run([sys.executable, "-m", "vllm_guard", "ps"], capture_output=True, text=True,
                              env={**rig.env}, timeout=60).stdout
        assert str(guard.pid) in text and "ready" in text
    finally:
        guard.send_signal(signal.SIGTERM)
        guard.communicate(timeout=30)
    # The guard removed its entry on the way out.
    assert not list((tmp_path / "locks").glob("instance-*.json"))


ORPHAN_MAKER = r"""
import ctypes, os, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)      # PR_SET_CHILD_SUBREAPER, as a container's init is
libc.prctl(15, b"tini", 0, 0, 0)  # PR_SET_NAME: the name of Docker's --init
if os.fork() == 0:               # the `vllm serve` that starts an engine, then is killed
    subprocess.Popen(["VLLM::EngineCore", "-c", "import time; time.sleep(60)"], executable=sys.executable)
    os._exit(0)
print("ready", flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)
"""


@pytest.fixture
def orphan() -> Iterator[int]:
    """A VLLM::EngineCore whose API server is gone, re-parented to a container-style init ("tini")."""
    init = subprocess.Popen([sys.executable, "-c", ORPHAN_MAKER], stdout=subprocess.PIPE, text=True)
    assert init.stdout is not None and init.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    engine = None
    while engine is None and time.monotonic() < deadline:
        engine = next((p for p in tree(init.pid) - {init.pid}
                       if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"VLLM::EngineCore")), None)
        time.sleep(0.05)
    assert engine is not None
    yield engine
    for p in tree(init.pid):
        os.kill(p, signal.SIGKILL)
    init.wait(10)


def test_an_orphaned_engine_is_flagged(tmp_path: Path, orphan: int) -> None:
    doc = ps(tmp_path / "locks")
    found = mine(doc, {orphan})
    assert len(found) == 1, doc
    assert found[0]["state"] == "orphaned" and found[0]["pid"] == orphan
    assert "whose `vllm serve` is gone" in found[0]["note"] and f"kill {orphan}" in found[0]["note"]


def vllm_script(tmp: Path) -> Path:
    """A `vllm` executable that only sleeps: what `ps` sees of a vLLM started by hand is its command line."""
    path = tmp / "bin" / "vllm"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    path.chmod(0o755)
    return path


def test_vllm_started_without_a_guard_and_the_preload_daemon(tmp_path: Path) -> None:
    vllm = vllm_script(tmp_path)
    serve = subprocess.Popen([str(vllm), "serve", "Qwen/Qwen3-8B", "--port", "8123"])
    preload = subprocess.Popen([str(vllm), "preload", "--model", "Qwen/Qwen3-8B"])
    try:
        time.sleep(0.3)
        doc = ps(tmp_path / "locks")
        by_pid = {i["pid"]: i for i in mine(doc, {serve.pid, preload.pid})}
        assert by_pid[serve.pid]["kind"] == "vllm" and by_pid[serve.pid]["state"] == "running"
        assert by_pid[serve.pid]["model"] == "Qwen/Qwen3-8B" and by_pid[serve.pid]["port"] == 8123
        assert by_pid[serve.pid]["note"].startswith("not started by a guard")
        assert str(tmp_path / "locks") in by_pid[serve.pid]["note"]  # where ps looked
        assert by_pid[preload.pid]["kind"] == "preload" and by_pid[preload.pid]["state"] == "running"
        assert "weight daemon" in by_pid[preload.pid]["note"]
    finally:
        for p in (serve, preload):
            p.kill()
            p.wait()


def test_ps_looks_where_it_is_told(tmp_path: Path, sleeper: int, dead_pid: int) -> None:
    """--lock-dir wins over VLLMGUARD_LOCK_DIR: a guard whose profile sets guard.lock-dir registers there."""
    custom = tmp_path / "custom"
    custom.mkdir(mode=0o700)
    assert registry.write_entry(registry.path_for(custom, dead_pid), entry(dead_pid, vllm_pid=sleeper)) is None
    assert mine(ps(tmp_path / "elsewhere"), {sleeper}) == []
    doc = ps(tmp_path / "elsewhere", "--lock-dir", str(custom))
    assert [i["state"] for i in mine(doc, {sleeper})] == ["orphaned"] and str(custom) in doc["source"]


def test_a_stale_entry_is_ignored_and_cleaned(tmp_path: Path, dead_pid: int) -> None:
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    assert registry.write_entry(registry.path_for(locks, dead_pid), entry(dead_pid, vllm_pid=None)) is None
    doc = ps(locks)
    assert not [i for i in doc["instances"] if i["guard_pid"] == dead_pid]
    assert not registry.path_for(locks, dead_pid).exists()


def test_a_vllm_whose_guard_died_is_orphaned_by_its_entry(tmp_path: Path, sleeper: int, dead_pid: int) -> None:
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    assert registry.write_entry(registry.path_for(locks, dead_pid),
                                entry(dead_pid, guard_started=None, attempt=2, gpus=(1,), vllm_pid=sleeper)) is None
    found = mine(ps(locks), {sleeper})
    assert len(found) == 1 and found[0]["state"] == "orphaned" and found[0]["gpus"] == [1]
    assert f"its guard (pid {dead_pid}) is gone" in found[0]["note"]
    assert registry.path_for(locks, dead_pid).exists()  # kept while its vLLM lives


def test_ps_under_a_snapshot_lists_its_vllm_processes(tmp_path: Path) -> None:
    doc = json.loads(two_a100(tmp_path).read_text())
    doc["gpus"][1]["processes"] = [{"pid": 777, "name": "VLLM::EngineCore", "user": "bob",
                                    "used_memory_bytes": 70 * GIB, "orphaned_vllm": True}]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    out = ps(tmp_path / "locks", "--machine", str(tmp_path / "m.json"))
    assert [(i["pid"], i["state"], i["gpus"], i["gpu_memory_bytes"]) for i in out["instances"]] == \
        [(777, "orphaned", [1], 70 * GIB)]
    assert from_snapshot(load_machine(Path(L4))) == []


def test_ps_without_gpu_or_vllm_exits_0(tmp_path: Path) -> None:
    doc = ps(tmp_path / "locks")
    assert isinstance(doc["instances"], list)  # whatever else runs here; this machine may have no GPU
    if not Path("/dev/nvidia0").exists():
        assert any("no GPU" in n for n in doc["notes"])


# --- the join, as tables ----------------------------------------------------------------------------------


def proc(pid: int, ppid: int, title: str, argv: tuple[str, ...] = (), uid: int = 1000,
         started: float = 100.0) -> HostProcess:
    return HostProcess(pid, ppid, title, argv or (title,), uid, "alice", started)


HOST = [
    proc(1, 0, "systemd"),
    proc(50, 1, "python3", ("/usr/bin/python3", "/opt/venv/bin/vllm-guard", "serve", "p.toml")),  # a guard
    proc(51, 50, "python3", ("/usr/bin/python3", "-c", "... from vllm_guard.launch.keeper import main ...")),  # keeper
    proc(52, 51, "python3", ("/usr/bin/python3", "/opt/venv/bin/vllm", "serve", "m")),
    proc(53, 52, "VLLM::EngineCore"),
    proc(60, 1, "VLLM::EngineCore"),  # orphaned under init
    proc(70, 1, "python3", ("python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "x", "--port", "9")),
    proc(71, 70, "VLLM::EngineCore"),
    proc(80, 1, "python3", ("python3", "my_app.py")),  # vLLM in-process: its engine is not an orphan
    proc(81, 80, "VLLM::EngineCore"),
]


def entry(pid: int, **kw: object) -> registry.Entry:
    base = dict(guard_pid=pid, guard_started=100.0, profile="p.toml", model="m", state="ready",
                since="2026-11-30T00:00:00+00:00", attempt=1, gpus=(0,), port=8000, vllm_pid=52, owner_uid=1000)
    return registry.Entry(**{**base, **kw})  # type: ignore[arg-type]


def kinds(found: list) -> list[tuple]:
    return [(i.kind, i.state, i.pid, i.guard_pid) for i in found]


def test_join_guard_orphan_handstarted_inprocess() -> None:
    f = find_instances(HOST, [entry(50)], {53: [(0, 20 * GIB)], 60: [(1, 30 * GIB)]})
    assert kinds(f.instances) == [("guard", "ready", 52, 50), ("vllm", "orphaned", 60, None),
                                  ("vllm", "running", 70, None), ("vllm", "running", 81, None)]
    assert f.instances[0].gpu_memory_bytes == 20 * GIB and f.instances[1].gpu_memory_bytes == 30 * GIB
    assert f.instances[2].port == 9 and f.instances[2].model == "x"
    assert f.instances[3].note == "started by python3 (pid 80)"
    assert f.stale == []


def test_a_guard_registered_elsewhere_is_named_with_where_ps_looked() -> None:
    """Issue 23: a guard-started vLLM was "not started by a guard" when the guard registered in another dir."""
    f = find_instances(HOST, [], {}, looked_in="/run/lock/vllm-guard")
    served = next(i for i in f.instances if i.pid == 52)
    assert served.note is not None and "started by a guard (pid 50)" in served.note
    assert "not registered in /run/lock/vllm-guard" in served.note and "--lock-dir" in served.note


def test_join_rejects_a_reused_pid_and_another_users_entry() -> None:
    reused = find_instances(HOST, [entry(50, guard_started=5.0)], {})
    forged = find_instances(HOST, [entry(50, owner_uid=1001)], {})
    for f in (reused, forged):
        # Not a guard's: the entry is stale (its vLLM pid is either gone or another user's process).
        assert ("guard", "ready", 52, 50) not in kinds(f.instances)
    assert kinds(reused.instances)[0] == ("guard", "orphaned", 52, 50)  # its vLLM is alive: flagged
    assert forged.stale == [50] and ("vllm", "running", 52, None) in kinds(forged.instances)


@pytest.mark.parametrize(("argv", "command"), [
    (("/v/bin/python3", "/v/bin/vllm", "serve", "m"), "serve"),
    (("vllm", "preload", "--model", "m"), "preload"),
    (("python", "-m", "vllm.entrypoints.openai.api_server"), "serve"),
    (("python", "-m", "vllm.entrypoints.cli.main", "serve", "m"), "serve"),
    (("vllm", "bench", "serve"), None),
    (("python", "my_vllm_tool.py", "serve"), None),
])
def test_vllm_command(argv: tuple[str, ...], command: str | None) -> None:
    assert vllm_command(argv) == command


def test_hostile_entries_are_passed_over(tmp_path: Path) -> None:
    (tmp_path / "instance-1.json").write_text('{"schema": "vllm-guard.instance/1", "guard_pid": "1; rm -rf /"}')
    (tmp_path / "instance-2.json").write_text("x" * (registry.ENTRY_MAX_BYTES + 1))
    (tmp_path / "instance-3.json").symlink_to("/dev/zero")  # never opened: a device could act on an open
    os.mkfifo(tmp_path / "instance-4.json")
    (tmp_path / "instance-7.json").write_text("[" * 32000 + "]" * 32000)  # RecursionError in json, under 64 KiB
    naive = entry(8).to_dict() | {"since": "2025-01-01T00:00:00"}  # no UTC offset: cannot be compared with now
    (tmp_path / "instance-8.json").write_text(json.dumps(naive))
    assert registry.write_entry(registry.path_for(tmp_path, 6), entry(5)) is None  # named 6, says 5
    entries, notes = registry.read_entries(tmp_path)
    assert entries == [] and len(notes) == 1 and notes[0].startswith("7 file(s)")


def test_a_flood_of_files_neither_hides_a_running_guard_nor_floods_the_notes(tmp_path: Path) -> None:
    for n in range(registry.MAX_ENTRIES + 50):
        (tmp_path / f"instance-0{n}.json").write_text("{}")  # not the form a guard writes: ignored unread
        (tmp_path / f"instance-{n + 100_000}.json").write_text("{}")  # dead pids, more than are read
    live = os.getpid()
    assert registry.write_entry(registry.path_for(tmp_path, live), entry(live)) is None
    entries, notes = registry.read_entries(tmp_path, live_pids={live})
    assert [e.guard_pid for e in entries] == [live]
    assert len(notes) == 3 and any("not instance-<pid>.json" in n for n in notes), notes
    assert any("were not read" in n for n in notes), notes


def test_an_entry_cannot_claim_another_users_vllm() -> None:
    """A live guard's entry naming a vLLM that is not below it claims nothing: that vLLM is listed as it is."""
    forged = find_instances(HOST, [entry(50, vllm_pid=70, owner_uid=1000)], {})
    guard = next(i for i in forged.instances if i.guard_pid == 50)
    assert guard.pid is None  # pid 70 is not in pid 50's tree
    assert ("vllm", "running", 70, None) in kinds(forged.instances)


def test_a_forged_ready_guard_naming_a_process_that_is_no_guard_is_not_listed() -> None:
    """Another user's entry for a process of theirs that is no guard (`python3 my_app.py`), "ready" on a real
    guard's port: not a guard, claims nothing, and is not removed while that process runs."""
    found = find_instances(HOST, [entry(80, vllm_pid=70, owner_uid=1000, port=8000)], {})
    assert all(i.guard_pid != 80 for i in found.instances)
    assert 80 not in found.stale
    assert ("vllm", "running", 70, None) in kinds(found.instances)


def test_ps_survives_what_it_reads(tmp_path: Path, sleeper: int) -> None:
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    (locks / "instance-7.json").write_text("[" * 32000 + "]" * 32000)
    naive = entry(sleeper, guard_started=None, vllm_pid=None).to_dict() | {"since": "2025-01-01T00:00:00"}
    (locks / f"instance-{sleeper}.json").write_text(json.dumps(naive))
    env = {**os.environ, "VLLMGUARD_LOCK_DIR": str(locks), "PYTHONPATH": str(ROOT)}
    for args in (["ps"], ["ps", "--json"]):
        r = subprocess.run([sys.executable, "-m", "vllm_guard", *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "2 file(s)" in r.stdout, r.stdout + r.stderr
    assert "does not exist" in " ".join(ps(tmp_path / "nowhere")["notes"])


@pytest.mark.parametrize("keeper_module", ["vllm_guard.launch.keeper", "vllm_guard.keeper"])
def test_a_keeper_of_either_layout_is_known(keeper_module: str) -> None:
    """An upgrade must not lose running guards: a keeper started before the packages per stage runs
    `from vllm_guard.keeper import main`. Its EngineCore, left under it once its API server died, is flagged
    as orphaned either way; under a process ps did not know as the guard's, it would pass as started by it."""
    keeper = proc(51, 50, "python3", ("/usr/bin/python3", "-c", f"... from {keeper_module} import main ..."))
    host = [proc(1, 0, "systemd"), HOST[1], keeper, proc(53, 51, "VLLM::EngineCore")]
    found = find_instances(host, [], {53: [(0, 20 * GIB)]}).instances
    assert kinds(found) == [("vllm", "orphaned", 53, None)]
