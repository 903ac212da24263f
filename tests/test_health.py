"""Readiness probe over TCP and over a unix socket (vLLM's --uds), against real servers."""

from __future__ import annotations

import http.server
import socketserver
import threading
from pathlib import Path

from vllm_guard import health


class _Handler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass

    def address_string(self) -> str:  # a unix socket has no (host, port)
        return "local"


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def test_tcp_ready_then_refused() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert health.check(f"http://127.0.0.1:{port}/health")
    finally:
        server.shutdown()
        server.server_close()
    assert not health.check(f"http://127.0.0.1:{port}/health")  # connection refused: not yet


def test_503_is_not_ready() -> None:
    class Dead(_Handler):
        status = 503

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dead)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert not health.check(f"http://127.0.0.1:{server.server_address[1]}/health")
    finally:
        server.shutdown()
        server.server_close()


def test_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "vllm.sock"
    server = _UnixHTTPServer(str(path), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert health.check(f"http+unix://{path}/health")
    finally:
        server.shutdown()
        server.server_close()
    assert not health.check(f"http+unix://{path}/health")
