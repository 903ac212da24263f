"""Ports and sockets as the guard sees them without psutil: can vLLM bind this port, does anything accept on it.

Who holds a socket (which process) is psutil's to say: ``probes.host.listeners_of`` and ``port_holders``.
"""

from __future__ import annotations

import errno
import os
import socket


def port_free(host: str | None, port: int) -> bool | None:
    """Whether vLLM could bind host:port now, by binding it ourselves (never by connecting anywhere).

    vLLM binds with SO_REUSEADDR (launcher.py:340-379), so a port in TIME_WAIT counts as free.
    """
    address = host or "0.0.0.0"
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return False
            return None  # e.g. an address of another machine: unknown here
        except (TypeError, ValueError):  # a NUL byte, a label too long for IDNA: not an address at all
            return None
    return True


def unix_socket_free(path: str) -> bool | None:
    """Whether nothing exists at the socket path yet (None: the path itself is impossible, e.g. too long)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return None
    return False


def accepts(host: str, port: int | None, uds: str | None, timeout_s: float = 0.5) -> bool:
    """Whether something accepts a connection at host:port (or the unix socket ``uds``) now.

    Only connects and closes: nothing is sent, so no secret reaches whoever answers.
    """
    family = socket.AF_UNIX if uds else (socket.AF_INET6 if ":" in host else socket.AF_INET)
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        try:
            s.connect(uds if uds else (host, port or 0))
        except (OSError, ValueError, TypeError):
            return False
    return True
