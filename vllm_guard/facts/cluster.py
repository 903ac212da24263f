"""What every node of a Ray cluster said about itself: frozen, unit-named, JSON round-trippable.

``snapshot --cluster`` writes a ``ClusterFacts`` (schema ``vllm-guard.cluster/1``); ``--machine FILE``
reads it back for planning elsewhere. Each node's machine part is the single-machine snapshot
format (``vllm-guard.machine/1``). A node that did not answer has ``machine`` None and an ``error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_guard.errors import SnapshotError
from vllm_guard.facts.machine import Gpu, Machine

# The schema names live in vllm_guard/schemas.py, the one table of every document the guard writes.
from vllm_guard.schemas import CLUSTER as CLUSTER_SCHEMA

# The variables every node reports (set or not), besides the profile's [env] names.
NODE_ENV_NAMES = ("VLLM_HOST_IP", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_IB_DISABLE",
                  "CUDA_VISIBLE_DEVICES", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN")
VERSION_KEYS = ("vllm", "torch", "ray", "nccl", "python")


@dataclass(frozen=True)
class NodeFacts:
    node_id: str  # Ray's hex node id
    name: str  # for people: the hostname, with the node id's start when two nodes share one
    ip: str | None  # the address Ray registered the node under (NodeManagerAddress)
    hostname: str | None  # the host Ray runs on there (NodeManagerHostname): several nodes may share one
    is_head: bool  # the node the guard runs on: vLLM's driver (rank 0) runs there
    ray_gpus: int | None  # GPUs Ray schedules on the node (its "GPU" resource); None: none declared
    ray_gpus_free: int | None = None  # of those, not reserved by another job (a placement group, actors); None: unknown
    machine: Machine | None = None  # None: the node did not answer
    machine_source: str | None = None  # "nvml", "nvidia-smi", "none", or "snapshot FILE" (VLLMGUARD_MACHINE there)
    versions: dict[str, str | None] = field(default_factory=dict)  # VERSION_KEYS, as the node's Ray workers see them
    model_readable: bool | None = None  # None: not on the node, it would download it
    model_where: str | None = None
    interface: str | None = None  # the interface holding ``ip`` on the node
    interfaces: tuple[str, ...] = ()  # every interface the node has
    route_ip: str | None = None  # the address vLLM's get_ip() picks there when VLLM_HOST_IP is not set
    env: dict[str, str] = field(default_factory=dict)  # the variables that matter to vLLM on Ray, secrets masked
    error: str | None = None  # why there are no facts
    answered_s: float | None = None

    @property
    def answered(self) -> bool:
        return self.machine is not None

    @property
    def usable_gpus(self) -> tuple[Gpu, ...]:
        """The GPUs Ray hands out there: Ray numbers its GPU resource from the node's visible devices, so
        with N declared the first N (by NVML index, as CUDA_DEVICE_ORDER=PCI_BUS_ID orders them)."""
        if self.machine is None:
            return ()
        gpus = tuple(sorted(self.machine.gpus, key=lambda g: g.index))
        return gpus if self.ray_gpus is None else gpus[: self.ray_gpus]

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "name": self.name, "ip": self.ip, "hostname": self.hostname,
            "is_head": self.is_head,
            "ray_gpus": self.ray_gpus, "ray_gpus_free": self.ray_gpus_free,
            "machine": self.machine.to_dict() if self.machine else None,
            "machine_source": self.machine_source, "versions": dict(self.versions),
            "model_readable": self.model_readable, "model_where": self.model_where, "interface": self.interface,
            "interfaces": list(self.interfaces), "route_ip": self.route_ip, "env": dict(self.env), "error": self.error,
            "answered_s": self.answered_s,
        }


@dataclass(frozen=True)
class ClusterFacts:
    address: str
    taken_at: str
    model: str  # the model whose readability each node reported
    nodes: tuple[NodeFacts, ...]
    driver_ray_version: str | None = None  # the Ray the guard connected with
    notes: tuple[str, ...] = ()
    schema: str = CLUSTER_SCHEMA
    env_names: tuple[str, ...] = NODE_ENV_NAMES  # the variables each node was asked about

    @property
    def head(self) -> NodeFacts | None:
        return next((n for n in self.nodes if n.is_head), None)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "address": self.address, "taken_at": self.taken_at, "model": self.model,
                "driver_ray_version": self.driver_ray_version, "nodes": [n.to_dict() for n in self.nodes],
                "notes": list(self.notes), "env_names": list(self.env_names)}

    @classmethod
    def from_dict(cls, data: Any, *, origin: str = "snapshot") -> ClusterFacts:
        """Read a cluster snapshot; refuse what is malformed or from another schema.

        Raises:
            SnapshotError: naming the key that is wrong.
        """
        def bad(key: str, message: str) -> SnapshotError:
            return SnapshotError(f"{origin}: {key}: {message}",
                                 hint="take it again with `vllm-guard snapshot --cluster -o FILE` (docs/ray.md)")

        if not isinstance(data, dict) or data.get("schema") != CLUSTER_SCHEMA:
            got = data.get("schema") if isinstance(data, dict) else data
            raise bad("schema", f"expected {CLUSTER_SCHEMA!r}, got {got!r}")
        nodes_raw = data.get("nodes")
        if not isinstance(nodes_raw, list):
            raise bad("nodes", "expected a list")
        nodes = []
        for i, n in enumerate(nodes_raw):
            where = f"nodes[{i}]"
            if not isinstance(n, dict):
                raise bad(where, "expected an object")
            for key, kind in (("node_id", str), ("name", str), ("is_head", bool)):
                if not isinstance(n.get(key), kind):
                    raise bad(f"{where}.{key}", f"expected {kind.__name__}, got {n.get(key)!r}")
            machine = Machine.from_dict(n["machine"], origin=f"{origin}: {where}.machine") if n.get("machine") else None
            versions = n.get("versions") or {}
            env = n.get("env") or {}
            if not isinstance(versions, dict) or not isinstance(env, dict):
                raise bad(where, "versions and env must be objects")
            ray_gpus = n.get("ray_gpus")
            if ray_gpus is not None and (not isinstance(ray_gpus, int) or isinstance(ray_gpus, bool) or ray_gpus < 0):
                raise bad(f"{where}.ray_gpus", f"expected a non-negative integer or null, got {ray_gpus!r}")
            free = n.get("ray_gpus_free")
            nodes.append(NodeFacts(
                node_id=n["node_id"], name=n["name"], ip=_opt_str(n, "ip"), hostname=_opt_str(n, "hostname"),
                is_head=n["is_head"], ray_gpus=ray_gpus,
                ray_gpus_free=free if isinstance(free, int) and not isinstance(free, bool) else None,
                machine=machine, machine_source=_opt_str(n, "machine_source"),
                versions={str(k): (str(v) if v is not None else None) for k, v in versions.items()},
                model_readable=n.get("model_readable") if isinstance(n.get("model_readable"), bool) else None,
                model_where=_opt_str(n, "model_where"), interface=_opt_str(n, "interface"),
                interfaces=tuple(str(x) for x in n.get("interfaces") or ()), route_ip=_opt_str(n, "route_ip"),
                env={str(k): str(v) for k, v in env.items()}, error=_opt_str(n, "error"),
                answered_s=n.get("answered_s") if isinstance(n.get("answered_s"), (int, float)) else None,
            ))
        for key in ("address", "taken_at", "model"):
            if not isinstance(data.get(key), str):
                raise bad(key, f"expected a string, got {data.get(key)!r}")
        return cls(address=data["address"], taken_at=data["taken_at"], model=data["model"], nodes=tuple(nodes),
                   driver_ray_version=_opt_str(data, "driver_ray_version"),
                   notes=tuple(str(x) for x in data.get("notes") or ()),
                   env_names=tuple(str(x) for x in data.get("env_names") or NODE_ENV_NAMES))


def _opt_str(d: dict[str, Any], key: str) -> str | None:
    value = d.get(key)
    return value if isinstance(value, str) else None
