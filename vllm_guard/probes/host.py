"""The only module that imports `psutil`: host memory, cgroup limits, /dev/shm, disks, processes, ports."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
from collections.abc import Iterable
from typing import Any

from vllm_guard.facts.machine import Disk, Host, HostProcess
from vllm_guard.probes.procfs import cgroup_memory, disk_usage, node_memory, statvfs_sizes
from vllm_guard.proctitles import PRELOAD_NAME, REAPERS, VLLM_CHILD_PREFIXES, vllm_command


def probe_host(*, disk_paths: tuple[str, ...] = (), proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup",
               sys_root: str = "/sys",
               shm_path: str = "/dev/shm") -> Host:
    """Host facts. Equivalent: `free -b`, `df -B1 /dev/shm PATH`, `ulimit -n`, `cat /sys/fs/cgroup/memory.max`."""
    import psutil

    vm = psutil.virtual_memory()
    try:
        swap_free: int | None = int(psutil.swap_memory().free)
    except (OSError, RuntimeError):
        swap_free = None
    limit, usage = cgroup_memory(proc_root, cgroup_root)
    shm_total, shm_free = statvfs_sizes(shm_path)
    try:
        cpus: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    node_total, node_available = node_memory(sys_root)
    disks = []
    for path in dict.fromkeys(disk_paths):
        total, free = disk_usage(path)
        disks.append(Disk(path=path, free_bytes=free, total_bytes=total))
    return Host(
        memory_total_bytes=int(vm.total),
        memory_available_bytes=int(vm.available),
        cgroup_memory_limit_bytes=limit,
        cgroup_memory_usage_bytes=usage,
        swap_free_bytes=swap_free,
        shm_total_bytes=shm_total,
        shm_free_bytes=shm_free,
        cpu_count=cpus,
        nofile_soft_limit=None if soft == resource.RLIM_INFINITY else int(soft),
        node_memory_total_bytes=node_total,
        node_memory_available_bytes=node_available,
        disks=tuple(disks),
    )


def gpu_process_info(pid: int) -> dict[str, Any]:
    """Name, user and orphan status of a GPU process; empty when it is not visible here (other PID namespace)."""
    import psutil

    try:
        p = psutil.Process(pid)
        with p.oneshot():
            name = p.name()
            try:
                argv = p.cmdline() or [""]
            except (psutil.AccessDenied, psutil.ZombieProcess):
                argv = [""]
            cmd0 = argv[0]
            try:
                user: str | None = p.username()
            except (psutil.AccessDenied, KeyError):
                user = None
            ppid = p.ppid()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return {}
    title = cmd0 if cmd0.startswith("VLLM::") else name
    parent_name = None
    parent_argv: list[str] = []
    if ppid > 1:
        try:
            parent = psutil.Process(ppid)
            parent_name = parent.name()
            parent_argv = parent.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    if "preload" in (vllm_command(argv), vllm_command(parent_argv)):
        # vLLM 0.31+'s weight daemon (or one of its per-GPU children): a vLLM holder, not an unknown one.
        return {"name": PRELOAD_NAME, "user": user, "orphaned_vllm": False}
    return {"name": title, "user": user,
            "orphaned_vllm": is_orphaned_vllm(title, ppid, parent_name)}


def is_orphaned_vllm(title: str, ppid: int, parent_name: str | None) -> bool:
    """An EngineCore or worker whose `vllm serve` parent is gone (re-parented to init or a subreaper).

    vLLM 0.33's EngineCore has no parent-death watch (vllm-reference §5), so a
    SIGKILLed API server leaves it holding VRAM.
    """
    if not title.startswith(VLLM_CHILD_PREFIXES):
        return False
    if title.startswith("VLLM::Worker") and parent_name is not None and parent_name.startswith("VLLM::EngineCor"):
        return False
    return ppid <= 1 or parent_name is None or parent_name in REAPERS or parent_name.startswith("systemd")


def listeners_of(pids: Iterable[int]) -> set[tuple[str, int] | str]:
    """The listening sockets of these processes: (ip, port) for TCP, the path for a unix socket.

    Our own processes are always readable, so this needs no privilege; a process gone meanwhile is skipped.
    """
    import psutil

    out: set[tuple[str, int] | str] = set()
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="all")
        except psutil.Error:
            continue
        for c in conns:
            if c.family == socket.AF_UNIX:
                if isinstance(c.laddr, str) and c.laddr and c.status in (psutil.CONN_NONE, psutil.CONN_LISTEN):
                    out.add(c.laddr)
            elif c.status == psutil.CONN_LISTEN and c.laddr:
                out.add((str(c.laddr.ip), int(c.laddr.port)))
    return out


def port_holders(port: int) -> list[dict[str, Any]]:
    """Who listens on TCP ``port`` on this host: pid, user and command of each, None where not visible.

    Linux maps a socket to its process through /proc/PID/fd, which only root or the owner can read: for
    another user's server run without root, the pid is None and the holder is "not visible to us".
    """
    import psutil

    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return []
    out = []
    for c in conns:
        if c.status != psutil.CONN_LISTEN or not c.laddr or c.laddr.port != port:
            continue
        holder: dict[str, Any] = {"pid": c.pid, "user": None, "command": None, "address": str(c.laddr.ip)}
        if c.pid is not None:
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(c.pid)
                holder["user"] = proc.username()
                holder["command"] = " ".join(proc.cmdline()[:8])[:300] or proc.name()
        out.append(holder)
    return out


def find_executable(name: str, search_path: str | None) -> str | None:
    """The vLLM executable as the guard would start it: a path, or a name on PATH. Never imported."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=search_path)


def current_user() -> str | None:
    import psutil

    try:
        return str(psutil.Process().username())
    except (psutil.Error, KeyError):
        return None


def adopted_children(exclude: tuple[int, ...] = ()) -> list[int]:
    """Our direct children that we did not start: orphans re-parented to us as their subreaper."""
    import psutil

    try:
        return [c.pid for c in psutil.Process().children() if c.pid not in exclude]
    except psutil.Error:
        return []


def zombie_children(exclude: tuple[int, ...] = ()) -> list[int]:
    """Our children that have exited and wait to be reaped (adopted orphans among them)."""
    import psutil

    try:
        return [c.pid for c in psutil.Process().children()
                if c.pid not in exclude and c.status() == psutil.STATUS_ZOMBIE]
    except psutil.Error:
        return []


def descendants(pid: int) -> list[tuple[int, str]]:
    """The live (not zombie) processes below ``pid``, as (pid, title): a VLLM:: title, else the process name."""
    import psutil

    out = []
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    for child in children:
        try:
            with child.oneshot():
                if child.status() == psutil.STATUS_ZOMBIE:
                    continue
                name = child.name()
                try:
                    cmd0 = (child.cmdline() or [""])[0]
                except (psutil.AccessDenied, psutil.ZombieProcess):
                    cmd0 = ""
        except psutil.Error:
            continue
        out.append((child.pid, cmd0 if cmd0.startswith("VLLM::") else name))
    return out


def process_table(argv_max: int = 64) -> list[HostProcess]:
    """Every live process of this host (zombies left out), for `vllm-guard ps`: pid, parent, title, command
    line (the first ``argv_max`` words; empty where another user's process hides it), owner, start time."""
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "ppid", "name", "cmdline", "uids", "username", "create_time", "status"]):
        info = p.info
        if info.get("status") == psutil.STATUS_ZOMBIE or info.get("pid") is None:
            continue
        argv = tuple(str(a)[:4096] for a in (info.get("cmdline") or ())[:argv_max])
        name = str(info.get("name") or "")
        title = argv[0] if argv and argv[0].startswith("VLLM::") else name
        uids = info.get("uids")
        out.append(HostProcess(pid=int(info["pid"]), ppid=int(info.get("ppid") or 0), title=title, argv=argv,
                               uid=int(uids.real) if uids is not None else None, user=info.get("username"),
                               started=info.get("create_time")))
    return out


def process_started(pid: int) -> float | None:
    """When a process started (seconds since the epoch), to tell it from a later one with the same pid."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def interfaces() -> dict[str, tuple[str, ...]]:
    """Each network interface and its IPv4 addresses. Equivalent: ``ip -4 -o addr``."""
    import psutil

    try:
        found = psutil.net_if_addrs()
    except OSError:
        return {}
    return {name: tuple(a.address for a in addrs if a.family == socket.AF_INET) for name, addrs in found.items()}


def route_ip() -> str | None:
    """The address this host's default route leaves from: what vLLM's get_ip() answers when VLLM_HOST_IP is not
    set (vllm/utils/network_utils.py: a UDP socket "connected" to 8.8.8.8:80; no packet is sent). None: no route."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("8.8.8.8", 80))
        return str(s.getsockname()[0])
    return None


