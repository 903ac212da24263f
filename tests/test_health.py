"""Readiness probe over TCP and over a unix socket (vLLM's --uds), against real servers."""

from __future__ import annotations

import contextlib
import http.server
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

from vllm_guard.launch import health


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


@contextlib.contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[None]:
    """Serve in a thread; shut down and close on exit, so the address is refused afterwards."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def test_tcp_ready_then_refused() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/health"
    with serving(server):
        assert health.check(url)
    assert not health.check(url)  # connection refused: not yet


def test_503_is_not_ready() -> None:
    class Dead(_Handler):
        status = 503

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dead)
    with serving(server):
        assert not health.check(f"http://127.0.0.1:{server.server_address[1]}/health")


def test_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "vllm.sock"
    with serving(_UnixHTTPServer(str(path), _Handler)):
        assert health.check(f"http+unix://{path}/health")
    assert not health.check(f"http+unix://{path}/health")


class _Trickle(http.server.BaseHTTPRequestHandler):
    """A /health that sends its answer a byte every 0.2 s: each recv gets a byte, the answer never ends."""

    def do_GET(self) -> None:
        import time

        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        self.wfile.flush()
        try:
            for _ in range(200):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass  # the guard shut its side down

    def log_message(self, *args: object) -> None:
        pass


def test_a_trickling_health_is_a_miss_within_the_whole_answer_deadline() -> None:
    """Issue 28: http.client's timeout is per recv, so a trickle never timed out; the deadline is the answer's."""
    import time

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    with serving(server):
        url = f"http://127.0.0.1:{server.server_address[1]}/health"
        started = time.monotonic()
        assert health.check(url, timeout_s=1.0) is False
        took = time.monotonic() - started
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        started = time.monotonic()
        assert health.check(url, timeout_s=60.0, should_stop=stop.is_set) is False
        stopped_after = time.monotonic() - started
    assert took < 3.0 and stopped_after < 3.0  # bounds, generous: the point is "not 40 s, not forever"
