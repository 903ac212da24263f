"""The cluster's pure core: target detection, placement and per-node checks, as tables of cases;
the cluster snapshot's round trip; `check --machine CLUSTER.json` through the real CLI (no Ray needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import MACHINES, ROOT, run_cli
from vllm_guard.cluster.checks import ClusterContext, run_cluster_checks
from vllm_guard.cluster.placement import place
from vllm_guard.cluster.target import ray_target
from vllm_guard.errors import SnapshotError
from vllm_guard.facts.cluster import NODE_ENV_NAMES, ClusterFacts, NodeFacts
from vllm_guard.facts.machine import GpuProcess, Machine
from vllm_guard.preflight.findings import FAIL, PASS, WARN, Finding
from vllm_guard.preflight.memory_params import Params
from vllm_guard.probes.model import probe_model
from vllm_guard.profile.load import load_profile
from vllm_guard.profile.model import Profile

GIB = 2**30
LLAMA = ROOT / "tests" / "data" / "models" / "llama-3.1-8b"
A100 = json.loads((MACHINES / "a100-80gb-x2.json").read_text())
L4 = json.loads((MACHINES / "l4-24gb.json").read_text())


def node(name: str, gpus: int = 2, *, head: bool = False, base: dict = A100, **over: object) -> NodeFacts:
    """A node that answered, with ``gpus`` GPUs of the base snapshot (one GPU repeated)."""
    g = base["gpus"][0]
    doc = {**base, "hostname": name,
           "gpus": [{**g, "index": i, "uuid": f"GPU-{name}-{i}"} for i in range(gpus)]}
    fields: dict[str, object] = {
        "node_id": f"{name}-id", "name": name, "ip": f"10.0.0.{sum(map(ord, name)) % 250 + 1}", "hostname": name,
        "is_head": head,
        "ray_gpus": gpus, "machine": Machine.from_dict(doc), "machine_source": "nvml",
        "versions": {"vllm": "0.33.0", "torch": "2.9.0", "ray": "2.60.0", "nccl": "2.27.3", "python": "3.12.3"},
        "model_readable": True, "model_where": "local directory", "interface": "eth0", "interfaces": ("eth0", "lo"),
        "env": {}, "answered_s": 0.2,
    }
    fields.update(over)
    return NodeFacts(**fields)


def three(**over_c: object) -> tuple[NodeFacts, ...]:
    return node("node-a", head=True), node("node-b"), node("node-c", **over_c)


def cluster(nodes: tuple[NodeFacts, ...]) -> ClusterFacts:
    return ClusterFacts("10.0.0.1:6379", "2026-11-30T10:00:00+00:00", str(LLAMA), nodes, "2.60.0")


def profile(tmp_path: Path, vllm: str = "", guard: str = "", env: str = "") -> Profile:
    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "{LLAMA}"\n[vllm]\ntensor-parallel-size = 2\npipeline-parallel-size = 3\n'
                    f'distributed-executor-backend = "ray"\n{vllm}\n[guard]\n{guard}\n[env]\n{env}\n')
    return load_profile(path)


def findings(tmp_path: Path, nodes: tuple[NodeFacts, ...], *, vllm: str = "", guard: str = "", env: str = "",
             environ: dict[str, str] | None = None) -> dict[str, Finding]:
    p = profile(tmp_path, vllm, guard, env)
    tp, pp = int(p.value("tensor_parallel_size")), int(p.value("pipeline_parallel_size"))
    # As gather_cluster does on a live cluster: every node is asked about the profile's [env] names too.
    asked = replace(cluster(nodes), env_names=(*NODE_ENV_NAMES, *p.env))
    ctx = ClusterContext(p, asked, place(nodes, tp, pp), probe_model(str(LLAMA), revision=None, environ={},
                         cache_dir="/nonexistent"), Params.from_values(p.value, p.is_set),
                         {**p.env, **(environ or {})})
    return {f.id: f for f in run_cluster_checks(ctx)}


# --- placement -------------------------------------------------------------------------------

PLACEMENTS = [
    # (GPUs per node, head first; tp, pp; across nodes; ranks per node or the words of the problem)
    ((2, 2, 2), 2, 3, False, {"n0": 2, "n1": 2, "n2": 2}),
    ((2, 4, 2), 2, 3, False, {"n0": 2, "n1": 4}),  # the head first, then the node with most GPUs
    ((2, 2, 1), 2, 3, False, ["6 GPUs", "5 usable", "n2 1"]),
    ((2, 2, 2, 2), 4, 2, False, ["tensor parallel 4 within a node", "n0 0"]),
    ((2, 2, 2, 2), 4, 2, True, {"n0": 2, "n1": 2, "n2": 2, "n3": 2}),
    ((0, 4, 4), 4, 2, False, ["head node n0", "no GPU"]),
    ((8,), 8, 1, False, {"n0": 8}),
]


@pytest.mark.parametrize(("gpus", "tp", "pp", "across", "want"), PLACEMENTS)
def test_placement(gpus: tuple[int, ...], tp: int, pp: int, across: bool, want: object) -> None:
    nodes = tuple(node(f"n{i}", n, head=i == 0) for i, n in enumerate(gpus))
    p = place(nodes, tp, pp, tp_across_nodes=across)
    if isinstance(want, dict):
        assert p.fits and len(p.ranks) == tp * pp
        assert {name: sum(r.node == name for r in p.ranks) for name in want} == want
        assert p.ranks[0].node == "n0" and [r.rank for r in p.ranks] == list(range(tp * pp))
        assert all(r.stage == r.rank // tp and r.tp_rank == r.rank % tp for r in p.ranks)
        if not across:  # each tensor-parallel group on one node
            assert all(len({r.node for r in p.ranks if r.stage == s}) == 1 for s in range(pp))
    else:
        assert not p.fits and not p.ranks
        assert all(word in str(p.problem) for word in want), p.problem


def test_a_silent_node_takes_no_rank() -> None:
    silent = NodeFacts("n2-id", "n2", "10.0.0.3", "n2", False, 2, error="did not answer within 5 s")
    p = place((node("n0", head=True), node("n1"), silent), 2, 2)
    assert p.fits and {r.node for r in p.ranks} == {"n0", "n1"}


# --- checks ----------------------------------------------------------------------------------

CHECKS = [
    # (what node-c is like, the profile's extras, check id, status, words in the message)
    ("fits", {}, {}, "cluster.gpus", PASS, ["6 ranks", "3 node(s)"]),
    ("one GPU short", {"gpus": 1}, {}, "cluster.gpus", FAIL, ["node-c 1", "5 usable"]),
    ("Ray declares more GPUs than NVML sees", {"ray_gpus": 4}, {}, "cluster.gpus", FAIL,
     ["node node-c", "Ray schedules 4 GPUs, NVML sees 2"]),
    ("GPUs reserved in Ray by another job", {"ray_gpus_free": 1}, {}, "cluster.gpus", FAIL,
     ["node node-c: Ray has 1 of its 2 GPUs free", "reserved by another job"]),
    ("another vLLM", {"versions": {"vllm": "0.32.0", "torch": "2.9.0", "ray": "2.60.0", "nccl": "2.27.3",
                                   "python": "3.12.3"}}, {}, "cluster.versions", FAIL,
     ["node node-c has vllm 0.32.0", "node-a 0.33.0"]),
    ("another Python minor", {"versions": {"vllm": "0.33.0", "torch": "2.9.0", "ray": "2.60.0", "nccl": "2.27.3",
                                          "python": "3.11.9"}}, {}, "cluster.versions", FAIL, ["python 3.11.9"]),
    ("model missing there", {"model_readable": False, "model_where": "/models/x is not a directory"}, {},
     "cluster.model_readable", FAIL, ["node node-c", "/models/x"]),
    ("model would download", {"model_readable": None, "model_where": "not in the cache"}, {},
     "cluster.model_readable", WARN, ["node node-c"]),
    ("would download to a full disk", {"model_readable": None, "model_where": "not in the cache", "machine": "disk"},
     {}, "cluster.model_readable", FAIL, ["node node-c: would download 14.96 GiB", "has 1.00 GiB free"]),
    ("VLLM_HOST_IP differs from Ray's", {"env": {"VLLM_HOST_IP": "192.168.1.9"}}, {}, "cluster.network", FAIL,
     ["node node-c", "VLLM_HOST_IP=192.168.1.9", "waits forever"]),
    ("head's default route differs from Ray's address", {}, {"head": {"route_ip": "172.16.0.5"}}, "cluster.network",
     FAIL, ["node node-a: vLLM would take its address from the default route (172.16.0.5)", "VLLM_HOST_IP=10.0.0."]),
    ("a worker's default route differs: only the head's matters", {"route_ip": "172.16.0.9"}, {}, "cluster.network",
     PASS, []),
    ("loopback across hosts", {"ip": "127.0.0.1", "interface": "lo"}, {}, "cluster.network", FAIL,
     ["node node-c", "loopback"]),
    ("interface that is not there", {"env": {"NCCL_SOCKET_IFNAME": "ib0"}}, {}, "cluster.network", FAIL,
     ["node node-c", "NCCL_SOCKET_IFNAME=ib0 names no interface"]),
    ("interface prefix that is there", {"env": {"GLOO_SOCKET_IFNAME": "eth"}}, {}, "cluster.network", PASS, []),
    ("a variable vLLM does not copy", {}, {"env": 'PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"'},
     "cluster.env", WARN, ["node node-c: PYTORCH_CUDA_ALLOC_CONF is not set there"]),
    ("a secret vLLM does not copy, set there (masked), missing on node-b", {"env": {"WANDB_API_KEY": "***"}},
     {"env": 'WANDB_API_KEY = "s3cret-value"'}, "cluster.env", WARN, ["node node-b: WANDB_API_KEY is not set"]),
    ("a secret vLLM does not copy, missing there", {}, {"env": 'WANDB_API_KEY = "s3cret-value"'}, "cluster.env", WARN,
     ["node node-c: WANDB_API_KEY is not set there"]),
    ("a variable vLLM copies", {}, {"env": 'NCCL_DEBUG = "INFO"'}, "cluster.env", PASS, []),
    ("small /dev/shm", {"machine": "shm"}, {}, "cluster.shm", FAIL, ["node node-c", "/dev/shm has 64 MiB"]),
    ("little host RAM", {"machine": "ram"}, {}, "cluster.host_ram", FAIL, ["node node-c", "1.00 GiB host memory"]),
    ("a smaller GPU", {"base": L4}, {"vllm": "gpu-memory-utilization = 0.2"}, "cluster.kv_fit", FAIL,
     ["node node-c", "max-model-len 131072"]),
    ("did not answer", {"machine": None, "error": "did not answer within 5 s"}, {}, "cluster.node_unreachable", FAIL,
     ["node node-c", "did not answer within 5 s"]),
]


def _node_c(over: dict[str, object]) -> NodeFacts:
    over = dict(over)
    base = over.pop("base", A100)
    gpus = over.pop("gpus", 2)
    special = over.get("machine", "keep")
    c = node("node-c", gpus, base=base, **{k: v for k, v in over.items() if k != "machine"})
    assert c.machine is not None
    if special == "shm":
        return replace(c, machine=replace(c.machine, host=replace(c.machine.host, shm_free_bytes=64 * 2**20)))
    if special == "ram":
        return replace(c, machine=replace(c.machine, host=replace(c.machine.host, memory_available_bytes=GIB)))
    if special == "disk":
        disk = replace(c.machine.host.disks[0], free_bytes=GIB)
        return replace(c, machine=replace(c.machine, host=replace(c.machine.host, disks=(disk,))))
    if special is None:
        return replace(c, machine=None)
    return c


@pytest.mark.parametrize(("case", "node_c", "prof", "check_id", "status", "words"), CHECKS, ids=[c[0] for c in CHECKS])
def test_cluster_check(tmp_path: Path, case: str, node_c: dict[str, object], prof: dict[str, str], check_id: str,
                       status: str, words: list[str]) -> None:
    nodes = (node("node-a", head=True), node("node-b"), _node_c(node_c))
    prof = dict(prof)
    if "head" in prof:
        nodes = (replace(nodes[0], **prof.pop("head")), *nodes[1:])
    found = findings(tmp_path, nodes, **prof)
    f = found[check_id]
    assert not any("s3cret" in str(x.to_dict()) for x in found.values())  # secrets never reach a finding
    assert f.status == status, f
    assert all(w in f.message for w in words), f.message


def test_a_busy_gpu_names_its_node_gpu_and_holder(tmp_path: Path) -> None:
    c = node("node-c")
    assert c.machine is not None
    busy = replace(c.machine.gpus[1], memory_free_bytes=10 * GIB,
                   processes=(GpuProcess(4242, "python3", "bob", 70 * GIB),))
    c = replace(c, machine=replace(c.machine, gpus=(c.machine.gpus[0], busy)))
    found = findings(tmp_path, (node("node-a", head=True), node("node-b"), c))
    f = found["cluster.free_memory"]
    assert f.status == FAIL
    assert "node node-c GPU 1 (rank 5) has 10.00 GiB free" in f.message and "pid 4242 bob" in f.message
    assert all(v.status != FAIL for k, v in found.items() if k != "cluster.free_memory")


def test_skip_and_warn_only_apply_to_cluster_checks(tmp_path: Path) -> None:
    nodes = three(gpus=1)
    found = findings(tmp_path, nodes, guard='[guard.checks]\nskip = ["cluster.env"]\nwarn-only = ["cluster.gpus"]')
    assert found["cluster.env"].status == "skip" and found["cluster.gpus"].status == WARN


# --- the target ------------------------------------------------------------------------------

TARGETS = [
    # (vLLM options, guard options, environment, local GPUs, local cluster, address or None, guard adds the backend)
    ('distributed-executor-backend = "ray"', "", {}, None, None, "auto", False),
    ('distributed-executor-backend = "ray"', 'ray-address = "10.0.0.1:6379"', {"RAY_ADDRESS": "x:1"}, None, None,
     "10.0.0.1:6379", False),
    ("tensor-parallel-size = 4", "", {"RAY_ADDRESS": "10.0.0.1:6379"}, 2, None, "10.0.0.1:6379", True),
    ("tensor-parallel-size = 4", "", {}, 2, "10.0.0.1:6379", "auto", True),
    ("tensor-parallel-size = 4", "", {}, 2, None, None, False),  # no cluster known: one machine, which fails
    ("tensor-parallel-size = 2", "", {"RAY_ADDRESS": "10.0.0.1:6379"}, 2, None, None, False),  # fits here
    ('tensor-parallel-size = 4\ndistributed-executor-backend = "mp"', "", {"RAY_ADDRESS": "a:1"}, 2, None, None,
     False),
]


@pytest.mark.parametrize(("vllm", "guard", "environ", "local", "local_cluster", "address", "added"), TARGETS)
def test_ray_target(tmp_path: Path, vllm: str, guard: str, environ: dict[str, str], local: int | None,
                    local_cluster: str | None, address: str | None, added: bool) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "{LLAMA}"\n[vllm]\n{vllm}\n[guard]\n{guard}\n')
    t = ray_target(load_profile(path), environ, local_gpus=local, local_cluster=local_cluster)
    assert (t.address if t else None) == address
    assert (t.backend_added if t else False) == added


def test_ray_address_is_a_validated_guard_key(write_profile: Callable[[str], Path]) -> None:
    p = write_profile(f'[model]\nid = "{LLAMA}"\n[guard]\nray-adress = "x:1"\n')
    r = run_cli("check", str(p))
    assert r.code == 3 and "ray-address" in r.err, r.err


# --- the cluster snapshot ----------------------------------------------------------------------


def test_cluster_snapshot_round_trips() -> None:
    c = cluster((*three(), NodeFacts("d-id", "node-d", None, None, False, None, error="did not answer")))
    assert ClusterFacts.from_dict(json.loads(json.dumps(c.to_dict()))) == c


@pytest.mark.parametrize(("doc", "fragment"), [
    ({"schema": "vllm-guard.cluster/2", "nodes": []}, "schema"),
    ({"schema": "vllm-guard.cluster/1", "nodes": [{"node_id": 1}]}, "nodes[0].node_id"),
    ({"schema": "vllm-guard.cluster/1", "nodes": [], "address": "a"}, "taken_at"),
])
def test_bad_cluster_snapshots_are_refused(doc: dict[str, object], fragment: str) -> None:
    with pytest.raises(SnapshotError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        ClusterFacts.from_dict(doc)


def test_check_plans_against_a_cluster_snapshot_offline(tmp_path: Path) -> None:
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(three(gpus=1)).to_dict()))
    p = profile(tmp_path)
    r = run_cli("check", "--json", "--machine", str(snap), str(p.path))
    doc = json.loads(r.out)
    assert r.code == 4
    gpus = next(c for c in doc["checks"] if c["id"] == "cluster.gpus")
    assert gpus["status"] == FAIL and "node-c 1" in gpus["message"]
    from tests.test_json_schemas import documented, problems

    assert problems(doc, documented()["vllm-guard.cluster-check/1"]) == []
    assert problems(json.loads(snap.read_text()), documented()["vllm-guard.cluster/1"]) == []
    snap.write_text(json.dumps(cluster(three()).to_dict()))
    r = run_cli("check", "--machine", str(snap), str(p.path), env={"COLUMNS": "160"})
    assert "placement: tensor 2 x pipeline 3" in r.out and "node-c" in r.out, r.out
    assert "cluster.free_memory" in r.out and "FAIL cluster" not in r.out, r.out


def test_offline_a_snapshot_answers_only_for_what_it_recorded(tmp_path: Path) -> None:
    """A cluster snapshot records readability for one model and a fixed set of variables: another model's
    readability is not judged (nor claimed), and a profile variable it never asked about is not 'unset'."""
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(three()).to_dict()))
    other = tmp_path / "other.toml"
    other.write_text('[model]\nid = "meta-llama/Llama-3.1-70B-Instruct"\n[vllm]\ntensor-parallel-size = 2\n'
                     'pipeline-parallel-size = 3\ndistributed-executor-backend = "ray"\n'
                     '[env]\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"\n')
    doc = json.loads(run_cli("check", "--json", "--machine", str(snap), str(other)).out)
    by_id = {c["id"]: c for c in doc["checks"]}
    assert by_id["cluster.model_readable"]["status"] == "skip"
    assert "--model meta-llama/Llama-3.1-70B-Instruct" in by_id["cluster.model_readable"]["fix"]
    env = by_id["cluster.env"]
    assert env["status"] == PASS and "not judged: PYTORCH_CUDA_ALLOC_CONF" in env["message"], env


def test_a_ray_profile_without_ray_says_how_to_install_it(tmp_path: Path) -> None:
    p = profile(tmp_path)
    # None in sys.modules is how Python itself spells "this module cannot be imported".
    code = ("import sys; sys.modules['ray'] = None; from vllm_guard.cli.main import main; "
            f"sys.exit(main(['check', {str(p.path)!r}], environ={{'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin'}}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 4, r.stderr
    assert "Ray is not installed" in r.stderr and "pip install 'vllm-guard[ray]'" in r.stderr, r.stderr


def test_ray_has_one_doorway_and_is_imported_only_when_a_profile_needs_it() -> None:
    import ast

    importers = set()
    for path in (ROOT / "vllm_guard").rglob("*.py"):
        for n in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in n.names] if isinstance(n, ast.Import)
                     else [n.module or ""] if isinstance(n, ast.ImportFrom) else [])
            if any(name == "ray" or name.startswith("ray.") for name in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"vllm_guard/cluster/rayapi.py"}
    code = ("import sys; from vllm_guard.cli import serve; from vllm_guard.sites import local; "
            "from vllm_guard.report import check, docs; "
            "from vllm_guard.cluster import preflight, locks, gather; print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "False"


def test_serve_dry_run_against_a_cluster_snapshot_adds_the_ray_backend(tmp_path: Path) -> None:
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(three()).to_dict()))
    p = tmp_path / "p.toml"
    p.write_text(f'[model]\nid = "{LLAMA}"\n[vllm]\ntensor-parallel-size = 2\npipeline-parallel-size = 3\n')
    r = run_cli("serve", "--dry-run", "--machine", str(snap), str(p), env={"COLUMNS": "200"})
    assert r.code == 0, r.out
    assert "--distributed-executor-backend ray" in r.out and "placement: tensor 2 x pipeline 3" in r.out, r.out
    vllm = tmp_path / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text("#!/bin/sh\nexit 0\n")
    vllm.chmod(0o755)
    r = run_cli("serve", "--machine", str(snap), str(p), env={"PATH": f"{vllm.parent}:/usr/bin:/bin"})
    assert r.code == 2 and "cannot launch one" in r.err and "--dry-run" in r.err, r.err


def test_serve_dry_run_json_on_a_cluster_is_the_dry_run_document(tmp_path: Path) -> None:
    """The seam gives a cluster the same --dry-run --json as one machine: the command line, the environment,
    and the cluster's check document inside (it printed the text report before the seam)."""
    from tests.test_json_schemas import documented, problems

    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(three()).to_dict()))
    p = tmp_path / "p.toml"
    p.write_text(f'[model]\nid = "{LLAMA}"\n[vllm]\ntensor-parallel-size = 2\npipeline-parallel-size = 3\n')
    r = run_cli("serve", "--dry-run", "--json", "--machine", str(snap), str(p))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert problems(doc, documented()["vllm-guard.dry-run/1"]) == []
    assert doc["check"]["schema"] == "vllm-guard.cluster-check/1" and doc["check"]["placement"]["ranks"]
    assert "--distributed-executor-backend" in doc["argv"]


def test_a_leftover_local_cluster_file_fails_fast_not_after_minutes_of_retries(tmp_path: Path) -> None:
    """`ray start --head` leaves its address in $RAY_TMPDIR/ray/ray_current_cluster; after the cluster is gone,
    ray.init("auto") retried that address for minutes. The guard reads it and looks with a quick TCP connect."""
    import socket
    import time

    from tests.ray_nodes import need_ray

    need_ray()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{port}")
    p = profile(tmp_path)
    start = time.monotonic()
    r = run_cli("check", str(p.path), env={"RAY_TMPDIR": str(tmp_path), "RAY_ADDRESS": ""})
    assert r.code == 4 and "the cluster last started on this machine" in r.err, r.err
    assert time.monotonic() - start < 30
