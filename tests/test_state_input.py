"""State is input (issue 28, item 4): registry entries, remembered relaxations and their keys, read from files
other users or a damaged disk may have written. Real files, FIFOs, links; never a crash, a hang or an echo."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vllm_guard.state import registry

NOW = "2026-12-01T00:00:00+00:00"


def entry_doc(**kw: object) -> dict:
    doc = {"schema": registry.SCHEMA, "guard_pid": os.getpid(), "guard_started": 1.0, "profile": "p.toml",
           "model": "m", "state": "ready", "since": NOW, "attempt": 1, "gpus": [0], "port": 8000}
    doc.update(kw)
    return doc


@pytest.mark.parametrize("started", ["1" + "0" * 400, "1e400", "-1", "NaN", "Infinity", "true", '"100"'])
def test_a_registry_entry_with_a_hostile_start_time_is_passed_over(tmp_path: Path, started: str) -> None:
    """A 400-digit number once crashed every user's `ps` (float() overflowed)."""
    text = json.dumps(entry_doc()).replace('"guard_started": 1.0', f'"guard_started": {started}')
    (tmp_path / f"instance-{os.getpid()}.json").write_text(text)
    entries, notes = registry.read_entries(tmp_path)
    assert entries == []
    assert notes and "not a guard's entry" in notes[0]


def test_a_registry_entry_with_a_sane_start_time_is_read(tmp_path: Path) -> None:
    (tmp_path / f"instance-{os.getpid()}.json").write_text(json.dumps(entry_doc(guard_started=1764547200.5)))
    entries, _ = registry.read_entries(tmp_path)
    assert [e.guard_started for e in entries] == [1764547200.5]


def test_a_pre_created_temp_name_does_not_hide_a_guard(tmp_path: Path) -> None:
    """The old temp name was fixed (.instance-PID.json.PID.tmp): something put there first (here a directory,
    which nobody can unlink as a file) made the registration fail, and the guard was missing from `ps`."""
    path = registry.path_for(tmp_path, os.getpid())
    (tmp_path / f".{path.name}.{os.getpid()}.tmp").mkdir()
    entry = registry.entry_from_dict(entry_doc())
    assert entry is not None
    assert registry.write_entry(path, entry) is None
    assert json.loads(path.read_text())["guard_pid"] == os.getpid()
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p.is_file()] == []
