"""What the kernel's files say without psutil: cgroup limits, a NUMA node's memory, filesystems' sizes, the files
processes hold open (/proc/PID/fd) and who listens on a TCP port (/proc/net/tcp). psutil's own doorway is
``probes.host``, which uses these."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path

# Above this a cgroup v1 limit means "no limit" (the kernel writes PAGE_COUNTER_MAX pages).
CGROUP_V1_UNLIMITED = 2**62


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


def statvfs_sizes(path: str) -> tuple[int | None, int | None]:
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize  # df's Size and Avail


def disk_usage(path: str) -> tuple[int | None, int | None]:
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


Identity = tuple[int, int]  # (st_dev, st_ino): a file whatever name it has now


def identity(path: str) -> Identity | None:
    """The file a path names now (not following a link), or None when it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _holdings(pid_dir: str, directories: tuple[str, ...], maps: bool = True) -> set[tuple[str, Identity]]:
    """The files under these directories one process has open or mapped, from /proc/PID/fd and /proc/PID/maps: each
    as the kernel names it (its path when it was opened, less " (deleted)") and as its identity, which holds also
    when that name was since unlinked or replaced (psutil's memory_maps reads smaps, far slower on vLLM's thousands
    of mappings)."""
    found: set[tuple[str, Identity]] = set()
    with contextlib.suppress(OSError):
        for fd in os.scandir(f"{pid_dir}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(fd.path)
                if target.startswith(directories):
                    st = os.stat(fd.path)  # the open file itself, also when its name is gone
                    found.add((target.removesuffix(_DELETED), (st.st_dev, st.st_ino)))
    if not maps:
        return found
    with contextlib.suppress(OSError), open(f"{pid_dir}/maps", errors="replace") as lines:
        for line in lines:
            # "start-end perms offset MAJ:MIN inode   /path": the device in hex, as st_dev's major and minor.
            at = line.find("/")
            if at < 0 or not line.startswith(directories, at):
                continue
            fields = line[:at].split()
            if len(fields) == 5:
                major, _, minor = fields[3].partition(":")
                with contextlib.suppress(ValueError):
                    ident = (os.makedev(int(major, 16), int(minor, 16)), int(fields[4]))
                    found.add((line[at:].rstrip("\n").removesuffix(_DELETED), ident))
    return found


_DELETED = " (deleted)"


def paths_in_use(paths: set[str], proc_root: str = "/proc", pause_s: float = 0.02) -> set[str]:
    """Which of these paths some live process has open or mapped, under this name or another. All of them where a
    process stays in uninterruptible sleep: its maps cannot be read without waiting on the lock its stuck thread may
    hold (as holdings_of), and it may map any of them, so none is taken for unused (the caller removes the unused).
    A sleep that ends within a few looks (a disk read) is waited out."""
    wanted = {ident: path for path in paths if (ident := identity(path)) is not None}
    if not wanted:
        return set()
    directories = tuple({os.path.realpath(os.path.dirname(path)) + "/" for path in paths})  # as /proc shows them
    used: set[str] = set()
    with os.scandir(proc_root) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            if _stays_uninterruptible(int(entry.name), proc_root, pause_s):
                return set(wanted.values())
            used |= {wanted[i] for _, i in _holdings(entry.path, directories) if i in wanted}
            if len(used) == len(wanted):
                break
    return used


def _stays_uninterruptible(pid: int, proc_root: str, pause_s: float, looks: int = 3) -> bool:
    """A thread of the process in uninterruptible sleep at each of a few looks ``pause_s`` apart."""
    for look in range(looks):
        if not _uninterruptible(pid, proc_root):
            return False
        if look < looks - 1:
            time.sleep(pause_s)
    return True


def holdings_of(pids: Iterable[int], directories: tuple[str, ...],
                proc_root: str = "/proc") -> set[tuple[str, Identity]]:
    """The files under these directories that these processes have open or mapped right now (``_holdings``). Not
    the mappings of a process with a thread in uninterruptible sleep: reading its maps waits for its memory-map lock,
    which such a thread may hold (a GPU driver call that hangs), and the keeper must go on to SIGKILL."""
    found: set[tuple[str, Identity]] = set()
    for pid in pids:
        found |= _holdings(f"{proc_root}/{pid}", directories, maps=not _uninterruptible(pid, proc_root))
    return found


def _uninterruptible(pid: int, proc_root: str) -> bool:
    """Whether any thread of the process is in state D. /proc/PID/stat is the main thread's alone, and vLLM's driver
    calls run in others too (a worker's NCCL and CUDA threads); a process whose threads cannot be listed is judged by
    its main thread."""
    tasks = f"{proc_root}/{pid}/task"
    try:
        with os.scandir(tasks) as entries:
            threads = [int(entry.name) for entry in entries if entry.name.isdigit()]
    except OSError:
        return stat_field(pid, STATE_FIELD, proc_root) == "D"
    return any(stat_field(tid, STATE_FIELD, tasks) == "D" for tid in threads)


# /proc/PID/stat's fields after the command's closing parenthesis, from 0 (proc(5) numbers them from 3)
STATE_FIELD = 0  # R, S, D (uninterruptible sleep), Z, ...
START_TIME_FIELD = 19  # clock ticks after boot: with the pid, it names one process


def stat_field(pid: int, index: int, proc_root: str = "/proc") -> str | None:
    """One field of /proc/PID/stat, None when the process is gone. Read as bytes: the command name before the fields
    is cut at 15 bytes by the kernel, mid-character for a name that is not ASCII."""
    try:
        with open(f"{proc_root}/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[index].decode("ascii")
    except (OSError, IndexError, ValueError):
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
