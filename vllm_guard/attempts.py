"""The attempt log: one JSON line per start, appended and fsynced when the attempt ends, never rewritten.

The record's keys are a contract that external tools read (schema
``vllm-guard.attempt/1``). A partly written last line (power loss) is skipped
with a warning when the log is read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ATTEMPT_SCHEMA = "vllm-guard.attempt/1"


def state_dir(environ: Mapping[str, str]) -> Path:
    """VLLMGUARD_STATE_DIR, systemd's $STATE_DIRECTORY, else ~/.local/state/vllm-guard."""
    for candidate in (environ.get("VLLMGUARD_STATE_DIR"), environ.get("STATE_DIRECTORY")):
        if candidate:
            return Path(candidate.split(":")[0])
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "vllm-guard"


def log_path(setting: str | None, profile_name: str, environ: Mapping[str, str]) -> Path:
    """VLLMGUARD_ATTEMPT_LOG, then guard.attempt-log, then one file per profile name in the state dir."""
    chosen = environ.get("VLLMGUARD_ATTEMPT_LOG") or setting
    if chosen:
        return Path(chosen)
    return state_dir(environ) / f"{profile_name}.jsonl"


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Append one record and fsync it: the record survives a crash of the guard right after."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"schema": ATTEMPT_SCHEMA, **record}, separators=(",", ":"), default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """All records, and warnings for lines that could not be read (a torn last line)."""
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                warnings.append(f"{path}:{number}: skipped a partly written line")
                continue
            if isinstance(record, dict) and str(record.get("schema", "")).startswith("vllm-guard.attempt/"):
                records.append(record)
            else:
                warnings.append(f"{path}:{number}: not an attempt record")
    return records, warnings
