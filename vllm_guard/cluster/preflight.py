"""The preflight of a profile on a Ray cluster: cluster facts -> placement -> checks, per node.

The head's own checks (the model, the heads' divisibility, the API port, the executable) are the
single-machine ones; those that judge one host's GPUs, memory and disk are judged per node instead
(``PER_NODE``), and the cluster checks are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from vllm_guard.cluster.checks import IFNAME_VARS, ClusterContext, run_cluster_checks
from vllm_guard.cluster.placement import Placement, place
from vllm_guard.cluster.target import RAY, RayTarget
from vllm_guard.facts.cluster import ClusterFacts
from vllm_guard.facts.machine import Facts, Host, Machine
from vllm_guard.facts.model import ModelFacts
from vllm_guard.preflight.findings import SKIP, Finding
from vllm_guard.preflight.fix import checked
from vllm_guard.preflight.memory_params import Params
from vllm_guard.preflight.run import Preflight
from vllm_guard.profile.model import Profile

# Single-machine check -> the cluster check that judges it on every node.
PER_NODE = {"gpu.present": "cluster.gpus", "gpu.count": "cluster.gpus", "gpu.free_memory": "cluster.free_memory",
            "model.kv_fit": "cluster.kv_fit", "host.ram": "cluster.host_ram", "host.shm": "cluster.shm",
            "host.disk": "cluster.model_readable"}


@dataclass(frozen=True)
class ClusterPreflight:
    pre: Preflight
    facts: Facts  # the head's view: its machine, the placement's GPUs in rank order
    cluster: ClusterFacts
    placement: Placement
    target: RayTarget


def ray_profile(profile: Profile, target: RayTarget) -> Profile:
    """The profile vLLM gets: with --distributed-executor-backend ray when the guard chose Ray."""
    return profile.with_value("distributed_executor_backend", RAY) if target.backend_added else profile


def _empty_machine(cluster: ClusterFacts) -> Machine:
    return Machine(taken_at=cluster.taken_at or datetime.now(timezone.utc).isoformat(), hostname=None, source="none",
                   driver_version=None, cuda_driver_version=None, gpus=(),
                   host=Host(None, None, None, None, None, None, None, None, None))


def cluster_preflight(profile: Profile, cluster: ClusterFacts, model: ModelFacts, target: RayTarget, *,
                      origin: str, environ: Mapping[str, str], live: Mapping[str, Any] | None) -> ClusterPreflight:
    """Place the ranks, run the head's checks and the cluster's. ``live``: the head's live facts (port,
    executable), None when planning from a cluster snapshot."""
    profile = ray_profile(profile, target)
    tp = max(int(profile.value("tensor_parallel_size") or 1), 1)
    pp = max(int(profile.value("pipeline_parallel_size") or 1), 1)
    placement = place(cluster.nodes, tp, pp, tp_across_nodes=bool(profile.setting("ray-tensor-parallel-across-nodes")))
    head = cluster.head
    machine = head.machine if head is not None and head.machine is not None else _empty_machine(cluster)
    # The placement's GPUs in rank order; when there is none, the usable ones, so the memory model still speaks.
    gpus = tuple(r.gpu for r in placement.ranks) or tuple(
        g for n in cluster.nodes for g in n.usable_gpus)[: placement.world_size]
    allow_long = "1" in (environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"), profile.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    facts = Facts(machine, origin, gpus, None, model, live=live is not None, environ_allows_long_len=allow_long,
                  **(live or {}))
    pre = checked(profile, facts)  # alternatives offered only once they pass (fix.verify_alternatives)
    head_findings = [Finding(f.id, SKIP, f"judged per node: see {PER_NODE[f.id]}") if f.id in PER_NODE else f
                     for f in pre.findings]
    names = {**profile.env, **{k: environ[k] for k in IFNAME_VARS if environ.get(k) and k not in profile.env}}
    ctx = ClusterContext(profile=pre.profile, cluster=cluster, placement=placement, model=model,
                         params=Params.from_values(pre.profile.value, pre.profile.is_set), environ_names=names)
    notes = [f"Ray: {target.reason}; cluster at {target.address} ({target.origin})", *cluster.notes]
    if target.backend_added:
        notes.append("the guard adds --distributed-executor-backend ray to vLLM's command line")
    pre = replace(pre, findings=head_findings + run_cluster_checks(ctx), notes=(*notes, *pre.notes))
    return ClusterPreflight(pre, facts, cluster, placement, target)
