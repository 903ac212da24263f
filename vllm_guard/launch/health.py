"""Readiness: vLLM answers GET /health with 200 once ready; before that, connections are refused.

vLLM 0.33 binds its port early but listens only after start-up (vllm-reference §3),
so "connection refused" means "not yet", never "failed".
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Callable
from typing import cast


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


def check(url: str, timeout_s: float = 5.0, should_stop: Callable[[], bool] | None = None) -> bool:
    """True when GET /health answers 200 within ``timeout_s``: ``http://HOST:PORT/health`` or
    ``http+unix://PATH/health``."""
    try:
        status, _ = call(url, "GET", "/health", timeout_s=timeout_s, should_stop=should_stop)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200


MAX_BODY_BYTES = 1 << 20  # a first request's answer is small; never hold more of one
_SLICE_S = 0.1  # how often a caller's wait looks at the stop flag


def call(base: str, method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
         timeout_s: float = 30.0, should_stop: Callable[[], bool] | None = None) -> tuple[int, bytes]:
    """One HTTP request to the served vLLM: (status, at most MAX_BODY_BYTES of the body), whole within
    ``timeout_s``.

    http.client's timeout bounds each recv, not the answer: a server that sends a byte a second never times
    out. So the request runs in a thread and the caller waits for the whole answer, at most ``timeout_s``
    and only while ``should_stop`` says no; then the socket is shut down, which ends the thread's recv.

    Raises:
        OSError, http.client.HTTPException: no answer (refused, reset); TimeoutError past the deadline,
        InterruptedError when ``should_stop`` said yes first.
    """
    conn = _connection(base, timeout_s)
    box: dict[str, object] = {}

    def work() -> None:
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            box["answer"] = (response.status, response.read(MAX_BODY_BYTES))
        except BaseException as e:  # handed to the caller, which raises it in its own thread
            box["error"] = e

    worker = threading.Thread(target=work, name="vllm-guard-http", daemon=True)
    deadline = time.monotonic() + timeout_s
    worker.start()
    stopped = False
    while worker.is_alive():
        left = deadline - time.monotonic()
        stopped = should_stop is not None and should_stop()
        if left <= 0 or stopped:
            break
        worker.join(min(_SLICE_S, left))
    if worker.is_alive():
        _abort(conn)
        worker.join(1.0)
        if stopped:
            raise InterruptedError("a stop was asked for")
        raise TimeoutError(f"no whole answer within {timeout_s:g}s")
    conn.close()
    error = box.get("error")
    if isinstance(error, BaseException):
        raise error
    return cast(tuple[int, bytes], box["answer"])


def _abort(conn: http.client.HTTPConnection) -> None:
    """End a request another thread is blocked in: shut the socket down (close alone may not wake a recv)."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    conn.close()
