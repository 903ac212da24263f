"""The registry of running guards, for `vllm-guard ps`: one small JSON file per guard, kept current.

Each supervising guard writes ``instance-<guard pid>.json`` in the launch-lock
directory (``lock.lock_dir``): on a shared host that is ``/run/lock/vllm-guard``,
which every local user shares, so `ps` run by anyone sees every guard. The file
says what the guard runs (profile, model, GPUs, port), its keeper and vLLM pids,
the state (starting / ready / relaxed) and since when, and the attempt.

Other users can write files in that directory too, so what is read back is
untrusted: files are opened without following links, size-limited, validated
field by field, and an entry counts only while its guard process is alive, was
started when the entry says (no reused pid) and belongs to the file's owner
(``instances.find_instances``). Writing never raises: a guard serves whether or
not `ps` can see it, and says once when it cannot register.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from vllm_guard.safefile import FileProblem, read_limited
from vllm_guard.schemas import INSTANCE as SCHEMA

ENTRY_MAX_BYTES = 64 * 1024
MAX_ENTRIES = 4096  # a directory flooded with files is read this far, no further
PREFIX = "instance-"
STATES = ("starting", "ready", "relaxed")


@dataclass(frozen=True)
class Entry:
    guard_pid: int
    guard_started: float | None  # the guard's start time (seconds since the epoch): a reused pid is not it
    profile: str | None
    model: str
    state: str  # starting | ready | relaxed
    since: str  # ISO time the state began
    attempt: int
    gpus: tuple[int, ...] = ()
    port: int | None = None
    uds: str | None = None
    keeper_pid: int | None = None
    vllm_pid: int | None = None
    owner_uid: int | None = None  # from the file, when read back; never written

    def to_dict(self) -> dict[str, Any]:
        doc = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "owner_uid"}
        return {"schema": SCHEMA, **doc, "gpus": list(self.gpus)}


def path_for(directory: Path, guard_pid: int) -> Path:
    return directory / f"{PREFIX}{guard_pid}.json"


class Registration:
    """This guard's entry: written at once, rewritten on every change, removed at the end."""

    def __init__(self, directory: Path, entry: Entry, *, on_error: Callable[[str], None]) -> None:
        self.path = path_for(directory, entry.guard_pid)
        self.entry = entry
        self._on_error = on_error
        self._failed = False
        self._write()

    def update(self, **changes: Any) -> None:
        self.entry = replace(self.entry, **changes)
        self._write()

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            # Only our own entry: a file someone else put under our name is theirs to remove.
            if os.lstat(self.path).st_uid == os.geteuid():
                os.unlink(self.path)

    def _write(self) -> None:
        if self._failed:
            return
        error = write_entry(self.path, self.entry)
        if error is not None:
            self._failed = True
            self._on_error(f"not listed by `vllm-guard ps`: {error}")


def write_entry(path: Path, entry: Entry) -> str | None:
    """Replace the entry atomically (a new file renamed over the old one); the reason when it cannot."""
    data = (json.dumps(entry.to_dict(), sort_keys=True) + "\n").encode()
    tmp = ""
    try:
        # mkstemp: a new name of random letters, created with O_EXCL (never through a link, never a file someone
        # else prepared). A fixed name (".instance-PID.json.PID.tmp") let another user pre-create it in the
        # sticky directory, and the guard, unable to write, was hidden from `ps`.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o644)  # readable by every user's `ps`, whatever the umask
            os.write(fd, data)
        finally:
            os.close(fd)
        # In the sticky shared directory, rename cannot replace another user's file: it fails instead.
        os.rename(tmp, path)
    except OSError as e:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return f"cannot write {path}: {e.strerror or e}"
    return None


def read_entries(directory: Path, live_pids: Collection[int] | None = None) -> tuple[list[Entry], list[str]]:
    """Every well-formed entry in the directory, with its owner; and notes on what was passed over.

    Another user can fill a shared directory with files: only names of the exact form ``instance-<pid>.json``
    count, the entries of processes alive now (``live_pids``) are read first, at most MAX_ENTRIES in all,
    and what was passed over is summed up in a few notes, never one line per file.
    """
    entries: list[Entry] = []
    problems: list[str] = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return [], [f"{directory} does not exist: no guard has registered there"]
    except OSError as e:
        return [], [f"cannot read the registry {directory}: {e.strerror or e}"]
    pids = sorted({pid for name in names if (pid := _pid_of(name)) is not None},
                  key=lambda pid: (live_pids is not None and pid not in live_pids, pid))
    odd = sum(1 for name in names if name.startswith(PREFIX) and _pid_of(name) is None)
    for pid in pids[:MAX_ENTRIES]:
        path = path_for(directory, pid)
        try:
            st = os.lstat(path)
            # Never through a link (it could point at a device that acts on being opened); O_NOFOLLOW too,
            # for a link put there after the lstat.
            if stat.S_ISLNK(st.st_mode):
                raise FileProblem("a symbolic link, not followed")
            doc = json.loads(read_limited(path, ENTRY_MAX_BYTES, follow_links=False))
        except FileNotFoundError:
            continue  # its guard removed it meanwhile
        except (OSError, FileProblem, ValueError, RecursionError) as e:  # RecursionError: "[[[[..." nested deep
            problems.append(f"{path.name}: {str(e)[:200]}")
            continue
        entry = entry_from_dict(doc)
        if entry is None:
            problems.append(f"{path.name}: not a guard's entry")
        elif entry.guard_pid != pid:
            problems.append(f"{path.name}: its name and its guard pid disagree")
        else:
            entries.append(replace(entry, owner_uid=st.st_uid))
    notes = []
    if problems:
        notes.append(f"{len(problems)} file(s) in {directory} passed over: " + "; ".join(problems[:3])
                     + ("; ..." if len(problems) > 3 else ""))
    if odd:
        notes.append(f"{odd} file(s) in {directory} named like entries but not instance-<pid>.json: ignored")
    if len(pids) > MAX_ENTRIES:
        notes.append(f"{len(pids) - MAX_ENTRIES} entries of processes not running now were not read "
                     f"(more than {MAX_ENTRIES} in {directory})")
    return entries, notes


def _pid_of(name: str) -> int | None:
    """The pid of an entry's file name, only in the form this module writes (no sign, no leading zero)."""
    digits = name.removeprefix(PREFIX).removesuffix(".json")
    if not (name.startswith(PREFIX) and name.endswith(".json") and digits.isascii() and digits.isdigit()):
        return None
    pid = int(digits)
    return pid if str(pid) == digits and 0 < pid < 2**31 else None


def entry_from_dict(doc: Any) -> Entry | None:
    """An entry from untrusted JSON, or None when any field has the wrong type."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None

    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31

    def opt_int(key: str) -> bool:
        return doc.get(key) is None or is_int(doc[key])

    def opt_str(key: str) -> bool:
        return doc.get(key) is None or (isinstance(doc[key], str) and len(doc[key]) <= 4096)

    gpus = doc.get("gpus", [])
    started = doc.get("guard_started")
    if not _aware_time(doc.get("since")):
        return None
    ok = (is_int(doc.get("guard_pid")) and isinstance(doc.get("model"), str) and len(doc["model"]) <= 4096
          and doc.get("state") in STATES and isinstance(doc.get("since"), str) and len(doc["since"]) <= 64
          and is_int(doc.get("attempt")) and isinstance(gpus, list) and len(gpus) <= 1024
          and all(isinstance(g, int) and not isinstance(g, bool) and 0 <= g < 1 << 16 for g in gpus)
          and (started is None or _epoch_seconds(started))
          and opt_int("port") and opt_int("keeper_pid") and opt_int("vllm_pid")
          and opt_str("profile") and opt_str("uds"))
    if not ok:
        return None
    return Entry(guard_pid=doc["guard_pid"], guard_started=None if started is None else float(started),
                 profile=doc.get("profile"), model=doc["model"], state=doc["state"], since=doc["since"],
                 attempt=doc["attempt"], gpus=tuple(gpus), port=doc.get("port"), uds=doc.get("uds"),
                 keeper_pid=doc.get("keeper_pid"), vllm_pid=doc.get("vllm_pid"))


def _epoch_seconds(value: Any) -> bool:
    """A start time as the guard writes it: a finite number of seconds since the epoch, before the year 3000.
    (A 400-digit integer once made float() raise OverflowError, and every user's `ps` crashed on it.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):
        return 0 <= value < EPOCH_MAX_S
    return math.isfinite(value) and 0 <= value < EPOCH_MAX_S


EPOCH_MAX_S = 32503680000  # 3000-01-01


def _aware_time(value: Any) -> bool:
    """An ISO time with its UTC offset, as the guard writes it (a naive one cannot be compared with now)."""
    if not isinstance(value, str) or len(value) > 64:
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


def remove_stale(directory: Path, guard_pid: int) -> bool:
    """Remove the entry of a guard that is gone, when this user may (its owner, or root); True if removed."""
    path = path_for(directory, guard_pid)
    try:
        if os.geteuid() != 0 and os.lstat(path).st_uid != os.geteuid():
            return False
        os.unlink(path)
    except OSError:
        return False
    return True
