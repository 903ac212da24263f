"""The attempt log: one JSON line per start, appended and fsynced when the attempt ends, never rewritten.

The record's keys are a contract that external tools read (schema
``vllm-guard.attempt/1``). A partly written line (power loss, a full disk) is
skipped with a warning when the log is read, and the next append starts on a
new line. Writing it can never stop vLLM (``Writer``); directories are created
0700 and the file 0640, whatever the umask.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vllm_guard.safefile import LOG_TAIL_BYTES, check_dir, describe_mode, make_dirs, read_tail
from vllm_guard.schemas import ATTEMPT as ATTEMPT_SCHEMA


def state_dir(environ: Mapping[str, str]) -> Path:
    """VLLMGUARD_STATE_DIR, systemd's $STATE_DIRECTORY, else ~/.local/state/vllm-guard."""
    for candidate in (environ.get("VLLMGUARD_STATE_DIR"), environ.get("STATE_DIRECTORY")):
        if candidate:
            return Path(candidate.split(":")[0])
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "vllm-guard"


def profile_stem(name: str, path: Path | None, model: str) -> str:
    """The file name (without suffix) of a profile's state: its name and a hash of its full path, or of the model
    id for a profile without a file (`serve MODEL`).

    By name alone, /srv/a/p.toml and /srv/b/p.toml shared one attempt log and one set of remembered relaxations.
    """
    where = str(path.absolute()) if path is not None else f"model:{model}"
    digest = hashlib.sha256(where.encode("utf-8", errors="surrogateescape")).hexdigest()[:STEM_HASH_CHARS]
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80].lstrip(".") or "profile"
    return f"{safe}-{digest}"


STEM_HASH_CHARS = 12


def log_path(setting: str | None, stem: str, environ: Mapping[str, str]) -> Path:
    """VLLMGUARD_ATTEMPT_LOG, then guard.attempt-log, then one file per profile (``profile_stem``) in the state dir."""
    chosen = environ.get("VLLMGUARD_ATTEMPT_LOG") or setting
    if chosen:
        return Path(chosen)
    return state_dir(environ) / f"{stem}.jsonl"


def logs_named(name: str, environ: Mapping[str, str]) -> list[Path]:
    """The attempt logs in the state dir of profiles called ``name`` (`vllm-guard attempts NAME` from a shell):
    one per profile file of that name, and the log of the name alone that earlier guards wrote."""
    base = state_dir(environ)
    pattern = re.compile(re.escape(name) + "-[0-9a-f]{" + str(STEM_HASH_CHARS) + r"}\.jsonl")
    try:
        found = sorted(base / n for n in os.listdir(base) if pattern.fullmatch(n))
    except OSError:
        found = []
    legacy = base / f"{name}.jsonl"
    return [*found, legacy] if os.path.lexists(legacy) else found


class Writer:
    """The attempt log as serving sees it: an append never raises and never blocks.

    The log is a record, not a precondition: a read-only file system, a full disk, a
    directory or a FIFO in the way must not take down a vLLM that has just become ready.
    The first failure is reported once through ``on_error``; later appends are still
    tried (the disk may have been freed) and stay quiet.
    """

    def __init__(self, path: Path, *, on_error: Callable[[str], None]) -> None:
        self.path = path
        self.on_error = on_error
        self.failed = False

    def append(self, record: Mapping[str, Any]) -> bool:
        try:
            append(self.path, record)
            return True
        except (OSError, LogProblem, ValueError) as e:
            if not self.failed:
                self.failed = True
                reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                with contextlib.suppress(Exception):  # the report itself must not stop serving either
                    self.on_error(f"cannot write the attempt log {self.path}: {reason}; vLLM keeps running, "
                                  "but this start is not recorded")
            return False


class LogProblem(Exception):
    """An attempt log path the guard will not write to (a link, a FIFO, another user's file)."""


def append(path: Path, record: Mapping[str, Any]) -> None:
    """Append one record and fsync it: the record survives a crash of the guard right after.

    A torn last line (a crash or a full disk mid-record) is closed first, so it cannot swallow
    this record. The file is opened without following a link and without blocking.

    Raises:
        OSError: the directory or the file cannot be created or written (EROFS, ENOSPC, EISDIR, ...).
        LogProblem: the path is a link, a FIFO or a socket, has several links, or is another user's file.
    """
    line = (json.dumps({"schema": ATTEMPT_SCHEMA, **record}, separators=(",", ":"), default=str) + "\n").encode(
        "utf-8", errors="backslashreplace")
    make_dirs(path.parent, 0o700)
    problem = check_dir(path.parent)
    if problem is not None:
        raise LogProblem(f"unsafe directory: {problem}")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o640)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LogProblem(f"{path} is a symbolic link; the guard does not follow it") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if st.st_nlink != 1 or st.st_uid != os.geteuid():
                raise LogProblem(f"{path} has {st.st_nlink} links or belongs to uid {st.st_uid}: not this user's log")
            if st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n":
                line = b"\n" + line
        elif not stat.S_ISCHR(st.st_mode):  # /dev/null is a fine way to keep no log
            raise LogProblem(f"{path} is {describe_mode(st.st_mode)}, not a file")
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError(errno.EIO, "short write")
            view = view[written:]
        if stat.S_ISREG(st.st_mode):
            os.fsync(fd)
    finally:
        os.close(fd)


def read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """All records, and warnings for lines that could not be read (a torn line, a foreign or malformed record).

    Only the last LOG_TAIL_BYTES are read; every field the table shows is checked for its type,
    so a hand-edited or damaged log gives warnings, never a crash.

    Raises:
        FileNotFoundError: no log at ``path``.
        FileProblem: not a regular file, or unreadable.
    """
    data, cut = read_tail(path, LOG_TAIL_BYTES)
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    lines = data.decode("utf-8", errors="replace").split("\n")
    if cut:
        warnings.append(f"{path}: only the last {LOG_TAIL_BYTES // 2**20} MiB are read")
        lines = lines[1:]  # the first line is cut
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            warnings.append(f"{path}:{number}: skipped a partly written line")
            continue
        except (ValueError, RecursionError):  # a 5,000-digit number, arrays nested thousands deep
            warnings.append(f"{path}:{number}: skipped a malformed line")
            continue
        if isinstance(record, dict) and str(record.get("schema", "")).startswith("vllm-guard.attempt/"):
            fixed, dropped = _well_formed(record)
            if dropped:
                warnings.append(f"{path}:{number}: ignored malformed field(s): {', '.join(dropped)}")
            records.append(fixed)
        else:
            warnings.append(f"{path}:{number}: not an attempt record")
    return records, warnings


# The fields a reader relies on, and the shape each must have.
_SHAPES: dict[str, Callable[[Any], bool]] = {
    "attempt": lambda v: isinstance(v, (int, str)) and not isinstance(v, bool),
    "started_at": lambda v: isinstance(v, str),
    "ended_at": lambda v: isinstance(v, str),
    "duration_s": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "outcome": lambda v: isinstance(v, str),
    "phase": lambda v: isinstance(v, str),
    "changed": lambda v: isinstance(v, dict) and all(isinstance(x, list) and len(x) == 2 for x in v.values()),
    "failure": lambda v: isinstance(v, dict) and isinstance(v.get("class", ""), str),
    "next": lambda v: isinstance(v, dict),
    "reported": lambda v: isinstance(v, dict),
}


def _well_formed(record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    fixed = dict(record)
    dropped = []
    for key, ok in _SHAPES.items():
        if fixed.get(key) is not None and not ok(fixed[key]):
            del fixed[key]
            dropped.append(key)
    return fixed, dropped
