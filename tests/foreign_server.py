"""Another user's server on the guard's port, for the tests of issue 23's false READY."""

from __future__ import annotations

import http.server
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
