"""A real multi-node Ray cluster on one machine (``ray.cluster_utils.Cluster``) for the cluster tests.

Each node gets its own facts the way a real node would have its own: a machine snapshot named by
VLLMGUARD_MACHINE in that node's environment (what the guard's node probe reads there), its own
site directory on PYTHONPATH holding the vLLM distribution metadata its Ray workers see (so one node
can run another vLLM version), and its own lock directory. The probes run as real Ray tasks on those
real Ray nodes. Kept small for a 2-core machine: one CPU and 80 MB of object store per node, no dashboard.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MACHINES, ROOT

GIB = 2**30
OBJECT_STORE_BYTES = 80 * 2**20


def need_ray() -> Any:
    """``ray``, or a skip saying why; under CI (RAY_REQUIRED=1) a missing Ray fails instead."""
    try:
        import ray
    except ImportError:
        if os.environ.get("RAY_REQUIRED") == "1":  # .ci/run: these tests must run, never skip
            pytest.fail("RAY_REQUIRED=1 but ray is not installed: pip install '.[test,ray]'", pytrace=False)
        pytest.skip("needs ray: pip install 'vllm-guard[ray]' (CI installs it and sets RAY_REQUIRED=1)")
    return ray


@dataclass
class NodeRig:
    name: str  # the snapshot's hostname, for the test's own bookkeeping
    dir: Path
    gpus: int
    vllm_version: str = "0.33.0"
    node: Any = None  # ray._private.node.Node
    busy: dict[int, int] = field(default_factory=dict)  # GPU index -> bytes another process holds

    @property
    def snapshot(self) -> Path:
        return self.dir / "machine.json"

    @property
    def site(self) -> Path:
        return self.dir / "site"

    @property
    def locks(self) -> Path:
        return self.dir / "locks"

    @property
    def node_id(self) -> str:
        return str(self.node.node_id)

    def write(self) -> None:
        """The node's machine snapshot (two A100 80 GB by default) and its vLLM metadata, as they are now."""
        base = json.loads((MACHINES / "a100-80gb-x2.json").read_text())
        gpu = base["gpus"][0]
        gpus = []
        for i in range(self.gpus):
            g = {**gpu, "index": i, "uuid": f"GPU-{self.name}-{i}", "pci_bus_id": f"00000000:0{i + 1}:00.0",
                 "processes": []}
            if i in self.busy:
                held = self.busy[i]
                g.update(memory_used_bytes=held, memory_free_bytes=g["memory_total_bytes"] - held,
                         processes=[{"pid": 4242, "name": "python3", "user": "bob", "used_memory_bytes": held,
                                     "orphaned_vllm": False}])
            gpus.append(g)
        self.snapshot.write_text(json.dumps({**base, "hostname": self.name, "gpus": gpus}))
        for old in self.site.glob("vllm-*.dist-info"):
            (old / "METADATA").unlink()
            old.rmdir()
        dist = self.site / f"vllm-{self.vllm_version}.dist-info"
        dist.mkdir(parents=True, exist_ok=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {self.vllm_version}\n")

    without_guard: bool = False  # a node where vllm-guard is not installed (its import fails there)

    def env(self) -> dict[str, str]:
        if self.without_guard:  # a vllm_guard package first on the path whose import fails, as a missing one does
            shadow = self.dir / "no-guard" / "vllm_guard"
            shadow.mkdir(parents=True, exist_ok=True)
            (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'vllm_guard'\")\n")
            return {"PYTHONPATH": f"{shadow.parent}{os.pathsep}{self.site}"}
        return {"VLLMGUARD_MACHINE": str(self.snapshot), "VLLMGUARD_LOCK_DIR": str(self.locks),
                "PYTHONPATH": f"{self.site}{os.pathsep}{ROOT}"}


class ClusterRig:
    """Head plus workers, each with declared GPUs and its own facts."""

    def __init__(self, tmp: Path, gpus: list[int]) -> None:
        from ray.cluster_utils import Cluster

        self.nodes = [NodeRig(f"node-{chr(ord('a') + i)}", tmp / f"node-{chr(ord('a') + i)}", n)
                      for i, n in enumerate(gpus)]
        for n in self.nodes:
            n.dir.mkdir(parents=True)
            n.write()
        head, *rest = self.nodes
        self.cluster = Cluster(initialize_head=True, head_node_args=self._args(head, include_dashboard=False))
        head.node = self.cluster.head_node
        for n in rest:
            n.node = self.cluster.add_node(**self._args(n))
        self.cluster.wait_for_nodes()
        self.address = self.cluster.address

    @staticmethod
    def _args(n: NodeRig, **extra: Any) -> dict[str, Any]:
        return {"num_cpus": 1, "num_gpus": n.gpus, "object_store_memory": OBJECT_STORE_BYTES, "env_vars": n.env(),
                **extra}

    def add(self, name: str, gpus: int, tmp: Path, *, without_guard: bool = False) -> NodeRig:
        n = NodeRig(name, tmp / name, gpus, without_guard=without_guard)
        n.dir.mkdir(parents=True)
        n.write()
        n.node = self.cluster.add_node(**self._args(n))
        self.cluster.wait_for_nodes()
        self.nodes.append(n)
        return n

    def remove(self, n: NodeRig) -> None:
        self.cluster.remove_node(n.node, allow_graceful=False)
        self.nodes.remove(n)

    def shutdown(self) -> None:
        self.cluster.shutdown()
