"""Per-GPU launch locks: two guards starting on one GPU go one after the other.

An exclusive flock per GPU UUID, held from the free-memory re-check until the
attempt is ready or has failed, so the second guard sees the memory the first took.
The lock file names its holder, so a waiting guard can say who it waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO


def lock_dir(setting: str | None, environ: Mapping[str, str]) -> Path:
    """guard.lock-dir, VLLMGUARD_LOCK_DIR, $RUNTIME_DIRECTORY, /run/vllm-guard if writable, a per-user temp dir."""
    for candidate in (environ.get("VLLMGUARD_LOCK_DIR"), setting, environ.get("RUNTIME_DIRECTORY")):
        if candidate:
            return Path(candidate.split(":")[0])  # systemd may list several runtime directories
    run = Path("/run/vllm-guard")
    if run.is_dir() and os.access(run, os.W_OK):
        return run
    return Path(tempfile.gettempdir()) / f"vllm-guard-{os.getuid()}"


class GpuLocks:
    """Exclusive locks on a set of GPUs, always taken in sorted order (no deadlock between two guards)."""

    def __init__(self, directory: Path, uuids: list[str], holder: Mapping[str, object]) -> None:
        self.directory = directory
        self.uuids = sorted(set(uuids))
        self.holder = dict(holder)
        self._files: list[IO[str]] = []

    def acquire(self, *, on_wait: Callable[[str, str], None], poll_s: float = 0.5,
                should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Take every lock, waiting as long as needed; False if asked to stop while waiting."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for uuid in self.uuids:
            path = self.directory / f"gpu-{uuid}.lock"
            f = path.open("a+")
            told = False
            while True:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not told:
                        on_wait(uuid, _read_holder(path))
                        told = True
                    if should_stop():
                        f.close()
                        self.release()
                        return False
                    time.sleep(poll_s)
            f.seek(0)
            f.truncate()
            f.write(json.dumps({**self.holder, "pid": os.getpid(), "since": time.time()}))
            f.flush()
            self._files.append(f)
        return True

    def release(self) -> None:
        for f in self._files:
            with contextlib.suppress(OSError):
                f.seek(0)
                f.truncate()
                fcntl.flock(f, fcntl.LOCK_UN)
                f.close()
        self._files = []


def _read_holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another guard"
    who = f"pid {info.get('pid', '?')}"
    if info.get("profile"):
        who += f" ({info['profile']})"
    return who
