"""Where the target runs: one machine or a Ray cluster, decided once (``open_site``).

A Site gives the facts and the preflight of the target where it runs, adds what that place needs to vLLM's
launch plan, renders its report, and hands the supervisor its launch hooks (the locks, the GPU probe, how a
GPU is named). `serve` and `check` go through this seam and hold no branch of their own on Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from vllm_guard.probes.select import gpu_label

if TYPE_CHECKING:
    from vllm_guard.facts.machine import Facts, Gpu
    from vllm_guard.launch.lock import LaunchLocks
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.preflight.run import Preflight
    from vllm_guard.profile.model import Profile


@dataclass(frozen=True)
class LaunchHooks:
    """What the supervisor needs of the place it starts vLLM in (each None: the one-machine default)."""

    gpu_probe: Callable[[], tuple[Gpu, ...]] | None = None  # None: no live re-checks (a snapshot)
    launch_locks: Callable[[Profile], LaunchLocks] | None = None  # None: this machine's per-GPU flocks
    gpu_label: Callable[[Gpu], str] = gpu_label


class Site(Protocol):
    """The target where it runs: its facts and preflight, its report, and what a launch there needs."""

    @property
    def facts(self) -> Facts: ...

    @property
    def pre(self) -> Preflight: ...

    def plan(self, plan: LaunchPlan) -> LaunchPlan:
        """vLLM's launch plan with what this place adds (RAY_ADDRESS on a cluster)."""

    def print_report(self, stream: TextIO, *, with_fix: bool) -> None:
        """The preflight report for people; ``with_fix``: with the one fix that passes (check, --dry-run)."""

    def check_json(self) -> str:
        """`check --json`'s document."""

    def dry_run_json(self, plan: LaunchPlan, *, forced: bool, remembered: dict[str, Any]) -> str:
        """`serve --dry-run --json`'s document (``remembered``: the relaxations the plan starts from)."""

    def launch_hooks(self) -> LaunchHooks:
        """What the supervisor needs here. Raises UsageError where nothing can be launched (a cluster snapshot)."""

    def close(self) -> None:
        """Let go of what the site holds (a Ray connection and its lock actors)."""

    def __enter__(self) -> Site: ...

    def __exit__(self, *exc: object) -> None: ...


def open_site(profile: Profile, environ: Mapping[str, str], machine_file: str | None, *, keep_connection: bool,
              target: str) -> Site:
    """The one decision: this machine (live or a machine snapshot) or a Ray cluster (live or a cluster snapshot).

    A Ray profile (or more GPUs than this machine has, with a cluster to run on) goes to the cluster; a cluster
    snapshot under --machine plans the cluster. ``keep_connection``: a live cluster's connection stays open for
    the launch (serve), else it is closed once the facts are in.

    Raises:
        RayMissing, RayUnreachable: the target needs Ray and Ray or the cluster is not there (exit 4).
    """
    from vllm_guard.probes.snapshot import read_cluster_snapshot

    cluster_file = read_cluster_snapshot(machine_file)
    if cluster_file is not None:
        from vllm_guard.sites.ray import RaySite

        return RaySite.from_snapshot(profile, environ, machine_file or "", cluster_file, target=target)
    if machine_file is not None:  # a machine snapshot plans one machine
        from vllm_guard.sites.local import LocalSite

        return LocalSite.open(profile, environ, machine_file, target=target)
    from vllm_guard.cluster import trust
    from vllm_guard.cluster.target import ray_target

    found = trust.local_cluster(environ)
    local_cluster = found.address
    ray = ray_target(profile, environ, local_gpus=None, local_cluster=local_cluster)
    if ray is None:
        from vllm_guard.sites.local import LocalSite

        site = LocalSite.open(profile, environ, None, target=target)
        # More GPUs than this machine has may still be a cluster's job.
        ray = ray_target(profile, environ, local_gpus=len(site.facts.gpus), local_cluster=local_cluster)
        if ray is None:
            if found.ignored and ray_target(profile, environ, local_gpus=len(site.facts.gpus),
                                            local_cluster="ignored") is not None:
                # The untrusted file would have sent this profile to a cluster: say why it did not.
                site.pre = replace(site.pre, notes=(*site.pre.notes, f"not a Ray cluster: {found.ignored}"))
            return site
    from vllm_guard.sites.ray import RaySite

    return RaySite.live(profile, environ, ray, keep_connection=keep_connection, target=target,
                        local_ignored=found.ignored)


def with_notes(pre: Preflight, profile: Profile) -> Preflight:
    """Every report says which vLLM will run and where each value came from (``profile.model.table_notes``)."""
    from vllm_guard.profile.model import table_notes

    return replace(pre, notes=(*table_notes(profile), *profile.notes, *pre.notes))
