"""The guard on a real Ray cluster: three Ray nodes on this machine (``ray.cluster_utils.Cluster``), each with
declared GPUs and its own facts (tests/ray_nodes.py), the probes running as real Ray tasks pinned to each node,
the launch locks held by real Ray actors, and a fake vLLM that asks Ray for a real placement group
(tests/ray_engine_fake.py). Every guard runs as its own process, as a user runs it.

Skips without ray (pip install 'vllm-guard[ray]'); under CI, RAY_REQUIRED=1 makes a missing Ray a failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port
from tests.ray_nodes import ClusterRig, NodeRig, need_ray

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock, /proc and signals are Linux's")
ENGINE = ROOT / "tests" / "ray_engine_fake.py"
MODEL = ROOT / "tests" / "data" / "models" / "llama-3.1-8b"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterRig]:
    need_ray()
    c = ClusterRig(tmp_path_factory.mktemp("ray"), [2, 2, 2])
    try:
        yield c
    finally:
        c.shutdown()


class Guard:
    """One test's guard: a profile for tensor 2 x pipeline 3 on Ray, the fake engine as `vllm` on PATH."""

    def __init__(self, tmp: Path, cluster: ClusterRig, extra: str = "") -> None:
        self.tmp = tmp
        self.cluster = cluster
        self.port = free_port()
        bindir = tmp / "bin"
        bindir.mkdir(exist_ok=True)
        vllm = bindir / "vllm"
        vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {ENGINE} "$@"\n')
        vllm.chmod(0o755)
        self.profile = tmp / "ray.toml"
        self.profile.write_text(
            f'[model]\nid = "{MODEL}"\n[vllm]\ntensor-parallel-size = 2\npipeline-parallel-size = 3\n'
            f'distributed-executor-backend = "ray"\nport = {self.port}\nhost = "127.0.0.1"\n'
            f"[guard]\nstop-timeout = 5\n{extra}\n")
        self.log = tmp / "attempts.jsonl"
        self.env = {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp),
                    "RAY_ADDRESS": cluster.address, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
                    "VLLMGUARD_ATTEMPT_LOG": str(self.log), "VLLMGUARD_LOCK_DIR": str(tmp / "head-locks"),
                    "COLUMNS": "200", "RAY_ENGINE_FAKE_PG_WAIT_S": "1"}

    def check(self, *extra: str) -> tuple[int, dict]:
        r = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--json", str(self.profile), *extra],
                           env=self.env, capture_output=True, text=True, timeout=120, cwd=self.tmp)
        assert r.stdout, r.stderr
        return r.returncode, json.loads(r.stdout)

    def serve(self, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", str(self.profile)],
                                env={**self.env, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=self.tmp)

    def serve_to_file(self, err: Path) -> subprocess.Popen[str]:
        """serve with its stderr in a file, for a test that reads it while the guard runs."""
        with err.open("w") as sink:
            return subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", str(self.profile)], env=self.env,
                                    stdout=subprocess.DEVNULL, stderr=sink, text=True, cwd=self.tmp)


def names(doc: dict) -> dict[str, str]:
    """node id -> the name the guard reports for it."""
    return {n["node_id"]: n["name"] for n in doc["cluster"]["nodes"]}


def finding(doc: dict, check_id: str) -> dict:
    return next(f for f in doc["checks"] if f["id"] == check_id)


@contextlib.contextmanager
def changed(node: NodeRig, **attrs: object) -> Iterator[None]:
    """One node's facts changed for the length of a test (its files are read at probe time), then restored."""
    old = {k: getattr(node, k) for k in attrs}
    for k, v in attrs.items():
        setattr(node, k, v)
    node.write()
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(node, k, v)
        node.write()


def test_check_on_three_nodes_gives_per_node_facts_and_the_placement(tmp_path: Path, cluster: ClusterRig) -> None:
    code, doc = Guard(tmp_path, cluster).check()
    assert code == 0, [f for f in doc["checks"] if f["status"] == "fail"]
    nodes = doc["cluster"]["nodes"]
    assert {n["node_id"] for n in nodes} == {n.node_id for n in cluster.nodes}
    for n in nodes:  # each node's own snapshot and vLLM, read by a task on that node
        ours = next(t for t in cluster.nodes if t.node_id == n["node_id"])
        assert n["machine"]["hostname"] == ours.name and str(ours.snapshot) in n["machine_source"]
        assert n["versions"]["vllm"] == "0.33.0" and n["model_readable"] is True
        assert n["ray_gpus"] == 2 and n["ray_gpus_free"] == 2  # nothing else holds them in Ray
        assert n["route_ip"] == n["ip"] and n["interface"]  # one host: vLLM's address is Ray's
        assert [g["uuid"] for g in n["machine"]["gpus"]] == [f"GPU-{ours.name}-0", f"GPU-{ours.name}-1"]
    ranks = doc["placement"]["ranks"]
    assert [r["rank"] for r in ranks] == list(range(6))
    head = next(n for n in nodes if n["is_head"])
    assert ranks[0]["node_id"] == head["node_id"] == cluster.nodes[0].node_id
    assert {r["node_id"] for r in ranks} == {n.node_id for n in cluster.nodes}
    assert all(len({r["node_id"] for r in ranks if r["stage"] == s}) == 1 for s in range(3))  # TP within a node
    assert finding(doc, "cluster.gpus")["status"] == "pass"


def test_snapshot_cluster_writes_one_file_that_check_plans_against(tmp_path: Path, cluster: ClusterRig) -> None:
    g = Guard(tmp_path, cluster)
    snap = tmp_path / "cluster.json"
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "snapshot", "--cluster", "--model", str(MODEL), "-o",
                        str(snap)], env=g.env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(snap.read_text())
    assert doc["schema"] == "vllm-guard.cluster/1" and doc["vllm_version"] == "0.33.0"
    assert {n["node_id"] for n in doc["nodes"]} == {n.node_id for n in cluster.nodes}
    offline = {**g.env, "RAY_ADDRESS": "203.0.113.1:6379"}  # no cluster there: the file is all it reads
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--json", "--machine", str(snap),
                        str(g.profile)], env=offline, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    planned = json.loads(r.stdout)
    assert r.returncode == 0, [f for f in planned["checks"] if f["status"] == "fail"]
    assert [x["node_id"] for x in planned["placement"]["ranks"]][::2] == [
        x["node_id"] for x in Guard(tmp_path, cluster).check()[1]["placement"]["ranks"]][::2]


def test_check_fails_naming_the_node_that_lacks_a_gpu(tmp_path: Path, cluster: ClusterRig) -> None:
    c = cluster.nodes[2]
    with changed(c, gpus=1):
        code, doc = Guard(tmp_path, cluster).check()
    f = finding(doc, "cluster.gpus")
    assert code == 4 and f["status"] == "fail"
    assert f"{names(doc)[c.node_id]} 1" in f["message"] and "5 usable" in f["message"], f["message"]


def test_check_fails_naming_the_node_with_a_busy_gpu(tmp_path: Path, cluster: ClusterRig) -> None:
    b = cluster.nodes[1]
    with changed(b, busy={1: 60 * 2**30}):
        code, doc = Guard(tmp_path, cluster).check()
    f = finding(doc, "cluster.free_memory")
    assert code == 4 and f["status"] == "fail"
    assert f"node {names(doc)[b.node_id]} GPU 1" in f["message"] and "pid 4242 bob" in f["message"], f["message"]
    assert sum(line.startswith("node ") for line in f["message"].splitlines()) == 1  # only that GPU


def test_check_fails_naming_the_node_with_another_vllm(tmp_path: Path, cluster: ClusterRig) -> None:
    c = cluster.nodes[2]
    with changed(c, vllm_version="0.32.0"):
        code, doc = Guard(tmp_path, cluster).check()
    f = finding(doc, "cluster.versions")
    assert code == 4 and f["status"] == "fail"
    assert f"node {names(doc)[c.node_id]} has vllm 0.32.0" in f["message"], f["message"]


def lock_states(node: NodeRig) -> list[bool]:
    """Whether each of the node's GPU lock files is held by someone (tried without waiting, let go at once)."""
    states = []
    for path in sorted(node.locks.glob("gpu-*.lock")):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            states.append(True)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            states.append(False)
        finally:
            os.close(fd)
    return states


def wait_for(what: str, condition: object, guard: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        if guard.poll() is not None:
            _out, err = guard.communicate()
            raise AssertionError(f"the guard exited ({guard.returncode}) before {what}:\n{(err or '')[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def all_held(cluster: ClusterRig) -> bool:
    return all(lock_states(n) == [True, True] for n in cluster.nodes)


def none_held(cluster: ClusterRig) -> bool:
    return all(len(lock_states(n)) == 2 and not any(lock_states(n)) for n in cluster.nodes)


def test_serve_takes_the_locks_on_every_node_and_releases_them(tmp_path: Path, cluster: ClusterRig) -> None:
    g = Guard(tmp_path, cluster)
    guard = g.serve(RAY_ENGINE_FAKE_LOAD_S="3")
    try:
        wait_for("the launch locks on all three nodes", lambda: all_held(cluster), guard)
        assert sum("ray::NodeLockHolder" in p for p in _commands()) == 3  # one lock actor per node
        wait_for("vLLM ready", lambda: any(r["outcome"] == "ready" for r in records(g.log)), guard)
        wait_for("the locks released once ready", lambda: none_held(cluster), guard, timeout=10)
        guard.send_signal(signal.SIGTERM)
        _out, err = guard.communicate(timeout=60)
    finally:
        if guard.poll() is None:
            guard.kill()
            guard.communicate()
    assert guard.returncode == 143, err[-3000:]
    record = records(g.log)[0]
    assert record["phases"]["placement_group"] is not None and record["phases"]["ray_workers"] is not None, record
    assert "Ray placement group" in err and "placement: tensor 2 x pipeline 3" in err, err[-3000:]
    assert not any(ENGINE.name in p for p in _commands()), "the fake engine outlived the guard"
    assert placement_group_states(cluster) == {"REMOVED"}  # vLLM's workers' reservation ended with it
    assert gone("ray::NodeLockHolder"), "a lock actor outlived the guard"


def gone(title: str, timeout: float = 30) -> bool:
    """Whether no process with this title is left (within ``timeout``: Ray ends a job's workers asynchronously)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(title in p for p in _commands()):
            return True
        time.sleep(0.2)
    return False


def placement_group_states(cluster: ClusterRig) -> set[str]:
    """The states of the cluster's placement groups, read by a driver of its own."""
    code = (f"import json, ray; ray.init(address={cluster.address!r}, log_to_driver=False, configure_logging=False)"
            "; print(json.dumps(sorted({p['state'] for p in ray.util.placement_group_table().values()})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))


def test_serve_waits_for_a_launch_lock_another_guard_holds_on_one_node(tmp_path: Path, cluster: ClusterRig) -> None:
    b = cluster.nodes[1]
    b.locks.mkdir(mode=0o700, exist_ok=True)
    held = os.open(b.locks / f"gpu-GPU-{b.name}-1.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a single-machine guard starting on that GPU holds it
    g = Guard(tmp_path, cluster)
    errors = tmp_path / "guard.err"
    guard = g.serve_to_file(errors)
    try:
        # Until the guard says it waits: a fixed sleep let a slow preflight (a loaded 2-core machine) reach the
        # locks only after they were released, and the test then saw no wait at all.
        wait_for("the guard waiting for the held lock", lambda: "waiting for the launch lock" in errors.read_text(),
                 guard, timeout=120)
        time.sleep(2)
        assert guard.poll() is None and not records(g.log), "started past a held launch lock"
        assert not any(ENGINE.name in p for p in _commands())
        fcntl.flock(held, fcntl.LOCK_UN)
        wait_for("vLLM ready once the lock is free", lambda: any(r["outcome"] == "ready" for r in records(g.log)),
                 guard)
        guard.send_signal(signal.SIGTERM)
        guard.wait(timeout=60)
    finally:
        os.close(held)
        if guard.poll() is None:
            guard.kill()
            guard.wait()
    err = errors.read_text()
    assert f"waiting for the launch lock of GPU GPU-{b.name}-1 on node " in err, err[-3000:]
    assert f"pid {os.getpid()}" in err, err[-3000:]  # who holds it, read from the kernel on that node


def test_memory_taken_on_a_node_after_the_preflight_is_caught_under_the_lock(tmp_path: Path,
                                                                            cluster: ClusterRig) -> None:
    b, c = cluster.nodes[1], cluster.nodes[2]
    b.locks.mkdir(mode=0o700, exist_ok=True)
    held = os.open(b.locks / f"gpu-GPU-{b.name}-0.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # the guard passes its preflight, then waits here
    g = Guard(tmp_path, cluster)
    errors = tmp_path / "guard.err"
    guard = g.serve_to_file(errors)
    try:
        # Past its preflight only once it says it waits for the lock (a fixed sleep raced a slow preflight).
        wait_for("the guard waiting for the held lock", lambda: "waiting for the launch lock" in errors.read_text(),
                 guard, timeout=120)
        with changed(c, busy={0: 30 * 2**30}):  # meanwhile another process takes 30 GiB of node c's GPU 0
            fcntl.flock(held, fcntl.LOCK_UN)
            wait_for("a relaxed start", lambda: any(r["outcome"] == "ready" for r in records(g.log)), guard)
        guard.send_signal(signal.SIGTERM)
        guard.wait(timeout=60)
    finally:
        os.close(held)
        if guard.poll() is None:
            guard.kill()
            guard.wait()
    first, *_, ready = [r for r in records(g.log) if "attempt" in r and r.get("phase") != "serving"]
    assert first["failure"]["class"] == "gpu_busy", first
    evidence = " ".join(first["failure"]["evidence"])
    assert "re-check under the launch lock: node " in evidence and f"#{c.node_id[:6]} GPU 0 has 50.00 GiB" in evidence
    assert ready["outcome"] == "ready" and ready["changed"]["gpu-memory-utilization"][1] <= 0.61, ready


def test_a_placement_group_that_cannot_be_had_is_too_few_gpus_with_its_numbers(tmp_path: Path,
                                                                             cluster: ClusterRig) -> None:
    g = Guard(tmp_path, cluster)
    g.profile.write_text(g.profile.read_text().replace("pipeline-parallel-size = 3", "pipeline-parallel-size = 4"))
    guard = g.serve(RAY_ENGINE_FAKE_PG_TIMEOUT_S="3")  # the preflight refuses it, naming the shortfall
    _out, err = guard.communicate(timeout=120)
    assert guard.returncode == 4 and "cluster.gpus" in err and "8 GPUs; the cluster has 6 usable" in err, err[-3000:]
    # Forced, vLLM waits for the placement group, gives up (here after 3 s, 1800 s in vLLM) and the guard
    # reads the shortfall from its log: no relaxation fixes it, so no second start.
    forced = subprocess.run([sys.executable, "-m", "vllm_guard", "serve", "--force", str(g.profile)],
                            env={**g.env, "RAY_ENGINE_FAKE_PG_TIMEOUT_S": "3"}, capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert forced.returncode == 5, forced.stderr[-3000:]
    record = records(g.log)[-1]
    assert record["failure"]["class"] == "too_few_gpus", record["failure"]
    assert record["failure"]["numbers"]["required_gpus"] == 8, record["failure"]
    assert "Waiting for creating a placement group" in forced.stdout
    assert placement_group_states(cluster) <= {"REMOVED"}


def test_kill_9_of_the_guard_releases_the_locks_on_every_node(tmp_path: Path, cluster: ClusterRig) -> None:
    g = Guard(tmp_path, cluster)
    guard = g.serve(RAY_ENGINE_FAKE_LOAD_S="120")
    try:
        wait_for("the launch locks on all three nodes", lambda: all_held(cluster), guard)
        guard.kill()  # SIGKILL: no cleanup of its own; Ray ends its job and the job's lock actors
        guard.communicate(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not none_held(cluster):
            time.sleep(0.2)
        assert none_held(cluster), [lock_states(n) for n in cluster.nodes]
        deadline = time.monotonic() + 30  # and the keeper stops the engine the guard left
        while time.monotonic() < deadline and any(ENGINE.name in p for p in _commands()):
            time.sleep(0.2)
        assert not any(ENGINE.name in p for p in _commands()), "the fake engine outlived the killed guard"
        assert placement_group_states(cluster) <= {"REMOVED"}  # its placement group ended with its Ray job
        assert gone("ray::NodeLockHolder"), "a lock actor outlived the killed guard"
    finally:
        if guard.poll() is None:
            guard.kill()
            guard.communicate()


def test_a_node_that_does_not_answer_is_a_finding_not_a_hang(tmp_path: Path, cluster: ClusterRig) -> None:
    d = cluster.add("node-d", 2, tmp_path)
    e = cluster.add("node-e", 2, tmp_path, without_guard=True)
    raylet = d.node.all_processes["raylet"][0].process
    raylet.send_signal(signal.SIGSTOP)  # alive for the cluster, deaf to its tasks
    try:
        started = time.monotonic()
        code, doc = Guard(tmp_path, cluster, "ray-node-timeout = 4").check()
        took = time.monotonic() - started
    finally:
        raylet.send_signal(signal.SIGCONT)
        cluster.remove(d)
        cluster.remove(e)
    f = finding(doc, "cluster.node_unreachable")
    assert code == 4 and f["status"] == "fail"
    lines = f["message"].splitlines()
    assert any(f"node {names(doc)[d.node_id]}" in x and "did not answer within 4 s" in x for x in lines), f
    assert any(f"node {names(doc)[e.node_id]}" in x and "No module named 'vllm_guard'" in x for x in lines), f
    assert "install vllm-guard on that node" in f["fix"], f
    assert took < 30, took  # the timeout bounds it (generous: two cores shared with other tests)


def test_no_cluster_at_the_address_fails_at_once_with_the_way_to_start_one(tmp_path: Path) -> None:
    need_ray()
    profile = tmp_path / "p.toml"
    profile.write_text(f'[model]\nid = "{MODEL}"\n[vllm]\ntensor-parallel-size = 2\n'
                       f'distributed-executor-backend = "ray"\n[guard]\nray-address = "127.0.0.1:{free_port()}"\n')
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "check", str(profile)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 4 and "no Ray cluster answered at 127.0.0.1:" in r.stderr, r.stderr
    assert "ray start --head" in r.stderr and "Traceback" not in r.stderr
    assert time.monotonic() - started < 30  # not Ray's minutes of retries


def records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def _commands() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return out


def test_a_node_that_dies_during_check_json_leaves_stdout_one_json_document(tmp_path: Path,
                                                                            cluster: ClusterRig) -> None:
    """Ray reports a node that dies under a running task from its own threads; while the guard talks to Ray,
    file descriptor 1 is stderr (rayapi.ray_output_to_stderr), so stdout holds the guard's document alone."""
    d = cluster.add("node-d", 2, tmp_path)
    raylet = d.node.all_processes["raylet"][0].process
    raylet.send_signal(signal.SIGSTOP)  # the probe sent there waits...
    guard = Guard(tmp_path, cluster, "ray-node-timeout = 8")
    p = subprocess.Popen([sys.executable, "-m", "vllm_guard", "check", "--json", str(guard.profile)], env=guard.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        time.sleep(3.0)  # the probes are out
        raylet.send_signal(signal.SIGKILL)  # ...and the node dies under it
        raylet.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        with contextlib.suppress(Exception):
            cluster.remove(d)
    assert out.lstrip().startswith("{"), out[:500]
    doc = json.loads(out)
    assert doc["schema"] == "vllm-guard.cluster-check/1", err[-2000:]
