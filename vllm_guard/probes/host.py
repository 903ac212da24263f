"""The only module that imports `psutil`: host memory, cgroup limits, /dev/shm, disks, processes, ports."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vllm_guard.facts.machine import Disk, Host, HostProcess
from vllm_guard.proctitles import PRELOAD_NAME, REAPERS, VLLM_CHILD_PREFIXES, vllm_command

# Above this a cgroup v1 limit means "no limit" (the kernel writes PAGE_COUNTER_MAX pages).
CGROUP_V1_UNLIMITED = 2**62


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
    shm_total, shm_free = _statvfs(shm_path)
    try:
        cpus: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    node_total, node_available = node_memory(sys_root)
    disks = []
    for path in dict.fromkeys(disk_paths):
        total, free = _disk_usage(path)
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


def node_memory(sys_root: str = "/sys") -> tuple[int | None, int | None]:
    """(total, available) bytes of the NUMA node of our first allowed CPU, as vLLM 0.32's CPU worker reads
    them (utils/cpu_resource_utils.py): node meminfo's MemTotal, and MemFree + Active(file) + Inactive(file)
    + SReclaimable. No per-node file (no NUMA): (None, None), and vLLM uses the host's figures."""
    try:
        cpu = min(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        cpu = 0
    node = 0
    with contextlib.suppress(OSError):
        linked = [n for n in os.listdir(f"{sys_root}/devices/system/cpu/cpu{cpu}") if n[4:].isdigit()
                  and n.startswith("node")]
        if linked:
            node = int(linked[0][4:])
    values: dict[str, int] = {}
    try:
        with open(f"{sys_root}/devices/system/node/node{node}/meminfo") as f:
            for line in f.read(65536).splitlines():
                parts = line.split()  # "Node 0 MemTotal:  8612044 kB"
                if len(parts) >= 4 and parts[3].isdigit():
                    values[parts[2].rstrip(":")] = int(parts[3]) * 1024
    except OSError:
        return None, None
    total = values.get("MemTotal")
    kinds = ("MemFree", "Active(file)", "Inactive(file)", "SReclaimable")
    if total is None or any(k not in values for k in kinds):
        return total, None
    return total, sum(values[k] for k in kinds)


def _statvfs(path: str) -> tuple[int | None, int | None]:
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize  # df's Size and Avail


def _disk_usage(path: str) -> tuple[int | None, int | None]:
    """Usage of the filesystem that holds ``path``, or will hold it once created."""
    p = Path(path)
    try:
        while not p.exists() and p != p.parent:
            p = p.parent
        usage = shutil.disk_usage(p)
    except (OSError, ValueError):  # ENAMETOOLONG, a NUL byte: no such disk
        return None, None
    return int(usage.total), int(usage.free)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def cgroup_memory(proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> tuple[int | None, int | None]:
    """The memory limit and usage of this process's cgroup (what Docker --memory and MemoryMax= set).

    cgroup v2: the tightest ``memory.max`` from this cgroup up to the root, and ``memory.current``.
    cgroup v1: ``memory.limit_in_bytes`` and ``memory.usage_in_bytes`` of the memory controller.
    Returns (None, None) where there is no limit or no memory controller.
    """
    try:
        lines = Path(proc_root, "self", "cgroup").read_text().splitlines()
    except OSError:
        return None, None
    root = Path(cgroup_root)
    v2_path: str | None = None
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, rel = rest.partition(":")
        if "memory" in controllers.split(","):
            # A v1 memory controller wins, also on hybrid hosts where "0::/" lists no controllers.
            return _cgroup_v1(root / "memory", rel)
        if hierarchy == "0" and controllers == "":
            v2_path = rel
    if v2_path is not None:
        return _cgroup_v2(root, v2_path)
    return None, None


def _candidates(base: Path, rel: str) -> list[Path]:
    """This cgroup's directory and its ancestors; inside a container the namespace root is ``base``."""
    parts = [p for p in rel.strip("/").split("/") if p]
    dirs = [base.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]
    return [d for d in dirs if d.is_dir()] or [base]


def _cgroup_v2(root: Path, rel: str) -> tuple[int | None, int | None]:
    dirs = _candidates(root, rel)
    limits = [v for d in dirs if (v := _read_int(d / "memory.max")) is not None]
    usage = next((v for d in dirs if (v := _read_int(d / "memory.current")) is not None), None)
    return (min(limits) if limits else None), (usage if limits else None)


def _cgroup_v1(root: Path, rel: str) -> tuple[int | None, int | None]:
    dirs = _candidates(root, rel)
    limits = [v for d in dirs if (v := _read_int(d / "memory.limit_in_bytes")) is not None
              and v < CGROUP_V1_UNLIMITED]
    usage = next((v for d in dirs if (v := _read_int(d / "memory.usage_in_bytes")) is not None), None)
    return (min(limits) if limits else None), (usage if limits else None)


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


def _files_of(pid_dir: str, keep: Callable[[str], bool]) -> set[str]:
    """The files one process has open or mapped, from /proc/PID/fd and /proc/PID/maps, that ``keep`` accepts
    (psutil's memory_maps reads smaps, far slower on vLLM's thousands of mappings)."""
    found: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in os.scandir(f"{pid_dir}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(fd.path)
                if keep(target):
                    found.add(target)
    with contextlib.suppress(OSError), open(f"{pid_dir}/maps", errors="replace") as maps:
        for line in maps:
            rest = line.rstrip("\n").partition("/")[2]
            if rest and keep("/" + rest):
                found.add("/" + rest)
    return found


def paths_in_use(paths: set[str], proc_root: str = "/proc") -> set[str]:
    """Which of these paths some live process has open or mapped."""
    used: set[str] = set()
    for entry in os.scandir(proc_root):
        if entry.name.isdigit():
            used |= _files_of(entry.path, paths.__contains__)
            if used >= paths:
                break
    return used


def files_held_by(pids: Iterable[int], prefixes: tuple[str, ...], proc_root: str = "/proc") -> set[str]:
    """The files under these path prefixes that these processes have open or mapped right now."""
    found: set[str] = set()
    for pid in pids:
        found |= _files_of(f"{proc_root}/{pid}", lambda path: path.startswith(prefixes))
    return found


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


def listener_uids(ip: str, port: int, proc_root: str = "/proc") -> set[int]:
    """The owners (uids) of the TCP sockets listening on ``port`` at ``ip`` or on every address, from
    /proc/net/tcp and tcp6 (columns: local address as hex IP:port, state 0A = LISTEN, uid). Empty when none or
    unreadable; only this network namespace's sockets."""
    import ipaddress

    try:
        wanted = ipaddress.ip_address(ip)
    except ValueError:
        return set()
    found: set[int] = set()
    for name, size in (("tcp", 4), ("tcp6", 16)):
        try:
            lines = Path(proc_root, "net", name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != "0A":
                continue
            addr_hex, _, port_hex = fields[1].partition(":")
            try:
                if int(port_hex, 16) != port:
                    continue
                raw = bytes.fromhex(addr_hex)
                # The kernel prints each 32-bit word in host byte order (little-endian on x86 and arm64).
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)) if sys.byteorder == "little" \
                    else raw
                local = ipaddress.ip_address(words) if len(words) == size else None
                uid = int(fields[7])
            except ValueError:
                continue
            if local is None:
                continue
            mapped = local.ipv4_mapped if isinstance(local, ipaddress.IPv6Address) else None
            if local.is_unspecified or wanted in (local, mapped):
                found.add(uid)
    return found
