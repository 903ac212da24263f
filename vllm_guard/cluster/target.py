"""Whether a profile runs on a Ray cluster, and at which address. Pure: data in, data out.

vLLM 0.33 runs across nodes only with ``--distributed-executor-backend ray``; without it, a layout
larger than the node fails at once ("World size (N) is larger than the number of available GPUs
(M) in this node. If this is intentional and you are using: - ray, set '--distributed-executor-backend
ray'", vllm-reference §2l). So the guard takes the Ray path when the profile says ray, or when the
layout is larger than this machine's GPUs while a cluster is reachable; then it passes the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vllm_guard.profile.model import Profile, model_parallel_size

RAY = "ray"


@dataclass(frozen=True)
class RayTarget:
    address: str  # what ray.init gets: host:port, ray://..., or "auto" (the cluster started on this machine)
    origin: str  # where the address came from, for the report
    reason: str  # why this profile runs on Ray
    backend_added: bool  # the guard adds --distributed-executor-backend ray to vLLM's command line


def ray_address(profile: Profile, environ: Mapping[str, str], local_cluster: str | None) -> tuple[str, str] | None:
    """guard.ray-address, else RAY_ADDRESS, else the cluster started on this machine; None: none known."""
    setting = profile.setting("ray-address")
    if setting:
        return str(setting), "guard.ray-address"
    if environ.get("RAY_ADDRESS"):
        return environ["RAY_ADDRESS"], "RAY_ADDRESS"
    if local_cluster:
        return "auto", f"the Ray cluster started on this machine ({local_cluster})"
    return None


def ray_target(profile: Profile, environ: Mapping[str, str], *, local_gpus: int | None,
               local_cluster: str | None) -> RayTarget | None:
    """The Ray target of this profile, or None for a single machine.

    ``local_gpus``: the GPUs vLLM would see here (None: not probed yet; then only an explicit backend counts).
    """
    backend = profile.value("distributed_executor_backend")
    found = ray_address(profile, environ, local_cluster)
    if backend == RAY:
        address, origin = found or ("auto", "none given: the cluster started on this machine")
        return RayTarget(address, origin, "distributed-executor-backend = ray", backend_added=False)
    if backend not in (None, "") or found is None or local_gpus is None:
        return None
    need = model_parallel_size(profile)
    if need <= local_gpus:
        return None
    address, origin = found
    return RayTarget(address, origin, f"tensor x pipeline parallel = {need} GPUs, more than the {local_gpus} here, "
                     f"and a Ray cluster is reachable ({origin})", backend_added=True)
