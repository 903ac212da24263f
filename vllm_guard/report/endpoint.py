"""The guard's status endpoint (guard.status-address): /livez, /startupz, /readyz and /metrics over HTTP.

For a Kubernetes pod whose entrypoint is the guard (docs/kubernetes.md): the kubelet's probes ask the guard, which
knows the attempt, the phase and the ladder's budget, instead of vLLM's port, which refuses or hangs while the
model loads. It runs in its own threads (one per request, daemon threads, a timeout per request) and only reads
the ``GuardState`` (report/guardstate.py): a slow or hostile client never blocks the supervisor, and nothing
vLLM wrote is ever served.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vllm_guard.errors import UsageError
from vllm_guard.report.guardstate import GAVE_UP, READY, GuardState, View
from vllm_guard.schemas import STATUS

REQUEST_TIMEOUT_S = 5.0  # a client that sends its request slower than this is dropped
JSON = "application/json"


def document(v: View) -> dict[str, Any]:
    """What /livez, /startupz and /readyz answer alike (vllm-guard.status/1); each path's HTTP status is its own."""
    return {"schema": STATUS, "state": v.stage, "attempt": v.attempt, "of": v.of, "phase": v.phase,
            "since_s": v.since_s, "waiting_for": v.waiting_for, "ready": v.serves, "stopping": v.stopping}


def startup(v: View) -> int:
    """/startupz: 200 once vLLM was ready, 500 after the ladder gave up, 503 while the guard starts."""
    return 200 if v.stage == READY or v.time_to_ready_s is not None else 500 if v.stage == GAVE_UP else 503


def readiness(v: View) -> int:
    """/readyz: 200 only while vLLM is ready (its /health and the first request passed) and its /health passes;
    503 from the stop signal on, so that no new request comes while vLLM drains."""
    return 200 if v.serves else 503


def liveness(v: View) -> int:
    """/livez: 200 while the guard runs and supervises (waiting for a lock or a GPU too)."""
    return 200


ROUTES = {"/livez": liveness, "/startupz": startup, "/readyz": readiness}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: GuardState
    metrics: Any  # the prometheus_client registry (report/metrics.py)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_S
    server_version = "vllm-guard"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        view = self.server.state.view()
        if path == "/metrics":
            from vllm_guard.report import metrics

            self._send(200, metrics.render(self.server.metrics), metrics.CONTENT_TYPE, body)
            return
        route = ROUTES.get(path)
        if route is None:
            self._send(404, json.dumps({"error": "not found", "paths": [*ROUTES, "/metrics"]}).encode(), JSON, body)
            return
        self._send(route(view), (json.dumps(document(view)) + "\n").encode(), JSON, body)

    def _send(self, code: int, data: bytes, content_type: str, body: bool) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # the kubelet asks every few seconds: no log line
        return


class StatusEndpoint:
    """Bound at once (or a usage error, exit 2), served from a daemon thread until ``close``."""

    def __init__(self, state: GuardState, host: str, port: int) -> None:
        from vllm_guard.report import metrics

        server_class = type("_Server6", (_Server,), {"address_family": socket.AF_INET6}) if ":" in host else _Server
        try:
            self.server = server_class((host, port), _Handler)
        except (OSError, OverflowError) as e:
            raise UsageError(f"the status endpoint cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}",
                             hint="choose a free port and an address of this host (guard.status-address or "
                             "--status-address, e.g. 0.0.0.0:9090), or leave it unset") from None
        self.state = state
        self.server.state = state
        self.server.metrics = metrics.registry_for(state)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name="vllm-guard-status", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
