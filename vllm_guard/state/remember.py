"""``[guard.ladder] remember``: start from the relaxations that worked last time.

After a relaxed start (the ladder changed max-model-len, max-num-seqs, ...), the values that worked are kept
in the state dir, one JSON file per profile name, under a key: the profile's content hash, the GPUs' UUIDs
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


def path_for(profile_name: str, environ: Mapping[str, str]) -> Path:
    return state_dir(environ) / "remembered" / f"{profile_name}.json"


@dataclass(frozen=True)
class Remembered:
    values: dict[str, Any]
    predicted_fit: int | None  # the preflight's longest fitting max-model-len when they were saved
    saved_at: str | None


def load(path: Path, key: Key) -> Remembered | None:
    """The remembered values for this key; None when there are none, or they were for another key."""
    try:
        with path.open("rb") as f:
            doc = json.loads(f.read(MAX_BYTES))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or doc.get("key") != key.to_dict():
        return None
    values = doc.get("values")
    if not isinstance(values, dict) or not values:
        return None
    predicted = doc.get("predicted_fit")
    return Remembered(values, predicted if isinstance(predicted, int) else None, str(doc.get("saved_at")))


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
