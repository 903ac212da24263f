"""A small fake of the `pynvml` namespace: only the functions the NVML probe calls.

Injected into ``probe_machine(nvml=...)``; nothing of ours is patched.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

MIB = 2**20
GIB = 2**30


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


class NVMLError_FunctionNotFound(NVMLError):
    pass


NOT_SUPPORTED = "not supported"


@dataclass
class Device:
    name: str
    total: int
    used: int
    cc: tuple[int, int]
    uuid: str = ""
    bus: str = "00000000:01:00.0"
    mig: Any = (0, 0)  # (current, pending), or NOT_SUPPORTED
    procs: Any = field(default_factory=list)  # [(pid, used bytes or None)], or NOT_SUPPORTED
    memory: Any = True  # False: NotSupported (unified memory)


class FakeNvml:
    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound

    # nvidia-ml-py's own constants, as its pynvml.py (13.615) writes them: READ is a tuple there.
    NVML_P2P_CAPS_INDEX_READ = (0,)
    NVML_P2P_CAPS_INDEX_NVLINK = 2

    def __init__(self, devices: list[Device], *, driver: str = "580.95.05", cuda: int = 13000,
                 init_error: type[NVMLError] | None = None, p2p_read: dict[tuple[int, int], int] | None = None,
                 p2p_nvlink: dict[tuple[int, int], int] | None = None,
                 p2p_error: type[NVMLError] | None = None) -> None:
        """``p2p_read`` / ``p2p_nvlink``: NVML status codes per pair of indices (absent pairs: 0, OK);
        ``p2p_error``: what nvmlDeviceGetP2PStatus raises instead (FunctionNotFound: an older driver)."""
        self.devices = devices
        self.p2p_read = p2p_read or {}
        self.p2p_nvlink = p2p_nvlink or {}
        self.p2p_error = p2p_error
        self.p2p_calls = 0
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.initialised = 0

    def nvmlInit(self) -> None:
        if self.init_error:
            raise self.init_error()
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> Device:
        return self.devices[i]

    def nvmlDeviceGetUUID(self, d: Device) -> str:
        return d.uuid or f"GPU-{self.devices.index(d):04d}-fake"

    def nvmlDeviceGetName(self, d: Device) -> str:
        return d.name

    def nvmlDeviceGetPciInfo(self, d: Device) -> SimpleNamespace:
        return SimpleNamespace(busId=d.bus.encode())  # older nvidia-ml-py returns bytes

    def nvmlDeviceGetMemoryInfo(self, d: Device) -> SimpleNamespace:
        if not d.memory:
            raise NVMLError_NotSupported()
        return SimpleNamespace(total=d.total, used=d.used, free=d.total - d.used)

    def nvmlDeviceGetCudaComputeCapability(self, d: Device) -> tuple[int, int]:
        return d.cc

    def nvmlDeviceGetMigMode(self, d: Device) -> tuple[int, int]:
        if d.mig == NOT_SUPPORTED:
            raise NVMLError_NotSupported()
        return d.mig

    def nvmlDeviceGetComputeRunningProcesses(self, d: Device) -> list[SimpleNamespace]:
        if d.procs == NOT_SUPPORTED:
            raise NVMLError_NotSupported()
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in d.procs]

    def nvmlDeviceGetP2PStatus(self, d1: Device, d2: Device, index: Any) -> int:
        if not isinstance(index, int):  # what the real ctypes call does with a tuple
            raise ctypes.ArgumentError(f"argument 3: TypeError: Don't know how to convert parameter 3 ({index!r})")
        self.p2p_calls += 1
        if self.p2p_error:
            raise self.p2p_error()
        # By identity: two a100() are equal dataclasses, so list.index would find the first for both.
        a, b = sorted(next(i for i, d in enumerate(self.devices) if d is h) for h in (d1, d2))
        table = {0: self.p2p_read, 2: self.p2p_nvlink}[index]
        return table.get((a, b), 0)


class FakeNvmlWithoutP2p(FakeNvml):
    """An nvidia-ml-py too old to have nvmlDeviceGetP2PStatus."""

    nvmlDeviceGetP2PStatus = None  # type: ignore[assignment]


def l4(**kw: Any) -> Device:
    return Device("NVIDIA L4", 23034 * MIB, 396 * MIB, (8, 9), **kw)


def a100(**kw: Any) -> Device:
    return Device("NVIDIA A100-SXM4-80GB", 81920 * MIB, 600 * MIB, (8, 0), **kw)
