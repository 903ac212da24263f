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


def _connection(base: str, timeout_s: float) -> http.client.HTTPConnection:
    """A connection to ``http://HOST:PORT`` or ``http+unix://PATH`` (a path or URL after it is ignored)."""
    if base.startswith("http+unix://"):
        return _UnixConnection(base[len("http+unix://"):].removesuffix("/health"), timeout_s)
    hostport = base[len("http://"):].split("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    return http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout_s)


def check(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET /health answers 200: ``http://HOST:PORT/health`` or ``http+unix://PATH/health``."""
    try:
        status, _ = call(url, "GET", "/health", timeout_s=timeout_s)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200


MAX_BODY_BYTES = 1 << 20  # a first request's answer is small; never hold more of one


def call(base: str, method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
         timeout_s: float = 30.0) -> tuple[int, bytes]:
    """One HTTP request to the served vLLM: (status, at most MAX_BODY_BYTES of the body).

    Raises:
        OSError, http.client.HTTPException: no answer (refused, reset, timed out).
    """
    conn = _connection(base, timeout_s)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(MAX_BODY_BYTES)
    finally:
        conn.close()
