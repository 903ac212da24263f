"""Readiness: vLLM answers GET /health with 200 once ready; before that, connections are refused.

vLLM 0.33 binds its port early but listens only after start-up (vllm-reference §3),
so "connection refused" means "not yet", never "failed".
"""

from __future__ import annotations

import http.client
import socket


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def check(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET /health answers 200: ``http://HOST:PORT/health`` or ``http+unix://PATH/health``."""
    conn: http.client.HTTPConnection
    if url.startswith("http+unix://"):
        conn = _UnixConnection(url[len("http+unix://"):].rsplit("/health", 1)[0], timeout_s)
    else:
        hostport = url[len("http://"):].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout_s)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
