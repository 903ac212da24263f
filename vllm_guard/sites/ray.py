"""A Ray cluster: every node probed by a Ray task pinned to it (live), or read from a cluster snapshot.

The site owns the cluster connection: it opens it, keeps it while `serve` holds the launch locks on every node
of the placement (one lock actor per node), and closes both.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from vllm_guard.sites import LaunchHooks, with_notes

if TYPE_CHECKING:
    from vllm_guard.cluster.preflight import ClusterPreflight
    from vllm_guard.cluster.target import RayTarget
    from vllm_guard.facts.cluster import ClusterFacts
    from vllm_guard.facts.machine import Facts
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.preflight.run import Preflight
    from vllm_guard.profile.model import Profile


@dataclass
class RaySite:
    cp: ClusterPreflight
    target: str
    connection: Any = None  # the live cluster's rayapi.Connection while serve holds it; None otherwise
    _closers: list[Any] = field(default_factory=list)

    @property
    def facts(self) -> Facts:
        return self.cp.facts

    @property
    def pre(self) -> Preflight:
        return self.cp.pre

    @classmethod
    def from_snapshot(cls, profile: Profile, environ: Mapping[str, str], machine_file: str,
                      cluster: ClusterFacts, *, target: str) -> RaySite:
        from vllm_guard import probes
        from vllm_guard.cluster.preflight import cluster_preflight
        from vllm_guard.cluster.target import RAY, RayTarget

        backend_added = profile.value("distributed_executor_backend") != RAY
        ray = RayTarget(cluster.address, f"snapshot {machine_file}", f"the cluster snapshot {machine_file}",
                        backend_added)
        cp = cluster_preflight(profile, cluster, probes.probe_model_for(profile, environ), ray,
                               origin=f"cluster snapshot {machine_file}", environ=environ, live=None)
        return cls._made(cp, profile, target, None)

    @classmethod
    def live(cls, profile: Profile, environ: Mapping[str, str], ray: RayTarget, *, keep_connection: bool,
             target: str, local_ignored: str | None = None) -> RaySite:
        """The preflight on the live cluster; with ``keep_connection`` the connection stays open for the launch.

        Raises:
            RayMissing, RayUnreachable: no ray here, or no cluster at the address (exit 4).
        """
        from vllm_guard import probes
        from vllm_guard.cluster.gather import gather_cluster
        from vllm_guard.cluster.preflight import cluster_preflight
        from vllm_guard.cluster.rayapi import Connection, ray_output_to_stderr
        from vllm_guard.cluster.trust import local_cluster_address

        model = probes.probe_model_for(profile, environ)
        with ray_output_to_stderr():  # Ray's own text never lands on stdout before the guard's report
            conn: Any = Connection(ray.address, local_cluster=local_cluster_address(environ),
                                   local_ignored=local_ignored).open()
            try:
                cluster = gather_cluster(conn, model=profile.model,
                                         revision=profile.value("revision") or profile.revision,
                                         env_names=tuple(profile.env),
                                         timeout_s=float(profile.setting("ray-node-timeout")))
                cp = cluster_preflight(profile, cluster, model, ray, origin=f"Ray cluster at {ray.address}",
                                       environ=environ, live=probes.live_facts(profile, environ))
            except BaseException:
                conn.close()
                raise
            if not keep_connection:
                # Inside: Ray's error listener prints to sys.stdout (ray/_private/worker.py listen_error_messages,
                # "is_err": False) until the driver disconnects ("(raylet) Raylet is terminated ...").
                conn.close()
                conn = None
        return cls._made(cp, profile, target, conn)

    @classmethod
    def _made(cls, cp: ClusterPreflight, profile: Profile, target: str, conn: Any) -> RaySite:
        return cls(replace(cp, pre=with_notes(cp.pre, profile)), target, conn)

    def __enter__(self) -> RaySite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The lock actors first (they live on the connection), then the connection."""
        while self._closers:
            self._closers.pop().close()
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def plan(self, plan: LaunchPlan) -> LaunchPlan:
        """vLLM on Ray: the same command line, with RAY_ADDRESS when the guard was told the address (vLLM's
        ray.init reads RAY_ADDRESS, else the cluster started on its machine)."""
        ray = self.cp.target
        if ray.address == "auto" or ray.origin == "RAY_ADDRESS":
            return plan
        why = f"the cluster the guard checked ({ray.origin})"
        return replace(plan, env_set={**plan.env_set, "RAY_ADDRESS": ray.address},
                       env_reasons={**plan.env_reasons, "RAY_ADDRESS": why})

    def print_report(self, stream: TextIO, *, with_fix: bool) -> None:
        # No fix on a cluster: the one-fix search runs the one-machine preflight (preflight/fix.py).
        from vllm_guard.report.cluster import print_cluster_check

        print_cluster_check(self.cp, self.target, stream)

    def check_json(self) -> str:
        import json

        from vllm_guard.report.docs import cluster_check_doc

        return json.dumps(cluster_check_doc(self.cp, self.target), indent=2)

    def dry_run_json(self, plan: LaunchPlan, *, forced: bool, remembered: dict[str, Any]) -> str:
        from vllm_guard.report.docs import cluster_check_doc, dry_run_json

        return dry_run_json(self.pre, plan, cluster_check_doc(self.cp, self.target), forced=forced,
                            remembered=remembered)

    def launch_hooks(self) -> LaunchHooks:
        """The launch locks on every node of the placement (ClusterLocks), the GPUs of those nodes probed again
        by Ray tasks, and GPUs named by node. GPU UUIDs are unique across machines, so the supervisor matches
        them as on one machine."""
        from vllm_guard.cluster.gather import gpu_prober
        from vllm_guard.cluster.locks import ClusterLocks, per_node_gpus
        from vllm_guard.errors import UsageError

        cp = self.cp
        if self.connection is None:
            raise UsageError("a cluster snapshot plans a Ray start but cannot launch one: the launch locks are taken "
                             "on the live cluster's nodes", hint="serve --dry-run --machine CLUSTER.json, or serve on "
                             "the head node without --machine")
        names = {n.node_id: n.name for n in cp.cluster.nodes}
        holder = {"profile": str(cp.pre.profile.path or cp.pre.profile.model), "host": socket.gethostname()}
        locks = ClusterLocks(self.connection, per_node_gpus(cp.placement, names), cp.pre.profile.setting("lock-dir"),
                             holder)
        self._closers.append(locks)
        nodes = cp.placement.nodes_used() or [n.node_id for n in cp.cluster.nodes if n.answered]  # forced
        where = {r.gpu.uuid: r.node for r in cp.placement.ranks}
        probe = gpu_prober(self.connection, nodes, float(cp.pre.profile.setting("ray-node-timeout")))
        return LaunchHooks(gpu_probe=probe,
                           launch_locks=lambda _profile: locks,
                           gpu_label=lambda g: f"node {where.get(g.uuid, '?')} GPU {g.index}")
