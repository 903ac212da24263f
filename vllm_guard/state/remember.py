"""``[guard.ladder] remember``: start from the relaxations that worked last time.

After a relaxed start (the ladder changed max-model-len, max-num-seqs, ...), the values that worked are kept
in the state dir, one JSON file per profile (its name and a hash of its full path: attempts.profile_stem),
under a key: the profile's content hash, the GPUs' UUIDs
and the vLLM version. The next start of the same profile on the same GPUs with the same vLLM (a systemd
restart, a reboot) begins from them, instead of failing the same way for minutes first. Anything else
(an edited profile, other GPUs, another vLLM) does not match the key, and the values are not used.

Only what a failure of the model's fit called for is kept: a utilization lowered because another process
held the GPU (gpu_busy) says nothing about the next start, and is never remembered.

On by default: the values are the ones the ladder reached on this very machine with this very profile, and
the output, the systemd status and the attempt log say loudly when they are used.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_guard.safefile import FileProblem, read_limited
from vllm_guard.schemas import REMEMBERED as SCHEMA
from vllm_guard.state.attempts import state_dir

MAX_BYTES = 65536


@dataclass(frozen=True)
class Key:
    profile_sha256: str | None
    gpu_uuids: tuple[str, ...]
    vllm_version: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"profile_sha256": self.profile_sha256, "gpu_uuids": list(self.gpu_uuids),
                "vllm_version": self.vllm_version}


def make_key(profile_sha256: str | None, gpu_uuids: Sequence[str], vllm_version: str | None) -> Key:
    return Key(profile_sha256, tuple(sorted(gpu_uuids)), vllm_version)


def path_for(stem: str, environ: Mapping[str, str]) -> Path:
    """Where the values of one profile (``attempts.profile_stem``) are kept."""
    return state_dir(environ) / "remembered" / f"{stem}.json"


def legacy_path(profile_name: str, environ: Mapping[str, str]) -> Path:
    """Where guards that keyed by the profile's name alone kept them. Still read, but only under the full key
    (the profile's content hash, the GPUs, the vLLM): values learnt for that very content on those GPUs hold for
    it wherever the file lies; anything else in it (another profile of the same name) does not match."""
    return state_dir(environ) / "remembered" / f"{profile_name}.json"


def paths_named(profile_name: str, environ: Mapping[str, str]) -> list[Path]:
    """The remembered files of every profile called ``profile_name`` (for `attempts --forget NAME`)."""
    base = state_dir(environ) / "remembered"
    prefix = f"{profile_name}-"
    try:
        return sorted(base / n for n in os.listdir(base)
                      if n.startswith(prefix) and n.endswith(".json") and len(n) == len(prefix) + 12 + 5)
    except OSError:
        return []


@dataclass(frozen=True)
class Remembered:
    values: dict[str, Any]
    predicted_fit: int | None  # the preflight's longest fitting max-model-len when they were saved
    saved_at: str | None


def load(path: Path, key: Key, notes: list[str] | None = None) -> Remembered | None:
    """The remembered values for this key; None when there are none, or they were for another key.

    The file is input like any other: opened without following a link, never waiting on a FIFO, a regular file
    of at most MAX_BYTES; bad JSON or nesting thousands deep is ignored. Why a file there was not used goes to
    ``notes``. The values themselves are checked by the caller (launch/relax.py) against the option table and the
    ladder's limits.
    """
    try:
        doc = json.loads(read_limited(path, MAX_BYTES, follow_links=False))
    except FileNotFoundError:
        return None
    except (OSError, FileProblem, ValueError, RecursionError) as e:
        if notes is not None:
            notes.append(f"ignored the remembered relaxations in {path}: {printable(str(e))}")
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("key") != key.to_dict():
        return None
    values = doc.get("values")
    if not isinstance(values, dict) or not values or not all(isinstance(k, str) for k in values):
        return None
    predicted = doc.get("predicted_fit")
    if isinstance(predicted, bool) or not isinstance(predicted, int) or not 0 < predicted < 2**31:
        predicted = None
    return Remembered(values, predicted, printable(str(doc.get("saved_at")))[:64])


def printable(text: str, limit: int = 300) -> str:
    """Untrusted text for a message: control characters (terminal escapes) shown as '?', cut to ``limit``."""
    out = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return out + ("..." if len(text) > limit else "")


def save(path: Path, key: Key, values: Mapping[str, Any], saved_at: str, predicted_fit: int | None) -> str | None:
    """Write atomically (a crash leaves the old file or the new one); returns an error text, never raises."""
    doc = {"schema": SCHEMA, "key": key.to_dict(), "values": dict(values), "saved_at": saved_at,
           "predicted_fit": predicted_fit}
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".remembered-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as e:
        return f"cannot remember the relaxed values in {path}: {e.strerror or e}"
    return None


def forget(path: Path) -> bool:
    """Drop what is remembered for a profile; True when there was something."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
