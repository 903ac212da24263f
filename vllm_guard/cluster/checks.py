"""Pure: (profile, cluster facts, placement, model) -> findings with stable ids; every failure names the node.

The single-machine checks judge one host; these judge each node of a Ray cluster with the same
thresholds (``[guard.checks]``) and the same memory model, and the report shows the placement.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from vllm_guard.checkids import CLUSTER_CHECK_IDS
from vllm_guard.cluster.placement import Placement
from vllm_guard.facts.cluster import VERSION_KEYS, ClusterFacts, NodeFacts
from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.findings import FAIL, PASS, SKIP, WARN, Finding, gib, mib, settle
from vllm_guard.preflight.memory import DEFAULT_UTILIZATION, MIB, Estimate, estimate
from vllm_guard.preflight.memory_params import Params
from vllm_guard.profile.model import Profile
from vllm_guard.redact import is_secret_name

# vLLM 0.33 copies to its Ray workers the variables with these prefixes (vllm/ray/ray_env.py,
# get_env_vars_to_copy, with the prefixes its tests name); VLLM_HOST_IP and CUDA_VISIBLE_DEVICES are
# per worker and never copied. Anything else the workers need must be set on each node before `ray start`:
# a worker inherits the raylet's environment, not the driver's (vllm #6803).
COPIED_PREFIXES = ("VLLM_", "NCCL_", "HF_", "HUGGING_FACE_", "UCX_", "LMCACHE_")
PER_WORKER = ("VLLM_HOST_IP", "VLLM_HOST_PORT", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES")
# Interface variables that decide which network Gloo and NCCL use (vllm #7815: Gloo falling back to 127.0.0.1).
IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")


@dataclass(frozen=True)
class ClusterContext:
    profile: Profile
    cluster: ClusterFacts
    placement: Placement
    model: ModelFacts
    params: Params
    environ_names: Mapping[str, str]  # the variables the guard hands vLLM on the head: the profile's [env] and
    #                                   the ones of IFNAME_VARS set where the guard runs

    def setting(self, key: str) -> Any:
        return self.profile.check_setting(key)

    @property
    def answered(self) -> list[NodeFacts]:
        return [n for n in self.cluster.nodes if n.answered]

    def placed(self) -> list[NodeFacts]:
        """The nodes that take ranks, in rank order."""
        by_id = {n.node_id: n for n in self.cluster.nodes}
        return [by_id[nid] for nid in self.placement.nodes_used()]


def check_nodes(c: ClusterContext) -> Finding:
    silent = [n for n in c.cluster.nodes if not n.answered]
    measured = {"nodes": len(c.cluster.nodes), "answered": len(c.cluster.nodes) - len(silent)}
    if not c.cluster.nodes:
        return Finding("cluster.node_unreachable", FAIL, "the Ray cluster lists no alive node", "ray status", measured)
    if not silent:
        return Finding("cluster.node_unreachable", PASS, f"all {len(c.cluster.nodes)} nodes answered", None, measured)
    lines = [f"node {n.name} ({n.ip or '?'}): {n.error}" for n in silent]
    fix = ("Ray may place vLLM's workers on a node that does not answer: fix or remove it (`ray status`; on the "
           "node, `ray stop` then `ray start --address=HEAD:6379`)")
    if any("vllm-guard installed" in (n.error or "") for n in silent):  # the probe is the guard's own code
        fix = ("install vllm-guard on that node, in the Python that runs `ray start` (pip install "
               "'vllm-guard[ray]'); " + fix)
    return Finding("cluster.node_unreachable", FAIL, "\n".join(lines), fix, measured)


def check_gpus(c: ClusterContext) -> Finding:
    p = c.placement
    measured: dict[str, Any] = {f"{name}_gpus": count for name, count in p.usable.items()}
    required = {"world_size": p.world_size, "tensor_parallel": p.tensor_parallel, "pipeline_parallel":
                p.pipeline_parallel}
    mismatched = [(n, len(n.machine.gpus)) for n in c.answered if n.machine is not None and n.ray_gpus is not None
                  and n.ray_gpus > len(n.machine.gpus)]
    if not p.fits:
        return Finding("cluster.gpus", FAIL, str(p.problem), "add a node with GPUs, or a smaller "
                       "--tensor-parallel-size / --pipeline-parallel-size; vLLM would wait up to 1800 s for a "
                       "placement group that cannot be had", measured, required)
    reserved = [(n, len(p.gpus_on(n.node_id))) for n in c.placed()
                if n.ray_gpus_free is not None and n.ray_gpus_free < len(p.gpus_on(n.node_id))]
    if reserved:
        lines = [f"node {n.name}: Ray has {n.ray_gpus_free} of its {n.ray_gpus} GPUs free, the placement needs "
                 f"{need}; the others are reserved by another job's placement group or actors" for n, need in reserved]
        return Finding("cluster.gpus", FAIL, "\n".join(lines), "stop the other job (`ray status`, `ray list "
                       "placement-groups`), or wait for it; vLLM's placement group would wait for those GPUs up to "
                       "1800 s", measured, required)
    if mismatched:
        lines = [f"node {n.name}: Ray schedules {n.ray_gpus} GPUs, NVML sees {seen}" for n, seen in mismatched]
        return Finding("cluster.gpus", FAIL, "\n".join(lines), "start Ray there without --num-gpus (Ray counts the "
                       "visible GPUs), or check CUDA_VISIBLE_DEVICES before `ray start`", measured, required)
    per_node = ", ".join(f"{name} {count}" for name, count in p.usable.items())
    return Finding("cluster.gpus", PASS, f"{p.world_size} ranks placed over {len(p.nodes_used())} node(s); usable "
                   f"GPUs: {per_node}", None, measured, required)


def check_versions(c: ClusterContext) -> Finding:
    nodes = c.answered
    if not nodes:
        return Finding("cluster.versions", SKIP, "no node answered")
    head = next((n for n in nodes if n.is_head), nodes[0])
    lines: list[str] = []
    measured: dict[str, Any] = {}
    for key in VERSION_KEYS:
        seen = {n.name: _comparable(key, n.versions.get(key)) for n in nodes}
        measured[key] = sorted({v or "missing" for v in seen.values()})
        if len(set(seen.values())) <= 1:
            continue
        want = seen[head.name]
        for n in nodes:
            if seen[n.name] != want:
                lines.append(f"node {n.name} has {key} {n.versions.get(key) or 'not installed'}, the head "
                             f"{head.name} {head.versions.get(key) or 'not installed'}")
    if c.cluster.driver_ray_version and head.versions.get("ray") not in (None, c.cluster.driver_ray_version):
        lines.append(f"the guard runs Ray {c.cluster.driver_ray_version}, the cluster {head.versions.get('ray')}")
    if lines:
        return Finding("cluster.versions", FAIL, "\n".join(lines), "install the same vLLM, torch, Ray and Python on "
                       "every node (the same container image is the simple way); mismatches fail late and obscurely",
                       measured)
    if all(n.versions.get("vllm") is None for n in nodes):
        return Finding("cluster.versions", WARN, "vLLM is not installed in the Python of the nodes' Ray workers",
                       "install vLLM in the environment that runs `ray start` on each node", measured)
    return Finding("cluster.versions", PASS, f"the same versions on {len(nodes)} node(s): vLLM "
                   f"{head.versions.get('vllm')}, torch {head.versions.get('torch') or '?'}, Ray "
                   f"{head.versions.get('ray') or '?'}, Python {head.versions.get('python') or '?'}", None, measured)


def _comparable(key: str, version: str | None) -> str | None:
    # Python must agree in major.minor (Ray refuses to mix them: "Version mismatch"), packages exactly.
    if key == "python" and version:
        return ".".join(version.split(".")[:2])
    return version


def check_model_readable(c: ClusterContext) -> Finding:
    if c.cluster.model != c.profile.model:
        # A snapshot answers for the model it was taken with (snapshot --cluster --model), not for this one.
        recorded = f"of {c.cluster.model}" if c.cluster.model else "of no model"
        return Finding("cluster.model_readable", SKIP, f"the cluster snapshot recorded whether the nodes can read a "
                       f"model {recorded}, not {c.profile.model}",
                       f"vllm-guard snapshot --cluster --model {c.profile.model} -o FILE, or check on the live cluster")
    placed = c.placed() or c.answered
    missing = [n for n in placed if n.model_readable is False]
    download = [n for n in placed if n.model_readable is None]
    if missing:
        return Finding("cluster.model_readable", FAIL, "\n".join(f"node {n.name}: {n.model_where}" for n in missing),
                       "put the weights at the same path on every node, or a shared cache (HF_HOME on shared "
                       "storage), or let each node download them (unset HF_HUB_OFFLINE there)",
                       {"unreadable_on": [n.name for n in missing]})
    headroom = float(c.setting("disk-headroom"))
    short = [(n, d) for n in download if n.machine is not None and n.machine.host.disks and c.model.weights_bytes
             and (d := n.machine.host.disks[0]).free_bytes is not None
             and d.free_bytes < c.model.weights_bytes * (1 + headroom)]
    if short:  # the first disk a node records is its Hugging Face cache's (probes.probe_machine)
        return Finding("cluster.model_readable", FAIL, "\n".join(
            f"node {n.name}: would download {gib(c.model.weights_bytes)} to {d.path}, which has {gib(d.free_bytes)} "
            f"free" for n, d in short), "free disk there, or point HF_HOME at a larger (or shared) disk on that node",
            {"short_on": [n.name for n, _ in short]}, {"headroom": headroom})
    if download:
        return Finding("cluster.model_readable", WARN, "\n".join(f"node {n.name}: {n.model_where}" for n in download),
                       "download once to a shared cache, or pre-fetch on each node (`hf download MODEL`); a "
                       "gated model needs HF_TOKEN on every node", {"downloads_on": [n.name for n in download]})
    return Finding("cluster.model_readable", PASS, f"{c.model.model} is readable on {len(placed)} node(s)")


def _util(c: ClusterContext) -> float:
    return c.params.utilization or DEFAULT_UTILIZATION


def check_free_memory(c: ClusterContext) -> Finding:
    if not c.placement.fits:
        return Finding("cluster.free_memory", SKIP, "no placement to check")
    util, margin = _util(c), int(c.setting("free-memory-margin-mib")) * MIB
    lines, measured = [], {}
    for r in c.placement.ranks:
        g = r.gpu
        if g.memory_total_bytes is None or g.memory_free_bytes is None:
            lines.append(f"node {r.node} GPU {g.index}: free memory unknown")
            continue
        need = math.ceil(g.memory_total_bytes * util)  # vLLM 0.33 v1/worker/utils.py:761-770, on each worker
        measured[f"{r.node}_gpu{g.index}_free_bytes"] = g.memory_free_bytes
        if g.memory_free_bytes < need + margin:
            holders = sorted(g.processes or (), key=lambda p: -(p.used_memory_bytes or 0))
            who = "; ".join(f"pid {p.pid} {p.user or '?'} {p.name or '?'} {mib(p.used_memory_bytes)}" for p in holders)
            lines.append(f"node {r.node} GPU {g.index} (rank {r.rank}) has {gib(g.memory_free_bytes)} free of "
                         f"{gib(g.memory_total_bytes)}; utilization {util:g} needs {gib(need)} + {mib(margin)} margin"
                         + (f"; held by {who}" if who else ""))
    required = {"utilization": util, "margin_bytes": margin}
    if lines:
        return Finding("cluster.free_memory", FAIL, "\n".join(lines), "free those GPUs (never stop processes you do "
                       "not own), or lower --gpu-memory-utilization to what the fullest GPU leaves; one busy GPU "
                       "fails the whole start", measured, required)
    return Finding("cluster.free_memory", PASS, f"free memory covers utilization {util:g} on all "
                   f"{len(c.placement.ranks)} GPUs of the placement", None, measured, required)


def node_estimates(c: ClusterContext) -> list[tuple[NodeFacts, Estimate]]:
    """The memory estimate of each placed node, on its smallest placed GPU (vLLM sizes the KV cache of all
    workers by the smallest one)."""
    out = []
    for n in c.placed():
        sized = [g for g in c.placement.gpus_on(n.node_id) if g.memory_total_bytes]
        if sized:
            out.append((n, estimate(c.model, min(sized, key=lambda g: g.memory_total_bytes or 0), c.params)))
    return out


def check_kv_fit(c: ClusterContext) -> Finding:
    ests = [(n, e) for n, e in node_estimates(c) if e.kv_budget_bytes is not None and e.max_model_len]
    if not ests:
        return Finding("cluster.kv_fit", SKIP, "KV budget unknown (no placement, or GPU or model facts missing)")
    node, e = min(ests, key=lambda ne: ne[1].kv_budget_bytes or 0)
    assert e.max_model_len is not None and e.kv_budget_bytes is not None
    need = e.kv_needed_bytes(c.model, c.params, e.max_model_len) or 0
    measured = {"kv_budget_bytes": e.kv_budget_bytes, "kv_needed_bytes": need, "kv_tokens": e.kv_tokens,
                "smallest_node": node.name}
    required = {"max_model_len": e.max_model_len}
    if e.kv_budget_bytes <= 0 or need > e.kv_budget_bytes:
        fit = e.max_fitting_model_len or 0
        return Finding("cluster.kv_fit", FAIL, f"node {node.name}: one request of max-model-len {e.max_model_len} "
                       f"needs {gib(need)} of KV cache per GPU; its GPUs leave {gib(max(e.kv_budget_bytes, 0))} "
                       f"(the smallest node sizes every worker's cache)",
                       f"--max-model-len {fit}" if fit > 0 else "more GPUs per stage, or a quantized checkpoint",
                       {**measured, "max_fitting_model_len": fit}, required)
    return Finding("cluster.kv_fit", PASS, f"KV cache {gib(e.kv_budget_bytes)} per GPU = {e.kv_tokens:,} tokens on "
                   f"the smallest node {node.name}; {(e.max_concurrency or 0):.2f}x requests of {e.max_model_len} "
                   f"tokens fit", None, measured, required)


def check_host_ram(c: ClusterContext) -> Finding:
    weights = c.model.weights_bytes
    if weights is None or not c.placement.fits:
        return Finding("cluster.host_ram", SKIP, "weight size unknown, or no placement")
    factor = float(c.setting("host-ram-factor"))
    lines, measured = [], {}
    for n in c.placed():
        assert n.machine is not None
        share = len(c.placement.gpus_on(n.node_id)) / c.placement.world_size
        need = int(weights * share * factor)  # each worker loads its own shard through host memory
        have = n.machine.host.effective_memory_available_bytes
        measured[f"{n.name}_available_bytes"] = have
        if have is not None and have < need:
            lines.append(f"node {n.name}: {gib(have)} host memory available; its {share:.0%} of the weights "
                         f"({gib(weights * share)}) wants {factor:g}x = {gib(need)}")
    if lines:
        return Finding("cluster.host_ram", FAIL, "\n".join(lines), "free host memory on that node, raise its cgroup "
                       "limit, or add swap; the kernel OOM killer ends the worker without a message", measured,
                       {"factor": factor})
    return Finding("cluster.host_ram", PASS, f"host memory covers {factor:g}x each node's share of the weights",
                   None, measured, {"factor": factor})


def check_shm(c: ClusterContext) -> Finding:
    fail_at = int(c.setting("shm-fail-mib")) * MIB
    lines, measured = [], {}
    for n in c.placed():
        assert n.machine is not None
        free = n.machine.host.shm_free_bytes
        measured[f"{n.name}_shm_free_bytes"] = free
        if free is not None and len(c.placement.gpus_on(n.node_id)) > 1 and free < fail_at:
            lines.append(f"node {n.name}: /dev/shm has {mib(free)} free; its workers share it with NCCL")
    if lines:
        return Finding("cluster.shm", FAIL, "\n".join(lines), "on that node: docker run --ipc=host or --shm-size=8g",
                       measured, {"shm_free_bytes": fail_at})
    return Finding("cluster.shm", PASS, "/dev/shm is large enough on every node with several workers", None, measured)


def _loopback(ip: str | None) -> bool:
    try:
        return ip is not None and ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


def _ifname_matches(spec: str, interfaces: tuple[str, ...]) -> bool:
    """NCCL/Gloo interface lists: "eth" is a prefix, "=eth0" exact, "^docker" excludes; comma-separated."""
    wanted = [s.strip() for s in spec.split(",") if s.strip() and not s.strip().startswith("^")]
    if not wanted:
        return True
    return any((name == w[1:]) if w.startswith("=") else name.startswith(w) for w in wanted for name in interfaces)


def check_network(c: ClusterContext) -> Finding:
    nodes = c.answered
    hosts = {n.hostname or n.ip for n in nodes}
    multi_host = len(hosts) > 1
    lines: list[str] = []
    by_ip: dict[str, list[str]] = {}
    for n in nodes:
        if n.ip:
            by_ip.setdefault(n.ip, []).append(n.name)
        if multi_host and (_loopback(n.ip) or n.interface == "lo"):
            lines.append(f"node {n.name}: Ray registered it at {n.ip} ({n.interface or '?'}), a loopback address "
                         "the other nodes cannot reach")
        host_ip = n.env.get("VLLM_HOST_IP")
        if host_ip and n.ip and host_ip != n.ip:
            lines.append(f"node {n.name}: VLLM_HOST_IP={host_ip} but Ray knows the node as {n.ip}; vLLM's placement "
                         "group asks for node:<VLLM_HOST_IP> and waits forever")
        elif n.is_head and not host_ip and n.route_ip and n.ip and n.route_ip != n.ip:
            # vLLM's driver asks Ray for node:<get_ip()>; without VLLM_HOST_IP that is the default route's address.
            lines.append(f"node {n.name}: vLLM would take its address from the default route ({n.route_ip}) but Ray "
                         f"knows the node as {n.ip}; its placement group would wait forever for node:{n.route_ip} "
                         f"(set VLLM_HOST_IP={n.ip} before `ray start`, or start Ray with --node-ip-address)")
        for var in IFNAME_VARS:
            spec = n.env.get(var)
            if spec and n.interfaces and not _ifname_matches(spec, n.interfaces):
                lines.append(f"node {n.name}: {var}={spec} names no interface there "
                             f"(it has {', '.join(n.interfaces)})")
            if spec and multi_host and spec.strip().lstrip("=") == "lo":
                lines.append(f"node {n.name}: {var}=lo keeps {var.split('_')[0]} on loopback across hosts")
    if multi_host:
        lines += [f"nodes {', '.join(names)} share the IP {ip}: vLLM needs a unique IP per node"
                  for ip, names in by_ip.items() if len(names) > 1]
    measured = {n.name: f"{n.ip or '?'} ({n.interface or '?'})" for n in nodes}
    if lines:
        return Finding("cluster.network", FAIL, "\n".join(lines), "start Ray on each node with --node-ip-address on "
                       "the fast network, set VLLM_HOST_IP to that address and NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME "
                       "to its interface on every node, before `ray start` (docs/ray.md)", measured)
    return Finding("cluster.network", PASS, "node addresses and interface settings are consistent"
                   + ("" if multi_host else " (all nodes on one host)"), None, measured)


def check_env(c: ClusterContext) -> Finding:
    lines: list[str] = []
    unknown: list[str] = []
    for name, value in sorted(c.environ_names.items()):
        carried = name.startswith(COPIED_PREFIXES) and name not in PER_WORKER
        if carried:
            continue
        if name not in c.cluster.env_names:  # a snapshot taken without this profile: never asked, not unset
            unknown.append(name)
            continue
        for n in c.placed() or c.answered:
            if n.is_head:
                continue  # the head gets it from the guard
            have = n.env.get(name)
            if have is None:
                lines.append(f"node {n.name}: {name} is not set there, and vLLM does not copy it to its Ray workers")
            elif have != value and not is_secret_name(name):  # a secret's value is never compared or shown
                lines.append(f"node {n.name}: {name}={have} there, {value} on the head")
    not_asked = (f"; not recorded by the cluster snapshot, so not judged: {', '.join(unknown)}" if unknown else "")
    if lines:
        return Finding("cluster.env", WARN, "\n".join(lines) + not_asked, "set it on that node before `ray start` "
                       "(workers inherit the raylet's environment), or use a VLLM_/NCCL_/HF_ variable that vLLM copies")
    return Finding("cluster.env", PASS,
                   "the variables vLLM does not copy to its workers are the same on every node" + not_asked)


CLUSTER_CHECKS: tuple[Callable[[ClusterContext], Finding], ...] = (
    check_nodes, check_gpus, check_versions, check_model_readable, check_free_memory, check_kv_fit, check_host_ram,
    check_shm, check_network, check_env,
)


def run_cluster_checks(ctx: ClusterContext) -> list[Finding]:
    """Every cluster check, with the profile's skip and warn-only lists applied."""

    skip = set(ctx.profile.check_setting("skip"))
    warn_only = set(ctx.profile.check_setting("warn-only"))
    out = []
    for check, check_id in zip(CLUSTER_CHECKS, CLUSTER_CHECK_IDS, strict=True):
        out.append(settle(check_id, partial(check, ctx), skip, warn_only))
    return out
