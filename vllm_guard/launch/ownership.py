"""Whose socket answers: READY only when the listening socket on vLLM's port belongs to the launch.

Two servers on one port is the commonest shared-box accident: a colleague's `vllm serve` binds 8000 while
ours still loads weights. vLLM 0.33 binds its API socket early and listens only when start-up is done
(vllm-reference §3), and Linux lets two SO_REUSEADDR sockets bind one address while neither listens, so
the other server can listen first; ours then dies of "Address already in use". Until then, anyone can
answer /health with 200. So a poll counts only when a process of the launch's tree (the keeper, vLLM, its
API servers) holds a listening socket at the polled address. Once ours listens, no other user can take
the address (Linux refuses a second listener; SO_REUSEPORT needs the same uid), so a check right before
the first request also covers the request itself.

``PortWatch`` reads the process tree and its sockets through ``probes.host`` (psutil); ``owns`` is the
pure rule, tested with tables.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.markers import BEFORE_START
from vllm_guard.probes import host as host_probe
from vllm_guard.probes import ports
from vllm_guard.redact import printable

WILDCARDS = ("0.0.0.0", "::")


@dataclass(frozen=True)
class Address:
    """Where the guard polls: a TCP host and port, or a unix socket path."""

    host: str
    port: int | None
    uds: str | None = None

    @classmethod
    def of(cls, url: str) -> Address:
        """From ``http://HOST:PORT/...`` or ``http+unix://PATH/health`` (the plan's health URL)."""
        if url.startswith("http+unix://"):
            return cls("", None, url[len("http+unix://"):].removesuffix("/health"))
        hostport = url[len("http://"):].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return self.uds or f"{self.host}:{self.port}"


def _same_ip(a: str, b: str) -> bool:
    try:
        x, y = ipaddress.ip_address(a), ipaddress.ip_address(b)
    except ValueError:
        return a == b
    if isinstance(x, ipaddress.IPv6Address) and x.ipv4_mapped is not None:
        x = x.ipv4_mapped
    if isinstance(y, ipaddress.IPv6Address) and y.ipv4_mapped is not None:
        y = y.ipv4_mapped
    return x == y


def owns(listening: Iterable[tuple[str, int] | str], where: Address) -> bool:
    """Whether one of these listening sockets is the one a connection to ``where`` reaches.

    A socket on the wildcard address ("0.0.0.0", "::") reaches every local address of the port; vLLM binds
    "" by default and the guard then polls 127.0.0.1.
    """
    for sock in listening:
        if where.uds is not None:
            if sock == where.uds:
                return True
        elif isinstance(sock, tuple) and sock[1] == where.port and (sock[0] in WILDCARDS or
                                                                    _same_ip(sock[0], where.host)):
            return True
    return False


def describe_holders(holders: Iterable[dict[str, Any]], port: int | None) -> str:
    """"pid 4242 (alice: vllm serve Qwen/...)", or why the holder cannot be named."""
    named = []
    for h in holders:
        if h.get("pid") is None:
            named.append("a process this user cannot see (another user's; run as root to name it)")
            continue
        who = printable(str(h.get("user") or "?"))
        command = printable(str(h.get("command") or "?"))
        named.append(f"pid {h['pid']} ({who}: {command})")
    if not named:
        return f"another process (port {port}; it was gone when looked up)"
    return "; ".join(dict.fromkeys(named))


def port_taken(url: str, holder: str) -> Diagnosis:
    """Another process answers where this launch's vLLM is to listen: a failed start, never ready."""
    where = Address.of(url)
    return Diagnosis("port_in_use", BEFORE_START, {"port": where.port} if where.port else {},
                     (f"{where} accepts connections, but no process of this launch listens there: "
                      f"it is held by {holder}",), detail="taken_during_start")


class PortOwner(Protocol):
    """What the launch asks about the port: does the launch hold it, does anything accept, who holds it."""

    def ours(self, url: str, root_pid: int) -> bool: ...

    def accepts(self, url: str) -> bool: ...

    def holder(self, url: str) -> str: ...


@dataclass(frozen=True)
class PortWatch:
    """The real one: the launch's tree and its sockets through psutil, a bare connect for "accepts"."""

    tree: Callable[[int], list[tuple[int, str]]] = host_probe.descendants
    listeners_of: Callable[[Iterable[int]], set[tuple[str, int] | str]] = host_probe.listeners_of
    holders: Callable[[int], list[dict[str, Any]]] = host_probe.port_holders

    def ours(self, url: str, root_pid: int) -> bool:
        pids = [root_pid, *(pid for pid, _ in self.tree(root_pid))]
        return owns(self.listeners_of(pids), Address.of(url))

    def accepts(self, url: str) -> bool:
        where = Address.of(url)
        return ports.accepts(where.host, where.port, where.uds)

    def holder(self, url: str) -> str:
        where = Address.of(url)
        if where.uds is not None:
            return f"another process (the socket {printable(where.uds)} is not the launch's)"
        return describe_holders(self.holders(where.port or 0), where.port)
