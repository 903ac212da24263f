"""Facts from every alive node of a Ray cluster, gathered by Ray itself: one pinned task per node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from vllm_guard.cluster.nodeprobe import probe_node, probe_node_machine
from vllm_guard.cluster.rayapi import Answer, Connection, NodeEntry
from vllm_guard.errors import SnapshotError
from vllm_guard.facts.cluster import NODE_ENV_NAMES, ClusterFacts, NodeFacts
from vllm_guard.facts.machine import Gpu, Machine


def node_names(entries: Sequence[NodeEntry]) -> dict[str, str]:
    """The hostname of each node; where two share one (containers, a test cluster), with the node id's start."""
    counts = Counter(e.hostname or e.ip or "?" for e in entries)
    out = {}
    for e in entries:
        base = e.hostname or e.ip or "?"
        out[e.node_id] = base if counts[base] == 1 else f"{base}#{e.node_id[:6]}"
    return out


def _interface_of(ip: str | None, interfaces: Mapping[str, Sequence[str]]) -> str | None:
    return next((name for name, addrs in interfaces.items() if ip is not None and ip in addrs), None)


def node_facts(entry: NodeEntry, name: str, answer: Answer) -> NodeFacts:
    base = NodeFacts(node_id=entry.node_id, name=name, ip=entry.ip, hostname=entry.hostname,
                     is_head=entry.is_driver_node, ray_gpus=int(entry.gpus) if entry.gpus is not None else None,
                     ray_gpus_free=int(entry.gpus_free) if entry.gpus_free is not None else None)
    value = answer.value
    if answer.error is not None or not isinstance(value, dict):
        return NodeFacts(**{**_fields(base), "error": answer.error or "the probe returned nothing"})
    try:
        machine = Machine.from_dict(value["machine"], origin=f"node {name}")
    except SnapshotError as e:
        return NodeFacts(**{**_fields(base), "error": e.message})
    interfaces: Mapping[str, Sequence[str]] = value.get("interfaces") or {}
    return NodeFacts(**{
        **_fields(base), "machine": machine, "machine_source": value.get("machine_source"),
        "versions": dict(value.get("versions") or {}), "model_readable": value.get("model_readable"),
        "model_where": value.get("model_where"), "interface": _interface_of(entry.ip, interfaces),
        "interfaces": tuple(sorted(interfaces)), "route_ip": value.get("route_ip"),
        "env": dict(value.get("env") or {}), "answered_s": answer.seconds,
    })


def _fields(n: NodeFacts) -> dict[str, Any]:
    return {k: getattr(n, k) for k in n.__dataclass_fields__}


def gather_cluster(conn: Connection, *, model: str, revision: str | None, env_names: Sequence[str],
                   timeout_s: float) -> ClusterFacts:
    """Probe every alive node in parallel; a node that does not answer within ``timeout_s`` is a fact."""
    entries = conn.nodes()
    names = node_names(entries)
    answers = conn.run_on_nodes(probe_node, (model, revision, tuple(env_names)), [e.node_id for e in entries],
                                timeout_s)
    nodes = tuple(node_facts(e, names[e.node_id], a) for e, a in zip(entries, answers, strict=True))
    # The head first, then by name: the order the report lists them in.
    nodes = tuple(sorted(nodes, key=lambda n: (not n.is_head, n.name)))
    return ClusterFacts(address=conn.address, taken_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                        model=model, nodes=nodes, driver_ray_version=conn.ray_version(),
                        env_names=tuple(dict.fromkeys((*NODE_ENV_NAMES, *env_names))))


def gpu_prober(conn: Connection, node_ids: Sequence[str], timeout_s: float) -> Callable[[], tuple[Gpu, ...]]:
    """The GPUs of these nodes, probed again on each call by a task pinned to each node; a node that does not
    answer in time contributes none (unknown, so not judged)."""
    def probe() -> tuple[Gpu, ...]:
        out: list[Gpu] = []
        for answer in conn.run_on_nodes(probe_node_machine, (), node_ids, timeout_s):
            if answer.error is None and isinstance(answer.value, dict):
                try:
                    out += Machine.from_dict(answer.value, origin=f"node {answer.node_id[:6]}").gpus
                except SnapshotError:
                    continue
        return tuple(out)

    return probe
