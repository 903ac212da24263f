"""The figures in failure messages: vLLM's and PyTorch's numbers, read into named values with units in the names.

Pure: a regex match (or the lines of a log) in, a dict of numbers out; a figure the message does not give is
absent, never 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vllm_guard.diagnose.logread import MAX_LINE_CHARS, LogLine


def bundle_gpus(text: str) -> dict[str, Any]:
    """The GPUs a Ray placement group asked for: one ``'GPU': 1.0`` per bundle in vLLM's specs."""
    count = len(re.findall(r"'GPU': ?1(?:\.0)?\b", text[:MAX_LINE_CHARS]))
    return {"required_gpus": count} if count else {}


def placement_numbers(lines: list[LogLine]) -> dict[str, Any]:
    """The numbers around a placement-group wait: the GPUs asked for and how long vLLM has waited."""
    out: dict[str, Any] = {}
    for line in lines:
        m = _PG_WAIT.search(line.text[:MAX_LINE_CHARS])
        if m:
            out.update({"waited_s": int(m.group("waited_s")), **bundle_gpus(m.group(0))})
    return out


_PG_WAIT = re.compile(r"Waiting for creating a placement group of specs for (?P<waited_s>\d+) seconds\. "
                      r"specs=\[.{0,4000}?\]")


def numbers_of(m: re.Match[str], *names: str) -> dict[str, Any]:
    """The named groups of a match as numbers (int, or float where a point is printed); unmatched ones absent."""
    out: dict[str, Any] = {}
    for name in names:
        value = (m.groupdict().get(name) or "").rstrip(".")
        try:
            out[name] = float(value) if "." in value else int(value)
        except ValueError:
            continue
    return out


_SIZE = r"([\d.]{1,20}) ?([GMK]i?B)"
# PyTorch's figures in both wordings: "GPU 0 has a total capacity of 22.09 GiB of which 758.44 MiB is free"
# (2.1+), "(GPU 0; 10.75 GiB total capacity; 9.50 GiB already allocated; 134.50 MiB free; ...)" (older).
_OOM_FIGURES = tuple((re.compile(p), key) for p, key in (
    (r"Tried to allocate " + _SIZE, "tried_to_allocate_gib"),
    # "capacty": PyTorch 2.1's own spelling (blind24/b24-004)
    (r"total capac(?:ity|ty) of " + _SIZE + r"|" + _SIZE + r" total capacity", "total_gib"),
    (r"of which " + _SIZE + r" is free|" + _SIZE + r" free;", "free_gib"),
    (_SIZE + r" is allocated by PyTorch|" + _SIZE + r" already allocated", "allocated_gib"),
    (_SIZE + r" reserved in total by PyTorch", "reserved_gib"),
    (r"this process has " + _SIZE + r" memory in use", "process_gib"),
    (r"Process \d{1,10} has " + _SIZE + r" memory in use", "other_process_gib"),
))
_OOM_GPU = re.compile(r"\bGPU (\d{1,3})\b")
_UNIT = {"GiB": 1.0, "GB": 1.0, "MiB": 1 / 1024, "MB": 1 / 1024, "KiB": 1 / 1024**2, "KB": 1 / 1024**2}


def oom_numbers(m: re.Match[str]) -> dict[str, Any]:
    """PyTorch's OOM figures on the matched line, in GiB, and the GPU they are for."""
    line = m.string
    out: dict[str, Any] = {}
    for pattern, key in _OOM_FIGURES:
        found = pattern.search(line)
        if found:
            value, unit = [g for g in found.groups() if g is not None][:2]
            try:
                out[key] = round(float(value) * _UNIT[unit], 3)
            except (KeyError, ValueError):
                continue
    gpu = _OOM_GPU.search(line)
    if gpu and out:
        out["gpu_index"] = int(gpu.group(1))
    return out


_LISTED = re.compile(r"Process (\d{1,10}) has " + _SIZE + r" memory in use")
_THIS = re.compile(r"this process has " + _SIZE + r" memory in use")


def held_by_another(line: str, numbers: dict[str, Any], own_pids: Callable[[], frozenset[int]] = frozenset,
                    kv_sized: bool = False, utilization: float | None = None) -> dict[str, Any] | None:
    """PyTorch 2.1+'s OOM (CUDACachingAllocator reportProcessMemoryInfo) writes NVML's processes on the GPU in
    NVML's order, this one in place as "Including non-PyTorch memory, this process has ...", the others as "Process
    N has ...": other processes holding half the GPU or more, and at least twice what this one holds, are why it ran
    out. None when this process is not named as such (in a container's pid namespace it is a "Process N" too), when
    a listed pid is one of vLLM's own (two workers on one GPU), or when the figures add up to more than the GPU
    holds (a MIG slice reports its parent GPU's processes; NVML's "not available" prints as 16 GiB * 2**30). The
    largest other process's figures, and all of theirs together.

    kv_sized: the OOM came as vLLM allocated the KV cache it had sized from its own profile. V0 (0.6.4-0.10
    worker.py determine_num_available_blocks) sizes it as utilization x total less its own use, not counting other
    processes, so another one holding more than the headroom above the utilization (the log's, else the default
    0.9's 10% of the GPU) is why it ran out, however much this one holds (blind38/b38-002: 16.64 of 44.34 GiB
    against this one's 27.53)."""
    this = _THIS.search(line)
    if this is None:
        return None
    this_gib = float(this.group(1)) * _UNIT.get(this.group(2), 1.0)
    listed = [(int(pid), float(v) * _UNIT.get(u, 1.0)) for pid, v, u in _LISTED.findall(line)]
    if not listed:
        return None
    others = sum(v for _, v in listed)
    total = numbers.get("total_gib") or (others + this_gib + (numbers.get("free_gib") or 0.0))
    if others + this_gib > total * 1.02 + 0.5:
        return None
    headroom = 1.0 - (utilization if utilization is not None and 0.0 < utilization < 1.0 else 0.9)
    if (others <= headroom * total) if kv_sized else (others < 2 * this_gib or others < 0.5 * total):
        return None
    if any(pid in own_pids() for pid, _ in listed):  # read from the log only now: a scan of every line
        return None
    pid, held = max(listed, key=lambda p: p[1])
    return {"other_pid": pid, "other_process_gib": round(held, 3), "other_processes_gib": round(others, 3),
            "process_gib": round(this_gib, 3)}


_PID = re.compile(r"\bpid=(\d{1,10})\b|Started server process \[(\d{1,10})\]")


def own_pids(lines: list[LogLine]) -> frozenset[int]:
    """The pids vLLM's own processes print in the log: their prefixes ("(Worker_TP1 pid=4243)") and uvicorn's
    "Started server process [N]"."""
    found: set[int] = set()
    for line in lines:
        for where in (line.proc, line.text[:200]):
            if "pid=" in where or "Started server" in where:
                found.update(int(a or b) for a, b in _PID.findall(where))
    return frozenset(found)
