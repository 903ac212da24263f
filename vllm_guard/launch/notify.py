"""systemd's notify protocol: datagrams to $NOTIFY_SOCKET (sd_notify(3)), a few lines of code.

READY=1 only when vLLM's /health answers; STATUS= on every phase and attempt;
EXTEND_TIMEOUT_USEC= while a start makes progress, so TimeoutStartSec can stay
short for a hung start; WATCHDOG=1 while ready and healthy; STOPPING=1 when a
stop begins. Without $NOTIFY_SOCKET every call is a no-op.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class Notifier:
    def __init__(self, environ: Mapping[str, str]) -> None:
        address = environ.get("NOTIFY_SOCKET") or ""
        # An abstract socket is written "@name"; its real address starts with a NUL byte.
        self.address = "\0" + address[1:] if address.startswith("@") else address
        watchdog_pid = environ.get("WATCHDOG_PID")
        usec = environ.get("WATCHDOG_USEC", "")
        ours = watchdog_pid in (None, "", str(os.getpid()))
        self.watchdog_interval_s = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 and ours else None

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        """Send one datagram; False when there is no socket or systemd is not listening."""
        if not self.address:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(self.address)
                s.sendall("\n".join(fields).encode())
        except OSError:
            return False
        return True

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def ready(self, text: str) -> None:
        self.send("READY=1", f"STATUS={text}")

    def extend_timeout(self, seconds: float) -> None:
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def stopping(self, text: str) -> None:
        self.send("STOPPING=1", f"STATUS={text}")
