"""Every vLLM on this host, for `vllm-guard ps`: the guards' registry joined with the process table and NVML.

Pure: process records, registry entries and GPU processes in, one ``Instance``
per vLLM out. What counts as vLLM (vLLM 0.33; vllm-reference, process tree):
- a process vLLM retitled: ``VLLM::EngineCore``, ``VLLM::Worker_TP0``, ``VLLM::APIServer_0`` ...
  (setproctitle in v1/engine/utils.py);
- an API server started as ``vllm serve`` (``python .../bin/vllm serve``, or
  ``python -m vllm.entrypoints.openai.api_server``): its title is unchanged;
- vLLM 0.31+'s weight daemon ``vllm preload``: it holds GPU memory on purpose, so
  it is a vLLM holder of its own kind, never an unknown process or an orphan.
An engine or worker whose parent is not vLLM (re-parented to init or a
subreaper after its API server was killed) is orphaned: vLLM 0.33's EngineCore
has no parent-death watch and keeps its VRAM. So is a vLLM whose guard's entry
is still there while the guard is gone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from vllm_guard.facts.machine import Gpu, GpuProcess, HostProcess, Machine
from vllm_guard.proctitles import PRELOAD_NAME, REAPERS, vllm_command
from vllm_guard.state.registry import Entry

# The keeper's module path in its command line (process._KEEPER_MAIN): today's, and the flat layout's before
# the packages per stage (vllm_guard.keeper), so that `ps` still knows keepers started before an upgrade.
KEEPER_MODULES = ("vllm_guard.launch.keeper", "vllm_guard.keeper")
# A registry entry's start time and the process table's are the same clock, rounded differently.
STARTED_TOLERANCE_S = 1.0
ENGINE_PREFIXES = ("VLLM::EngineCor", "VLLM::Worker", "VLLM::DPCoord")


@dataclass(frozen=True)
class Instance:
    kind: str  # guard (a guard runs it) | vllm (started without a guard) | preload (the weight daemon)
    state: str  # starting | ready | relaxed (a guard's); running | orphaned
    pid: int | None  # the vLLM process at the top of its tree (the API server, or the orphan)
    pids: tuple[int, ...]  # every process of it
    guard_pid: int | None
    profile: str | None
    model: str | None
    gpus: tuple[int, ...]
    gpu_memory_bytes: int | None  # NVML's figure summed over its processes; None: not known here
    port: int | None
    since: str | None  # ISO time: the guard's state, else the process start
    attempt: int | None
    user: str | None
    note: str | None = None
    uds: str | None = None  # the Unix socket it serves on, instead of a port

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pids"], d["gpus"] = list(self.pids), list(self.gpus)
        return d


@dataclass(frozen=True)
class Found:
    instances: list[Instance]
    stale: list[int]  # guard pids whose entries are left over (guard and vLLM gone): to be removed


def is_vllm(p: HostProcess) -> bool:
    return p.title.startswith("VLLM::") or vllm_command(p.argv) is not None


def find_instances(procs: Iterable[HostProcess], entries: Iterable[Entry],
                   gpu_processes: Mapping[int, Sequence[tuple[int, int | None]]], looked_in: str = "") -> Found:
    """Join the registry, the process table and NVML's processes (pid -> [(GPU index, bytes)]).

    ``looked_in``: where the registry was read, named when a guard's vLLM is found that is not in it."""
    by_pid = {p.pid: p for p in procs}
    children: dict[int, list[int]] = {}
    for p in by_pid.values():
        children.setdefault(p.ppid, []).append(p.pid)

    def tree(pid: int) -> list[int]:
        out, todo = [], [pid]
        while todo:
            q = todo.pop()
            if q in by_pid and q not in out:
                out.append(q)
                todo.extend(children.get(q, ()))
        return out

    found: list[Instance] = []
    stale: list[int] = []
    claimed: set[int] = set()
    for e in entries:
        named = by_pid.get(e.guard_pid)
        if named is not None and named.argv and not _is_guard(named) and _owned_by(named, e.owner_uid):
            # A live process of the file's owner that is no guard: a forged entry ("a ready guard on port 8000").
            # Not listed, claims nothing, and not removed (its pid runs).
            continue
        if _guard_alive(e, by_pid):
            pids = tree(e.guard_pid)[1:]  # the keeper and vLLM below it, not the guard itself
            # Only a vLLM below this guard is its own: an entry naming another user's process claims nothing.
            vllm = e.vllm_pid if e.vllm_pid in pids else None
            claimed.update(pids, [e.guard_pid])
            found.append(_instance("guard", e.state, vllm, pids, e, by_pid, gpu_processes))
            continue
        orphan = e.vllm_pid if e.vllm_pid is not None and e.vllm_pid in by_pid and _owned_by(by_pid[e.vllm_pid],
                                                                                             e.owner_uid) else None
        if orphan is None or orphan in claimed:
            stale.append(e.guard_pid)
            continue
        pids = tree(orphan)
        claimed.update(pids)
        found.append(_instance("guard", "orphaned", orphan, pids, e, by_pid, gpu_processes,
                               note=f"its guard (pid {e.guard_pid}) is gone: stop it, or its GPU memory stays held"))
    for p in sorted(by_pid.values(), key=lambda p: p.pid):
        if p.pid in claimed or not is_vllm(p):
            continue
        parent = by_pid.get(p.ppid)
        if parent is not None and is_vllm(parent) and parent.pid not in claimed:
            continue  # not the top of its tree: counted with its root
        pids = [q for q in tree(p.pid) if q not in claimed]
        claimed.update(pids)
        command = vllm_command(p.argv)
        if command == "preload" or (parent is not None and vllm_command(parent.argv) == "preload"):
            found.append(_instance("preload", "running", p.pid, pids, None, by_pid, gpu_processes,
                                   note="vLLM's weight daemon (`vllm preload`): holds weights in GPU memory for "
                                        "engines started with --load-format ipc_cache"))
        elif p.title.startswith(ENGINE_PREFIXES) and _reparented(p, parent):
            found.append(_instance("vllm", "orphaned", p.pid, pids, None, by_pid, gpu_processes,
                                   note=f"{p.title} whose `vllm serve` is gone (re-parented to pid {p.ppid}): "
                                        f"`kill {p.pid}` frees its GPU memory"))
        else:
            guard = _guard_above(p, by_pid)
            where = f" in {looked_in}" if looked_in else ""
            if guard is not None:
                # A guard whose registry is elsewhere: another lock dir (guard.lock-dir, VLLMGUARD_LOCK_DIR,
                # a user's private one). Say where ps looked, never "not started by a guard".
                by = (f"started by a guard (pid {guard.pid}) that is not registered{where}: it registers in its "
                      "own lock dir; `vllm-guard ps --lock-dir DIR` reads that one")
            elif parent is not None and not command:
                by = f"started by {parent.title} (pid {parent.pid})"
            else:
                by = f"not started by a guard (none is above it; guards registered{where} were read)"
            found.append(_instance("vllm", "running", p.pid, pids, None, by_pid, gpu_processes, note=by))
    return Found(found, stale)


def _reparented(p: HostProcess, parent: HostProcess | None) -> bool:
    """Whether an engine or worker lost the process that started it: it now hangs under init, a container's
    init or a subreaper (systemd, a guard), never a program that runs vLLM in-process."""
    if parent is None or p.ppid <= 1:
        return True
    return parent.title in REAPERS or parent.title.startswith("systemd") or _is_guard(parent)


def _guard_above(p: HostProcess, by_pid: Mapping[int, HostProcess]) -> HostProcess | None:
    """The guard above a process, if one started it: past its keeper, the guard the keeper belongs to."""
    seen: set[int] = set()
    found: HostProcess | None = None
    up = by_pid.get(p.ppid)
    while up is not None and up.pid not in seen and up.pid > 1:
        if _is_guard(up):
            found = up
        elif found is not None:
            break
        seen.add(up.pid)
        up = by_pid.get(up.ppid)
    return found


def _is_guard(p: HostProcess) -> bool:
    """A guard (`vllm-guard ...`, `python -m vllm_guard ...`) or its keeper (process._KEEPER_MAIN)."""
    return any(os.path.basename(w) == "vllm-guard" or w == "vllm_guard" or any(k in w for k in KEEPER_MODULES)
               for w in p.argv[:4])


def _guard_alive(e: Entry, by_pid: Mapping[int, HostProcess]) -> bool:
    p = by_pid.get(e.guard_pid)
    if p is None or not _owned_by(p, e.owner_uid):
        return False  # gone, or a file naming someone else's process
    return e.guard_started is None or p.started is None or abs(p.started - e.guard_started) <= STARTED_TOLERANCE_S


def _owned_by(p: HostProcess, uid: int | None) -> bool:
    return uid is None or p.uid is None or uid in (p.uid, 0)


def _instance(kind: str, state: str, pid: int | None, pids: Sequence[int], e: Entry | None,
              by_pid: Mapping[int, HostProcess], gpu_processes: Mapping[int, Sequence[tuple[int, int | None]]],
              note: str | None = None) -> Instance:
    held = [item for q in pids for item in gpu_processes.get(q, ())]
    gpus = tuple(sorted({i for i, _ in held}))
    memory = sum(b for _, b in held if b is not None) if held and all(b is not None for _, b in held) else None
    top = by_pid.get(pid) if pid is not None else None
    argv = top.argv if top is not None else ()
    if e is not None:
        return Instance(kind, state, pid, tuple(pids), e.guard_pid, e.profile, e.model, e.gpus or gpus, memory,
                        e.port, e.since, e.attempt, top.user if top else by_pid[e.guard_pid].user if e.guard_pid
                        in by_pid else None, note, e.uds)
    return Instance(kind, state, pid, tuple(pids), None, None, _model_of(argv), gpus, memory,
                    _port_of(argv) if vllm_command(argv) == "serve" else None,
                    _iso(top.started) if top is not None else None, None, top.user if top else None, note)


def _model_of(argv: Sequence[str]) -> str | None:
    for i, word in enumerate(argv):
        if word == "--model" and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--model="):
            return word.split("=", 1)[1]
    for i, word in enumerate(argv[:-1]):
        if word in ("serve", "preload") and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return None


def _port_of(argv: Sequence[str]) -> int | None:
    for i, word in enumerate(argv):
        value = argv[i + 1] if word == "--port" and i + 1 < len(argv) else (
            word.split("=", 1)[1] if word.startswith("--port=") else None)
        if value is not None:
            return int(value) if value.isdigit() else None
    return 8000  # vLLM 0.33's default port


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).replace(microsecond=0).isoformat()


def gpu_processes_of(gpus: Iterable[Gpu]) -> dict[int, list[tuple[int, int | None]]]:
    """pid -> [(GPU index, bytes it holds there)] from NVML's process lists."""
    out: dict[int, list[tuple[int, int | None]]] = {}
    for g in gpus:
        for p in g.processes or ():
            out.setdefault(p.pid, []).append((g.index, p.used_memory_bytes))
    return out


def from_snapshot(machine: Machine) -> list[Instance]:
    """Under --machine: the vLLM processes a snapshot's GPUs listed (no process tree, no registry)."""
    seen: dict[int, tuple[GpuProcess, list[tuple[int, int | None]]]] = {}
    for g in machine.gpus:
        for p in g.processes or ():
            name = p.name or ""
            if name.startswith("VLLM::") or "vllm" in name.lower():
                seen.setdefault(p.pid, (p, []))[1].append((g.index, p.used_memory_bytes))
    out = []
    for pid, (p, held) in sorted(seen.items()):
        memory = sum(b for _, b in held if b is not None) if all(b is not None for _, b in held) else None
        kind = "preload" if p.name == PRELOAD_NAME else "vllm"
        out.append(Instance(kind, "orphaned" if p.orphaned_vllm else "running", pid, (pid,), None, None, None,
                            tuple(sorted({i for i, _ in held})), memory, None, None, None, p.user,
                            f"{p.name}, from the snapshot" + (" (orphaned when it was taken)" if p.orphaned_vllm
                                                             else "")))
    return out
