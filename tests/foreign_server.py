"""Other people's servers on a port the guard uses: one that answers as a vLLM would (issue 23's false READY),
and one that accepts and never answers (a Ray address where no Ray listens, issue 28)."""

from __future__ import annotations

import http.server
import socket
import threading


class ForeignServer:
    """Another user's server on our port: answers /health and /v1/models as a vLLM would, keeps every
    request's Authorization header (the profile's API key must never arrive here)."""

    def __init__(self, port: int) -> None:
        self.authorizations: list[str | None] = []
        seen = self.authorizations
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                paths.append(self.path)
                body = b'{"data": [{"id": "someone-elses-model"}]}' if self.path == "/v1/models" else b"{}"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SilentPort:
    """A TCP port on 127.0.0.1 that accepts every connection, counts it, and never says a word: it holds the
    connections open (``hold``) or closes them at once."""

    def __init__(self, *, hold: bool) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hold = hold
        self.held: list[socket.socket] = []
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            if self.hold:
                self.held.append(conn)
            else:
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for c in self.held:
            c.close()
        self.sock.close()
