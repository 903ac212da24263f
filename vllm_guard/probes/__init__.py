"""The probes: facts from the live machine (NVML, psutil, the Hub), or from a snapshot file.

`probe_machine` records this machine; `load_machine` reads a snapshot taken
elsewhere (``--machine FILE``). The model probe is separate, since a snapshot
describes a machine, not a model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllm_guard.facts.machine import Facts, Machine
from vllm_guard.facts.model import ModelFacts
from vllm_guard.probes.select import select_gpus
from vllm_guard.probes.snapshot import load_machine
from vllm_guard.profile.model import Profile, world_size


def probe_machine(
    *, environ: Mapping[str, str], nvml: Any = None, extra_disk_paths: tuple[str, ...] = ()
) -> Machine:
    """Take a snapshot of this machine. Never raises for a missing GPU or driver: that is a fact.

    ``nvml`` replaces the ``pynvml`` module (tests inject a small fake namespace).
    """
    from vllm_guard.probes import gpu, host

    g = gpu.probe_gpus(nvml_module=nvml)
    h = host.probe_host(disk_paths=(hf_cache_dir(environ), *extra_disk_paths))
    return Machine(
        taken_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        hostname=os.uname().nodename,  # what socket.gethostname() answers, without importing socket
        source=g.source,
        driver_version=g.driver_version,
        cuda_driver_version=g.cuda_driver_version,
        gpus=g.gpus,
        host=h,
        notes=g.notes,
        p2p=g.p2p,
    )


def hf_cache_dir(environ: Mapping[str, str]) -> str:
    """Where huggingface_hub keeps weights: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if environ.get("HF_HUB_CACHE"):
        return environ["HF_HUB_CACHE"]
    if environ.get("HF_HOME"):
        return str(Path(environ["HF_HOME"]) / "hub")
    home = environ.get("HOME") or str(Path.home())
    xdg = environ.get("XDG_CACHE_HOME") or str(Path(home) / ".cache")
    return str(Path(xdg) / "huggingface" / "hub")


def gather(profile: Profile, *, environ: Mapping[str, str], machine_file: str | None) -> Facts:
    """Facts for one profile: the machine (live or from a snapshot), the GPUs vLLM will see, the model."""
    download_dir = profile.value("download_dir")
    if machine_file:
        machine = load_machine(Path(machine_file))
        origin = machine_file
    else:
        machine = probe_machine(environ=environ, extra_disk_paths=(download_dir,) if download_dir else ())
        origin = "this machine"
    wanted = profile.setting("gpus")
    gpus, cuda_visible, notes = select_gpus(machine.gpus, wanted, environ.get("CUDA_VISIBLE_DEVICES"),
                                           world_size(profile))
    # Unified-memory GPUs (GH200-class) have no memory of their own in NVML: vLLM 0.33
    # then measures free memory as host available RAM (utils/mem_utils.py:144-151).
    gpus = tuple(
        replace(g, memory_total_bytes=machine.host.memory_total_bytes,
                memory_free_bytes=machine.host.memory_available_bytes)
        if g.unified_memory and g.memory_total_bytes is None else g
        for g in gpus
    )
    facts_model = probe_model_for(profile, environ)
    draft = probe_draft_for(profile, environ)
    allow_long = "1" in (environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"), profile.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    if machine_file:
        # The weights' presence in *this* machine's cache says nothing about the snapshot's machine.
        facts_model = replace(facts_model, weights_local=None if facts_model.source != "local" else True)
        return Facts(machine, origin, gpus, cuda_visible, facts_model, live=False,
                     environ_allows_long_len=allow_long, notes=tuple(notes), draft_model=draft)
    return Facts(machine, origin, gpus, cuda_visible, facts_model, live=True, environ_allows_long_len=allow_long,
                 notes=tuple(notes), draft_model=draft, **live_facts(profile, environ))


def probe_model_for(profile: Profile, environ: Mapping[str, str]) -> ModelFacts:
    """The model's facts as the profile names it (local directory, cache, Hub or bundled)."""
    from vllm_guard.probes import model

    download_dir = profile.value("download_dir")
    return model.probe_model(
        profile.model,
        revision=profile.value("revision") or profile.revision,
        environ=environ,
        cache_dir=download_dir or hf_cache_dir(environ),
        disable_sliding_window=bool(profile.value("disable_sliding_window")),
    )


def probe_draft_for(profile: Profile, environ: Mapping[str, str]) -> ModelFacts | None:
    """The facts of --speculative-config's "model" (an EAGLE head, a DFlash or draft model), found the way the
    target is; None without one, or when it names the target itself (MTP)."""
    from vllm_guard.probes import model

    spec = profile.value("speculative_config")
    name = spec.get("model") if isinstance(spec, Mapping) else None
    if not isinstance(name, str) or not name or name == profile.model:
        return None
    download_dir = profile.value("download_dir")
    return model.probe_model(name, revision=spec.get("revision") if isinstance(spec.get("revision"), str) else None,
                             environ=environ, cache_dir=download_dir or hf_cache_dir(environ))


def live_facts(profile: Profile, environ: Mapping[str, str]) -> dict[str, Any]:
    """What only the machine the guard runs on can say: the API port, the vLLM executable, the user."""
    from vllm_guard.probes import host, ports
    from vllm_guard.probes.vllm_build import probe_vllm_build

    uds = profile.value("uds")
    port_free = ports.unix_socket_free(uds) if uds else ports.port_free(profile.value("host"),
                                                                       int(profile.value("port") or 8000))
    vllm_path = host.find_executable(str(profile.setting("vllm")), environ.get("PATH"))
    return {"port_free": port_free, "vllm_path": vllm_path,
            "vllm_build": probe_vllm_build(vllm_path, {**environ, **profile.env}),
            "environ_cpu_kvcache_space": environ.get("VLLM_CPU_KVCACHE_SPACE"), "user": host.current_user()}
