"""The launch's leftover files: only its own are removed (new since the launch, this user's, held by no one)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from vllm_guard import leftovers


def test_only_the_launchs_own_unheld_files_are_removed(tmp_path: Path) -> None:
    shm, tmp = tmp_path / "shm", tmp_path / "tmp"
    shm.mkdir()
    tmp.mkdir()
    old = shm / "psm_before"  # there before the launch: someone else's
    old.write_bytes(b"x")
    before = leftovers.Before.take({"TMPDIR": str(tmp)}, time.time(), shm_dir=str(shm))
    ours = [shm / "psm_0a1b2c", shm / "sem.mp-x1y2", tmp / "vllm_dist_5095cab3cf88"]
    for path in ours:
        path.write_bytes(b"x")
    unrelated = shm / "other_segment"
    unrelated.write_bytes(b"x")
    held = shm / "psm_held"  # a second vLLM beside ours maps or opens its segments: never taken from it
    held.write_bytes(b"x")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(held)!r}); import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while str(held) not in leftovers_open_by(holder.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        removed = leftovers.remove_own(before)
    finally:
        holder.kill()
        holder.wait()
    assert sorted(removed) == sorted(str(p) for p in ours)
    assert old.exists() and unrelated.exists() and held.exists()
    assert not any(p.exists() for p in ours)


def leftovers_open_by(pid: int) -> set[str]:
    out = set()
    for fd in os.scandir(f"/proc/{pid}/fd"):
        try:
            out.add(os.readlink(fd.path))
        except OSError:
            continue
    return out


def test_a_symlink_planted_under_a_leftover_name_is_not_followed(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time(), shm_dir=str(shm))
    target = tmp_path / "precious"
    target.write_text("keep me")
    (shm / "psm_trap").symlink_to(target)
    assert leftovers.remove_own(before) == []
    assert target.read_text() == "keep me"
