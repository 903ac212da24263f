"""The real-vLLM tier: the guard in front of a real vLLM (the CPU build) serving a tiny model made here.

The engine lives in its own virtual environment (tests/real_vllm/install.sh; `.ci/run` installs it),
named by REAL_VLLM_VENV or found at ~/.cache/vllm-guard-real/venv. Without it every test here skips,
saying how to install it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
DEFAULT_VENV = Path.home() / ".cache" / "vllm-guard-real" / "venv"


def venv() -> Path:
    return Path(os.environ.get("REAL_VLLM_VENV") or DEFAULT_VENV)


@pytest.fixture(scope="session")
def real_vllm() -> Path:
    exe = venv() / "bin" / "vllm"
    if not exe.exists():
        if os.environ.get("REAL_VLLM_REQUIRED") == "1":  # .ci/run: the tier must run, never skip
            pytest.fail(f"REAL_VLLM_REQUIRED=1 but there is no vLLM at {venv()}", pytrace=False)
        pytest.skip(f"the real-vLLM tier needs a CPU build of vLLM at {venv()}: "
                    f"`bash tests/real_vllm/install.sh {venv()}` installs it (.ci/run does)")
    return exe


@pytest.fixture(scope="session")
def tiny_model(real_vllm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run([str(venv() / "bin" / "python"), str(HERE / "make_tiny_model.py"), str(out)], check=True)
    return out


@pytest.fixture(scope="session")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One HOME for the tier, so vLLM's torch.compile cache is warmed once and reused."""
    return tmp_path_factory.mktemp("home")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _all_stats() -> dict[int, list[str]]:
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                out[int(entry.name)] = st
    return out


def name_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")[:60]
    except OSError:
        return "?"


class LaunchWatch:
    """Every process a guard started, seen from /proc while it ran: its subtree and its sessions.

    A process counts as left behind if it is one of those (same pid and start time) and not a zombie,
    or if it lives in one of the sessions the launch created (the keeper's).
    """

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.seen: dict[int, str] = {}  # pid -> start time
        self.sessions: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.1)

    def sample(self) -> None:
        stats = _all_stats()
        children: dict[int, list[int]] = {}
        for pid, st in stats.items():
            children.setdefault(int(st[1]), []).append(pid)
        todo = [self.root]
        while todo:
            for child in children.get(todo.pop(), []):
                st = stats[child]
                self.seen.setdefault(child, st[19])
                if int(st[3]) == child:  # a session leader: the keeper
                    self.sessions.add(child)
                todo.append(child)

    def tree(self) -> list[int]:
        self.sample()
        return [pid for pid in self.seen if (st := _stat(pid)) is not None and st[19] == self.seen[pid]]

    def left(self) -> list[tuple[int, str]]:
        out = []
        for pid, st in _all_stats().items():
            if st[0] == "Z":
                continue
            ours = self.seen.get(pid) == st[19] or int(st[3]) in self.sessions
            if ours and pid != self.root:
                out.append((pid, name_of(pid)))
        return out

    def gone_within(self, seconds: float) -> bool:
        self._stop.set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.left():
                return True
            time.sleep(0.1)
        return False


class Output:
    """A process's output, read as it comes, so a test can wait for a line."""

    def __init__(self, *streams: object) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()
        for stream in streams:
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        with contextlib.suppress(ValueError, OSError):
            for line in stream:  # type: ignore[attr-defined]
                with self._lock:
                    self.lines.append(line.rstrip("\n"))

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_for(self, needle: str, proc: subprocess.Popen[str], timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if proc.poll() is not None:
                time.sleep(0.5)
                raise AssertionError(f"exited {proc.returncode} before {needle!r}:\n{self.text()[-4000:]}")
            time.sleep(0.1)
        raise AssertionError(f"no {needle!r} within {timeout}s:\n{self.text()[-4000:]}")


def guard_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "vllm_guard", "serve", *args]
