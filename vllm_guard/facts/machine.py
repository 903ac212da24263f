"""Facts: frozen, unit-named data about the GPUs and the host, and the whole a check judges (the model's part is
facts/model.py).

Unknown is ``None`` (with a note saying why), never 0. The machine part
round-trips through JSON: that is the snapshot format (``docs/machine-snapshot.md``)
and the seam every test stands on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from vllm_guard.errors import SnapshotError
from vllm_guard.facts.model import ModelFacts
from vllm_guard.schemas import MACHINE as MACHINE_SCHEMA

_SCHEMA_NAME, _, _SCHEMA_VERSION = MACHINE_SCHEMA.rpartition("/")


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str | None
    user: str | None
    used_memory_bytes: int | None
    orphaned_vllm: bool = False


@dataclass(frozen=True)
class HostProcess:
    """One process of this host, as `vllm-guard ps` needs it."""

    pid: int
    ppid: int
    title: str  # argv[0] when vLLM retitled the process (VLLM::EngineCore), else the command name
    argv: tuple[str, ...]  # empty when another user's process hides it
    uid: int | None
    user: str | None
    started: float | None  # seconds since the epoch


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index; equals the CUDA index under CUDA_DEVICE_ORDER=PCI_BUS_ID
    uuid: str
    name: str | None
    pci_bus_id: str | None
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    memory_free_bytes: int | None
    compute_capability: tuple[int, int] | None
    mig_enabled: bool | None
    processes: tuple[GpuProcess, ...] | None  # None: the driver would not list them
    unified_memory: bool = False  # GH200-class: NVML has no memory info, host RAM is the pool

    @property
    def idleness(self) -> tuple[int, int, int]:
        """Sort key, idlest first: no processes (an unlisted set counts as busy), then most free, then index."""
        busy = 1 if self.processes is None or len(self.processes) > 0 else 0
        return busy, -(self.memory_free_bytes or 0), self.index


@dataclass(frozen=True)
class P2pLink:
    """Peer-to-peer between two GPUs (NVML indices, low first), as NVML's nvmlDeviceGetP2PStatus answers it.

    Each status is "ok", "not supported", or None: unknown (NVML said NVML_P2P_STATUS_UNKNOWN, or the query
    failed). vLLM's custom all-reduce needs P2P read between every pair of the layout.
    """

    gpus: tuple[int, int]
    read: str | None
    nvlink: str | None  # None also when only `nvidia-smi topo -p2p r` was read (it says nothing of NVLink)
    reason: str | None = None  # why read is not ok, in NVML's words ("chipset not supported", ...)


P2P_OK, P2P_NOT_SUPPORTED = "ok", "not supported"


@dataclass(frozen=True)
class Disk:
    path: str
    free_bytes: int | None
    total_bytes: int | None


@dataclass(frozen=True)
class Host:
    memory_total_bytes: int | None
    memory_available_bytes: int | None
    cgroup_memory_limit_bytes: int | None  # None: no limit (or no cgroup memory controller)
    cgroup_memory_usage_bytes: int | None
    swap_free_bytes: int | None
    shm_total_bytes: int | None
    shm_free_bytes: int | None
    cpu_count: int | None
    nofile_soft_limit: int | None
    # The NUMA node a CPU build of vLLM binds its memory to (its first allowed CPU's), as vLLM 0.32's
    # cpu_resource_utils.get_memory_node_info reads it: MemTotal, and MemFree + file pages + SReclaimable.
    node_memory_total_bytes: int | None = None
    node_memory_available_bytes: int | None = None
    disks: tuple[Disk, ...] = ()

    @property
    def effective_memory_available_bytes(self) -> int | None:
        """What a new process can still use: the host's available memory, capped by the cgroup's room."""
        candidates = [self.memory_available_bytes]
        if self.cgroup_memory_limit_bytes is not None:
            used = self.cgroup_memory_usage_bytes or 0
            candidates.append(max(self.cgroup_memory_limit_bytes - used, 0))
        known = [c for c in candidates if c is not None]
        return min(known) if known else None

    def disk_for(self, path: str) -> Disk | None:
        """The recorded disk whose path is the longest prefix of ``path``."""
        best: Disk | None = None
        for disk in self.disks:
            prefix = disk.path.rstrip("/") + "/"
            if (path.rstrip("/") + "/").startswith(prefix) and (best is None or len(disk.path) > len(best.path)):
                best = disk
        return best


@dataclass(frozen=True)
class Machine:
    taken_at: str
    hostname: str | None
    source: str  # nvml | nvidia-smi | none
    driver_version: str | None
    cuda_driver_version: str | None
    gpus: tuple[Gpu, ...]
    host: Host
    notes: tuple[str, ...] = ()
    schema: str = MACHINE_SCHEMA
    p2p: tuple[P2pLink, ...] | None = None  # None: not read (fewer than two GPUs, or no source could say)

    def p2p_link(self, a: int, b: int) -> P2pLink | None:
        pair = (min(a, b), max(a, b))
        return next((link for link in self.p2p or () if link.gpus == pair), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "taken_at": self.taken_at,
            "hostname": self.hostname,
            "source": self.source,
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "gpus": [_gpu_to_dict(g) for g in self.gpus],
            "host": {
                **{f.name: getattr(self.host, f.name) for f in fields(Host) if f.name != "disks"},
                "disks": [vars(d).copy() for d in self.host.disks],
            },
            "notes": list(self.notes),
            "p2p": None if self.p2p is None else [
                {"gpus": list(link.gpus), "read": link.read, "nvlink": link.nvlink, "reason": link.reason}
                for link in self.p2p
            ],
        }

    @classmethod
    def from_dict(cls, data: Any, *, origin: str = "snapshot") -> Machine:
        """Read a snapshot; refuse what is malformed, foreign or from a newer schema.

        Raises:
            SnapshotError: naming the key that is wrong and what was expected.
        """
        r = _Reader(origin)
        if not isinstance(data, dict):
            raise r.error("", "expected a JSON object")
        schema = data.get("schema")
        if not isinstance(schema, str) or not schema.startswith(_SCHEMA_NAME + "/"):
            raise r.error("schema", f"expected {MACHINE_SCHEMA!r}, got {schema!r}: not a vllm-guard machine snapshot")
        version = schema.rpartition("/")[2]
        if version != _SCHEMA_VERSION:
            raise SnapshotError(
                f"{origin}: snapshot schema {schema!r} is not {MACHINE_SCHEMA!r}; refusing to misread it",
                hint="upgrade vllm-guard to read it, or take the snapshot again with this version",
            )
        gpus_raw = r.get(data, "gpus", list)
        host_raw = r.get(data, "host", dict)
        return cls(
            schema=schema,
            taken_at=r.get(data, "taken_at", str),
            hostname=r.opt(data, "hostname", str),
            source=r.get(data, "source", str),
            driver_version=r.opt(data, "driver_version", str),
            cuda_driver_version=r.opt(data, "cuda_driver_version", str),
            gpus=tuple(_gpu_from_dict(r, g, f"gpus[{i}]") for i, g in enumerate(gpus_raw)),
            host=_host_from_dict(r, host_raw),
            notes=tuple(r.opt(data, "notes", list) or ()),
            p2p=_p2p_from_dict(r, data.get("p2p")),
        )


def _gpu_to_dict(g: Gpu) -> dict[str, Any]:
    d = {f.name: getattr(g, f.name) for f in fields(Gpu)}
    d["compute_capability"] = list(g.compute_capability) if g.compute_capability else None
    d["processes"] = [vars(p).copy() for p in g.processes] if g.processes is not None else None
    return d


class _Reader:
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def error(self, key: str, message: str) -> SnapshotError:
        where = f" {key}:" if key else ""
        return SnapshotError(f"{self.origin}:{where} {message}",
                             hint="take a snapshot with `vllm-guard snapshot -o FILE`; docs/machine-snapshot.md "
                             "describes the format")

    def get(self, data: Mapping[str, Any], key: str, kind: type, prefix: str = "") -> Any:
        if key not in data:
            raise self.error(prefix + key, "missing")
        return self._check(data[key], key, kind, prefix)

    def opt(self, data: Mapping[str, Any], key: str, kind: type, prefix: str = "") -> Any:
        value = data.get(key)
        return None if value is None else self._check(value, key, kind, prefix)

    def total(self, data: Mapping[str, Any], key: str, prefix: str = "") -> int | None:
        """A total size, which the guard divides by: positive, or null for unknown (never 0)."""
        value = self.opt(data, key, int, prefix)
        if value == 0:
            raise self.error(prefix + key, "expected a positive number of bytes, or null when unknown (a GPU with "
                             "unified memory has unified_memory true and null totals)")
        return value

    def _check(self, value: Any, key: str, kind: type, prefix: str) -> Any:
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            raise self.error(prefix + key, f"expected {kind.__name__}, got {value!r}")
        if kind is int and value < 0:
            raise self.error(prefix + key, f"expected a non-negative integer, got {value!r}")
        return value


def _gpu_from_dict(r: _Reader, g: Any, where: str) -> Gpu:
    if not isinstance(g, dict):
        raise r.error(where, "expected an object")
    p = where + "."
    cc_raw = r.opt(g, "compute_capability", list, p)
    cc: tuple[int, int] | None = None
    if cc_raw is not None:
        if len(cc_raw) != 2 or not all(isinstance(x, int) for x in cc_raw):
            raise r.error(p + "compute_capability", f"expected [major, minor], got {cc_raw!r}")
        cc = (cc_raw[0], cc_raw[1])
    procs_raw = r.opt(g, "processes", list, p)
    procs = None
    if procs_raw is not None:
        procs = tuple(
            GpuProcess(
                pid=r.get(x, "pid", int, f"{p}processes[{i}]."),
                name=r.opt(x, "name", str),
                user=r.opt(x, "user", str),
                used_memory_bytes=r.opt(x, "used_memory_bytes", int, f"{p}processes[{i}]."),
                orphaned_vllm=bool(x.get("orphaned_vllm", False)),
            )
            for i, x in enumerate(procs_raw)
            if isinstance(x, dict) or _raise(r.error(f"{p}processes[{i}]", "expected an object"))
        )
    return Gpu(
        index=r.get(g, "index", int, p),
        uuid=r.get(g, "uuid", str, p),
        name=r.opt(g, "name", str, p),
        pci_bus_id=r.opt(g, "pci_bus_id", str, p),
        memory_total_bytes=r.total(g, "memory_total_bytes", p),
        memory_used_bytes=r.opt(g, "memory_used_bytes", int, p),
        memory_free_bytes=r.opt(g, "memory_free_bytes", int, p),
        compute_capability=cc,
        mig_enabled=r.opt(g, "mig_enabled", bool, p),
        processes=procs,
        unified_memory=bool(g.get("unified_memory", False)),
    )


def _p2p_from_dict(r: _Reader, raw: Any) -> tuple[P2pLink, ...] | None:
    """Absent or null (a snapshot older than the field, or one GPU): unknown."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise r.error("p2p", f"expected a list or null, got {raw!r}")
    links = []
    for i, x in enumerate(raw):
        where = f"p2p[{i}]."
        if not isinstance(x, dict):
            raise r.error(f"p2p[{i}]", "expected an object")
        pair = r.get(x, "gpus", list, where)
        if len(pair) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) for n in pair):
            raise r.error(where + "gpus", f"expected [index, index], got {pair!r}")
        statuses = {key: r.opt(x, key, str, where) for key in ("read", "nvlink")}
        for key, value in statuses.items():
            if value not in (None, P2P_OK, P2P_NOT_SUPPORTED):
                raise r.error(where + key, f"expected {P2P_OK!r}, {P2P_NOT_SUPPORTED!r} or null, got {value!r}")
        links.append(P2pLink((min(pair), max(pair)), statuses["read"], statuses["nvlink"],
                             r.opt(x, "reason", str, where)))
    return tuple(links)


def _raise(error: Exception) -> bool:
    raise error


def _host_from_dict(r: _Reader, h: Mapping[str, Any]) -> Host:
    p = "host."
    ints = {
        f.name: r.total(h, f.name, p) if f.name == "memory_total_bytes" else r.opt(h, f.name, int, p)
        for f in fields(Host)
        if f.name != "disks"
    }
    disks = tuple(
        Disk(
            path=r.get(d, "path", str, f"{p}disks[{i}]."),
            free_bytes=r.opt(d, "free_bytes", int, f"{p}disks[{i}]."),
            total_bytes=r.opt(d, "total_bytes", int, f"{p}disks[{i}]."),
        )
        for i, d in enumerate(r.opt(h, "disks", list, p) or [])
        if isinstance(d, dict) or _raise(r.error(f"{p}disks[{i}]", "expected an object"))
    )
    return Host(**ints, disks=disks)


@dataclass(frozen=True)
class VllmBuild:
    """The installed vLLM: its version and the device it was built for ("cuda", "cpu", ...; None: unknown)."""

    version: str | None
    device: str | None
    source: str  # where it was read: "package metadata" or "VLLM_TARGET_DEVICE"

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"


@dataclass(frozen=True)
class Facts:
    """Everything the checks judge: the machine, the GPUs vLLM will see, the model, live-only facts."""

    machine: Machine
    machine_origin: str  # "this machine" or the snapshot's path
    gpus: tuple[Gpu, ...]  # the GPUs vLLM will see, in CUDA order (PCI bus order)
    cuda_visible_devices: str | None  # what the guard sets for vLLM; None: inherited unchanged
    model: ModelFacts
    live: bool  # False under --machine: port, executable and running user are not this machine's
    port_free: bool | None = None
    vllm_path: str | None = None
    vllm_build: VllmBuild | None = None
    environ_cpu_kvcache_space: str | None = None  # VLLM_CPU_KVCACHE_SPACE in the guard's environment
    user: str | None = None
    environ_allows_long_len: bool = False
    notes: tuple[str, ...] = ()
    draft_model: ModelFacts | None = None  # --speculative-config's draft model, probed as the target is
