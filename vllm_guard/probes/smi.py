"""Fallback when the NVML library cannot be loaded but `nvidia-smi` runs (through shell.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vllm_guard.facts.machine import P2P_NOT_SUPPORTED, P2P_OK, Gpu, GpuProcess, P2pLink
from vllm_guard.probes.nvml import GpuProbe
from vllm_guard.shell import ShellError, run

MIB = 2**20
GPU_FIELDS = ("index", "uuid", "name", "pci.bus_id", "memory.total", "memory.used", "memory.free",
              "compute_cap", "mig.mode.current", "driver_version")
APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")


def _value(text: str) -> str | None:
    text = text.strip()
    return None if not text or text.startswith("[") or text in ("N/A", "Not Supported") else text


def _mib(text: str) -> int | None:
    v = _value(text)
    return int(float(v) * MIB) if v is not None else None


def parse(gpu_csv: str, apps_csv: str | None, process_info: Callable[[int], dict[str, Any]] | None) -> GpuProbe:
    """Parse `--format=csv,noheader,nounits` output of the two queries (memory in MiB)."""
    notes: list[str] = ["GPU facts from nvidia-smi: the NVML library could not be loaded by Python"]
    apps: dict[str, list[GpuProcess]] = {}
    if apps_csv is None:
        notes.append("nvidia-smi would not list GPU processes")
    for line in (apps_csv or "").splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(APP_FIELDS) or not cols[1].isdigit():
            continue
        pid = int(cols[1])
        info = process_info(pid) if process_info else {}
        apps.setdefault(cols[0], []).append(GpuProcess(
            pid=pid, name=info.get("name") or _value(cols[2]), user=info.get("user"),
            used_memory_bytes=_mib(cols[3]), orphaned_vllm=bool(info.get("orphaned_vllm", False)),
        ))
    gpus = []
    driver = None
    for line in gpu_csv.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(GPU_FIELDS):
            continue
        cc = _value(cols[7])
        driver = driver or _value(cols[9])
        mig = _value(cols[8])
        gpus.append(Gpu(
            index=int(cols[0]), uuid=cols[1], name=_value(cols[2]), pci_bus_id=_value(cols[3]),
            memory_total_bytes=_mib(cols[4]), memory_used_bytes=_mib(cols[5]), memory_free_bytes=_mib(cols[6]),
            compute_capability=(int(cc.split(".")[0]), int(cc.split(".")[1])) if cc and "." in cc else None,
            mig_enabled=(mig == "Enabled") if mig is not None else False,
            processes=tuple(apps.get(cols[1], ())) if apps_csv is not None else None,
        ))
    return GpuProbe("nvidia-smi", driver, None, tuple(gpus), tuple(notes))


def probe(process_info: Callable[[int], dict[str, Any]] | None = None) -> GpuProbe:
    """Raises: ShellError when nvidia-smi is missing or fails."""
    gpu_csv = run("nvidia-smi", [f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits"])
    try:
        apps_csv: str | None = run(
            "nvidia-smi", [f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv,noheader,nounits"]
        )
    except ShellError:
        apps_csv = None
    return parse(gpu_csv, apps_csv, process_info)


# The legend `nvidia-smi topo -p2p r` prints under its matrix; "U" (unknown) and anything else is None.
P2P_CODES = {"OK": (P2P_OK, None), "CNS": (P2P_NOT_SUPPORTED, "chipset not supported"),
             "GNS": (P2P_NOT_SUPPORTED, "GPU not supported"), "TNS": (P2P_NOT_SUPPORTED, "topology not supported"),
             "NS": (P2P_NOT_SUPPORTED, "not supported")}


def parse_p2p(matrix: str) -> tuple[P2pLink, ...] | None:
    """Parse the matrix of `nvidia-smi topo -p2p r` (rows and columns GPU0, GPU1, ...; X on the diagonal)."""
    rows: dict[int, list[str]] = {}
    columns: list[int] = []
    for line in matrix.splitlines():
        cells = line.split()
        if not cells or cells[0] == "Legend:":
            if rows:
                break
            continue
        if all(c.startswith("GPU") and c[3:].isdigit() for c in cells):
            columns = [int(c[3:]) for c in cells]
        elif columns and cells[0].startswith("GPU") and cells[0][3:].isdigit() and len(cells) == len(columns) + 1:
            rows[int(cells[0][3:])] = cells[1:]
    if not rows:
        return None
    links = []
    for a, cells in sorted(rows.items()):
        for b, code in zip(columns, cells, strict=True):
            if b > a:
                status, reason = P2P_CODES.get(code, (None, None))
                links.append(P2pLink((a, b), status, None, reason))
    return tuple(links)


def probe_p2p() -> tuple[P2pLink, ...] | None:
    """Raises: ShellError when nvidia-smi is missing or fails."""
    return parse_p2p(run("nvidia-smi", ["topo", "-p2p", "r"]))
