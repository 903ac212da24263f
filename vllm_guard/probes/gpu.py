"""GPU facts: NVML first, nvidia-smi when the library cannot load, else "no GPU" as a fact."""

from __future__ import annotations

from typing import Any

from vllm_guard.probes import host, nvml, smi
from vllm_guard.probes.nvml import GpuProbe
from vllm_guard.shell import ShellError, which


def probe_gpus(*, nvml_module: Any = None, nvidia_smi: bool = True) -> GpuProbe:
    try:
        return nvml.probe(nvml_module, process_info=host.gpu_process_info)
    except nvml.NvmlUnavailable as e:
        reason = str(e)
    if nvidia_smi and nvml_module is None and which("nvidia-smi"):
        try:
            return smi.probe(process_info=host.gpu_process_info)
        except ShellError as e:
            reason += f"; nvidia-smi failed too: {e}"
    return GpuProbe("none", None, None, (), (reason,))
