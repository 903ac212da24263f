from __future__ import annotations

import io
import random
import socket
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from vllm_guard.cli import main as cli

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
MACHINES = ROOT / "profiles" / "machines"
L4 = str(MACHINES / "l4-24gb.json")


def _ephemeral_ports() -> range:
    """The kernel's range for ports bound as port 0 (Linux's default 32768-60999 where /proc does not say)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the test's vLLM binds it a moment later), outside the ephemeral range.

    A port the kernel handed out for port 0 can be handed out again the moment the probe socket closes: in CI a
    Ray worker's gRPC server took the port a test had chosen for its vLLM before the guard started. Ports below the
    ephemeral range are taken only by a process that names them.
    """
    ephemeral = _ephemeral_ports()
    candidates = [p for p in range(10000, 32768) if p not in ephemeral] or list(range(10000, 32768))
    for port in random.sample(candidates, len(candidates)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free TCP port on 127.0.0.1 outside the ephemeral range")


def wait_healthy(port: int, alive: Callable[[], None], timeout: float = 40) -> None:
    """Until GET /health on 127.0.0.1:PORT answers 200; ``alive`` raises when what should answer has died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            alive()
            time.sleep(0.1)
    raise AssertionError(f"nothing answered /health on port {port} within {timeout}s")


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(*argv: str, env: dict[str, str] | None = None) -> Result:
    """Run the real cli.main() with a clean, offline environment; return code and output."""
    base = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}
    base.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), environ=base, stdout=out, stderr=err)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def write_profile(tmp_path: Path):
    def write(text: str, name: str = "p.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def blind_log(name: str, prefix: str) -> str:
    """A log of a blind set of issue 26 (tests/data/real-logs/NAME) by its file name's prefix ("b014")."""
    return next((DATA / "real-logs" / name).glob(f"{prefix}-*.log")).read_text()


def skipped_plugin_chain(frame: str, source: str, error: str) -> str:
    """The traceback vLLM logs for a plugin it failed to load and went on without (plugins/__init__.py), its import
    of timm missing, and a second traceback chained to it (`raise ... from e`) through FRAME, SOURCE and ERROR."""
    p = "(EngineCore_DP0 pid=300) "
    return (f"{p}ERROR 10-17 16:49:11 [__init__.py:45] Failed to load plugin foo_plugin\n"
            f"{p}Traceback (most recent call last):\n"
            f"{p}  File \"/x/foo_plugin/__init__.py\", line 3, in <module>\n{p}    import timm\n"
            f"{p}ModuleNotFoundError: No module named 'timm'\n{p}\n"
            f"{p}The above exception was the direct cause of the following exception:\n{p}\n"
            f"{p}Traceback (most recent call last):\n{p}  {frame}\n{p}    {source}\n{p}{error}\n")


def assert_reads_and_stops(text: str, cls: str, detail: str, helps: str) -> None:
    """`explain` reads TEXT as CLS with DETAIL, its advice says HELPS, and the ladder stops with the detail's own
    reason (a failure no setting of the profile fixes)."""
    from vllm_guard.diagnose.classify import classify
    from vllm_guard.diagnose.details import advice_for
    from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step

    d = classify(text)
    assert (d.cls, d.detail) == (cls, detail)
    assert any(helps in h for h in advice_for(d).helps), advice_for(d).helps
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]
