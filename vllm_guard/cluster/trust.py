"""Which Ray cluster the guard may join (docs/ray.md, "Which cluster the guard trusts"). No ray import here.

A cluster is a trust boundary: Ray's protocol carries pickles, and the guard unpickles its node probes' answers, so
whoever controls a cluster's head or workers can run code in the guard.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LocalCluster", "foreign_head", "local_cluster", "local_cluster_address"]


@dataclass(frozen=True)
class LocalCluster:
    """The address file ``ray start --head`` left on this machine, and whether the guard trusts it."""

    path: Path
    address: str | None  # the address, when the file is there and trusted
    ignored: str | None = None  # why a file that is there was not trusted


LOCAL_CLUSTER_MAX_BYTES = 1024


def local_cluster(environ: Mapping[str, str], *, uid: int | None = None) -> LocalCluster:
    """The address ``ray start --head`` left on this machine, read as Ray reads it, without Ray, and trusted only
    when nobody else could have written it.

    Ray 2.x writes it to ``/tmp/ray/ray_current_cluster`` (``ray/_private/services.py``,
    ``get_ray_address_from_environment``; RAY_TMPDIR moves /tmp), and makes ``/tmp/ray`` mode 0777, not sticky
    (``ray/_common/utils.py``, ``try_make_directory_shared``): any local user can write that file. Joining a
    cluster is running its code (Ray's protocol carries pickles; the guard unpickles its node probes' answers),
    so the file counts only when it and its directory belong to this user or root, the
    file is writable by nobody else, and the directory by nobody else unless it is sticky (docs/security.md).
    Read without following a link, without waiting on a FIFO, at most 1 KiB.
    """
    from vllm_guard import safefile

    base = environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    path = Path(base) / "ray" / "ray_current_cluster"
    uid = os.geteuid() if uid is None else uid
    try:
        data = safefile.read_limited(path, LOCAL_CLUSTER_MAX_BYTES, follow_links=False)
        st = os.lstat(path)
    except FileNotFoundError:
        return LocalCluster(path, None)
    except (safefile.FileProblem, OSError) as e:
        return LocalCluster(path, None, f"{path} was not read: {e}")
    problem = safefile.check_dir(path.parent, uid=uid)
    if problem is None and st.st_uid not in (uid, 0):
        problem = f"{path} belongs to uid {st.st_uid}, neither this user (uid {uid}) nor root"
    if problem is None and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    if problem is not None:
        return LocalCluster(path, None, f"ignored {path}: {problem}; another user could have planted it")
    try:
        text = data.decode().strip()
    except UnicodeDecodeError:
        return LocalCluster(path, None, f"ignored {path}: not text")
    if not text or not text.isprintable():
        return LocalCluster(path, None, f"ignored {path}: {'empty' if not text else 'not an address'}")
    return LocalCluster(path, text)


def local_cluster_address(environ: Mapping[str, str]) -> str | None:
    """The trusted address of the cluster started on this machine (``local_cluster``), None when none is."""
    return local_cluster(environ).address


def foreign_head(address: str, *, euid: int | None = None) -> str | None:
    """As root: who else owns the head listening at a host:port address on this machine, None when root does,
    when the guard is not root, or when the head is on another machine (then the operator named it: trusted).

    Looked up in /proc/net/tcp (probes.procfs.listener_uids): the socket's owner is the user who started the head.
    """
    import ipaddress
    import socket

    if (os.geteuid() if euid is None else euid) != 0:
        return None
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or "://" in address or not port.isdigit() or not host:
        return None
    if host in ("localhost", socket.gethostname()):
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None  # another name: resolving it could hang on DNS; a remote head was named, hence trusted
    from vllm_guard.probes.host import interfaces
    from vllm_guard.probes.procfs import listener_uids

    local = ip.is_loopback or ip.is_unspecified or str(ip) in {a for addrs in interfaces().values() for a in addrs}
    if not local:
        return None
    others = sorted(uid for uid in listener_uids(str(ip), int(port)) if uid != 0)
    if not others:
        return None
    return f"its head (the socket listening on {address}) belongs to uid {others[0]}{_user_name(others[0])}, not root"


def _user_name(uid: int) -> str:
    import pwd

    try:
        return f" ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return ""
