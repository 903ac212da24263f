"""GPU facts: NVML first, nvidia-smi when the library cannot load, else "no GPU" as a fact."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from vllm_guard.probes import host, nvml, smi
from vllm_guard.probes.nvml import GpuProbe
from vllm_guard.shell import ShellError, which


def probe_gpus(*, nvml_module: Any = None, nvidia_smi: bool = True) -> GpuProbe:
    try:
        return _with_p2p(nvml.probe(nvml_module, process_info=host.gpu_process_info), nvidia_smi)
    except nvml.NvmlUnavailable as e:
        reason = str(e)
    if nvidia_smi and nvml_module is None and which("nvidia-smi"):
        try:
            return _with_p2p(smi.probe(process_info=host.gpu_process_info), nvidia_smi)
        except ShellError as e:
            reason += f"; nvidia-smi failed too: {e}"
    return GpuProbe("none", None, None, (), (reason,))


def _with_p2p(probe: GpuProbe, nvidia_smi: bool) -> GpuProbe:
    """Where NVML could not say (no nvmlDeviceGetP2PStatus, or NVML itself missing), ask `nvidia-smi topo -p2p r`."""
    if probe.p2p is not None or len(probe.gpus) < 2 or not nvidia_smi:
        return probe
    if not which("nvidia-smi"):
        return replace(probe, notes=(*probe.notes, "GPU peer-to-peer unknown: NVML could not say and nvidia-smi "
                                     "is not on PATH"))
    try:
        links = smi.probe_p2p()
    except ShellError as e:
        return replace(probe, notes=(*probe.notes, f"GPU peer-to-peer unknown: nvidia-smi topo -p2p r failed: {e}"))
    if links is None:
        return replace(probe, notes=(*probe.notes, "GPU peer-to-peer unknown: nvidia-smi topo -p2p r printed no "
                                     "matrix the guard could read"))
    return replace(probe, p2p=links, notes=(*probe.notes, "GPU peer-to-peer from nvidia-smi topo -p2p r"))
