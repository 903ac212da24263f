"""The HTTP side the fake engines share (tests/fake_vllm.py, tests/ray_engine_fake.py): JSON answers, no access log.

Both fakes run as scripts, so this module is found next to them (the script's directory is on sys.path).
"""

from __future__ import annotations

import http.server
import json


class JsonHandler(http.server.BaseHTTPRequestHandler):
    def _json(self, status: int, doc: object) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a: object) -> None:
        pass  # vLLM's uvicorn access log is not what the guard reads
