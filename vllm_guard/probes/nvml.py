"""The only module that imports `pynvml` (from nvidia-ml-py). Never creates a CUDA context.

Every query goes through ``_Nvml.query``: a function the driver does not
support becomes None plus a note, never 0 and never a traceback (nvitop's rule).
Command-line equivalents are given so a probe can be checked by hand.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_guard.facts.machine import P2P_NOT_SUPPORTED, P2P_OK, Gpu, GpuProcess, P2pLink


@dataclass(frozen=True)
class GpuProbe:
    source: str  # nvml | nvidia-smi | none
    driver_version: str | None
    cuda_driver_version: str | None
    gpus: tuple[Gpu, ...]
    notes: tuple[str, ...]
    # None: not read (fewer than two GPUs, or this nvidia-ml-py lacks nvmlDeviceGetP2PStatus: then
    # probes/gpu.py asks `nvidia-smi topo -p2p r`).
    p2p: tuple[P2pLink, ...] | None = None


# nvml.h's nvmlGpuP2PCapsIndex_t. Written as numbers on purpose: nvidia-ml-py 13.615's pynvml.py defines
# `NVML_P2P_CAPS_INDEX_READ = 0,` (a tuple, trailing comma), which ctypes cannot pass.
P2P_CAPS_INDEX_READ = 0
P2P_CAPS_INDEX_NVLINK = 2
# nvml.h's nvmlGpuP2PStatus_t: 0 is OK, 6 UNKNOWN, the rest say why P2P is not possible.
P2P_STATUS_REASONS = {1: "chipset not supported", 2: "GPU not supported", 3: "IOH topology not supported",
                      4: "disabled by registry key", 5: "not supported"}
P2P_STATUS_OK, P2P_STATUS_UNKNOWN = 0, 6


class NvmlUnavailable(Exception):
    """NVML could not start: no library, no driver, no permission. The message is the fact."""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class _Nvml:
    def __init__(self, module: Any) -> None:
        self.m = module
        self.notes: list[str] = []
        self.missing: set[str] = set()  # functions this nvidia-ml-py or this driver does not have

    def query(self, name: str, *args: Any, what: str) -> Any:
        """Call an NVML function; NotSupported or a missing function is None plus a note."""
        func: Callable[..., Any] | None = getattr(self.m, name, None)
        if func is None:
            self.missing.add(name)
            self.notes.append(f"{what}: {name} is missing from this nvidia-ml-py")
            return None
        try:
            return func(*args)
        except self.m.NVMLError as e:
            if isinstance(e, getattr(self.m, "NVMLError_FunctionNotFound", ())):
                self.missing.add(name)
                self.notes.append(f"{what}: the driver lacks {name}; is nvidia-ml-py newer than the driver?")
            elif isinstance(e, getattr(self.m, "NVMLError_NotSupported", ())):
                self.notes.append(f"{what}: not supported on this GPU or driver ({name})")
            else:
                self.notes.append(f"{what}: {name} failed: {e}")
            return None


def probe(module: Any = None, *, process_info: Callable[[int], dict[str, Any]] | None = None) -> GpuProbe:
    """Read every GPU through NVML.

    Equivalent: ``nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,memory.total,memory.used,
    memory.free,compute_cap,mig.mode.current --format=csv`` and ``--query-compute-apps``.

    Raises:
        NvmlUnavailable: the NVML library is missing, or the driver is not loaded or not accessible.
    """
    if module is None:
        try:
            import pynvml
        except ImportError as e:  # nvidia-ml-py not installed: a broken install, but still a fact
            raise NvmlUnavailable(f"nvidia-ml-py is not installed ({e})") from None
        module = pynvml
    try:
        module.nvmlInit()
    except module.NVMLError as e:
        if isinstance(e, getattr(module, "NVMLError_LibraryNotFound", ())):
            raise NvmlUnavailable("no NVIDIA driver: the NVML library (libnvidia-ml.so.1) was not found") from None
        if isinstance(e, getattr(module, "NVMLError_DriverNotLoaded", ())):
            raise NvmlUnavailable("no NVIDIA driver: the kernel module is not loaded") from None
        raise NvmlUnavailable(f"NVML could not start: {e}") from None
    nv = _Nvml(module)
    try:
        driver = _text(nv.query("nvmlSystemGetDriverVersion", what="driver version"))
        cuda = nv.query("nvmlSystemGetCudaDriverVersion_v2", what="CUDA driver version")
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        count = nv.query("nvmlDeviceGetCount", what="GPU count") or 0
        gpus = tuple(g for g in (_device(nv, i, process_info) for i in range(count)) if g is not None)
        links = p2p_links(nv, [g.index for g in gpus]) if len(gpus) > 1 else None
        return GpuProbe("nvml", driver, cuda_text, gpus, tuple(nv.notes), links)
    finally:
        with contextlib.suppress(module.NVMLError):
            module.nvmlShutdown()


def _device(nv: _Nvml, index: int, process_info: Callable[[int], dict[str, Any]] | None) -> Gpu | None:
    handle = nv.query("nvmlDeviceGetHandleByIndex", index, what=f"GPU {index}")
    if handle is None:
        return None
    what = f"GPU {index}"
    uuid = _text(nv.query("nvmlDeviceGetUUID", handle, what=f"{what} UUID")) or f"unknown-{index}"
    pci = nv.query("nvmlDeviceGetPciInfo", handle, what=f"{what} PCI bus id")
    memory = nv.query("nvmlDeviceGetMemoryInfo", handle, what=f"{what} memory")
    cc = nv.query("nvmlDeviceGetCudaComputeCapability", handle, what=f"{what} compute capability")
    mig = nv.query("nvmlDeviceGetMigMode", handle, what=f"{what} MIG mode")
    procs = nv.query("nvmlDeviceGetComputeRunningProcesses", handle, what=f"{what} processes")
    unified = memory is None or getattr(memory, "total", 0) == 0
    if unified:
        nv.notes.append(f"{what}: no memory information; a unified-memory GPU (GH200-class) uses host RAM")
    return Gpu(
        index=index,
        uuid=uuid,
        name=_text(nv.query("nvmlDeviceGetName", handle, what=f"{what} name")),
        pci_bus_id=_text(getattr(pci, "busId", None)) if pci is not None else None,
        memory_total_bytes=None if unified else int(memory.total),
        memory_used_bytes=None if unified else int(memory.used),
        memory_free_bytes=None if unified else int(memory.free),
        compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
        # A GPU without MIG support answers NotSupported: MIG is then certainly off.
        mig_enabled=bool(mig[0]) if mig is not None else False,
        processes=_processes(procs, process_info) if procs is not None else None,
        unified_memory=unified,
    )


def p2p_links(nv: _Nvml, indices: list[int]) -> tuple[P2pLink, ...] | None:
    """P2P read and NVLink status of every pair, as vLLM reads them (NvmlCudaPlatform.is_fully_connected asks
    NVML_P2P_CAPS_INDEX_NVLINK; custom all-reduce then needs CUDA peer access, which P2P read reports).

    Equivalent: ``nvidia-smi topo -p2p r`` and ``nvidia-smi topo -p2p n``. None when the function is missing
    from nvidia-ml-py or from the driver: the caller falls back to nvidia-smi.
    """
    handles = {i: nv.m.nvmlDeviceGetHandleByIndex(i) for i in indices}  # _device got them already
    links = []
    for n, a in enumerate(indices):
        for b in indices[n + 1:]:
            what = f"GPU {a}-{b} peer-to-peer"
            read = nv.query("nvmlDeviceGetP2PStatus", handles[a], handles[b], P2P_CAPS_INDEX_READ, what=what)
            if "nvmlDeviceGetP2PStatus" in nv.missing:
                return None  # missing from nvidia-ml-py, or the driver lacks it: nvidia-smi may know
            nvlink = nv.query("nvmlDeviceGetP2PStatus", handles[a], handles[b], P2P_CAPS_INDEX_NVLINK, what=what)
            links.append(P2pLink((a, b), _p2p_status(read), _p2p_status(nvlink),
                                 P2P_STATUS_REASONS.get(read) if isinstance(read, int) else None))
    return tuple(links)


def _p2p_status(code: Any) -> str | None:
    if not isinstance(code, int) or code == P2P_STATUS_UNKNOWN:
        return None
    return P2P_OK if code == P2P_STATUS_OK else P2P_NOT_SUPPORTED if code in P2P_STATUS_REASONS else None


def _processes(procs: Any, process_info: Callable[[int], dict[str, Any]] | None) -> tuple[GpuProcess, ...]:
    out = []
    for p in procs:
        info = process_info(int(p.pid)) if process_info is not None else {}
        used = getattr(p, "usedGpuMemory", None)  # None under MIG or without permission
        out.append(GpuProcess(
            pid=int(p.pid),
            name=info.get("name"),
            user=info.get("user"),
            used_memory_bytes=int(used) if isinstance(used, int) else None,
            orphaned_vllm=bool(info.get("orphaned_vllm", False)),
        ))
    return tuple(out)
