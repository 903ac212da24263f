"""The one reader of a snapshot file (--machine FILE): a machine's (``vllm-guard.machine/N``) or a Ray
cluster's (``vllm-guard.cluster/N``), read once per use with the same limits and the same messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_guard import schemas
from vllm_guard.errors import SnapshotError
from vllm_guard.facts.machine import Machine

if TYPE_CHECKING:
    from vllm_guard.facts.cluster import ClusterFacts


def read_snapshot(path: Path) -> Any:
    """The JSON of a snapshot file.

    Raises:
        SnapshotError: missing, unreadable, not JSON, or a value the guard will not read (exit 3).
    """
    from vllm_guard.safefile import SNAPSHOT_MAX_BYTES, FileProblem, read_limited

    try:
        return json.loads(read_limited(path, SNAPSHOT_MAX_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such machine snapshot",
                            hint="take one with `vllm-guard snapshot -o FILE` on the GPU machine") from None
    except FileProblem as e:  # a FIFO, /dev/zero, a directory, a file of gigabytes
        raise SnapshotError(f"cannot read the machine snapshot: {e}",
                            hint=f"a snapshot is a regular JSON file of at most {SNAPSHOT_MAX_BYTES // 2**20} MiB, "
                            "written by `vllm-guard snapshot -o FILE`") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SnapshotError(f"{path}: cannot read the machine snapshot: {e}") from None
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}",
                            hint="--machine takes a snapshot written by `vllm-guard snapshot -o FILE` on the machine "
                            "to plan for") from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit integer, arrays nested thousands deep
        raise SnapshotError(f"{path}: a value the guard will not read: {str(e)[:200] or type(e).__name__}",
                            hint="take the snapshot again with `vllm-guard snapshot -o FILE`") from None


def _read_quietly(machine_file: str) -> Any:
    """The JSON, or None where it cannot be read: load_machine then says why, with its own message."""
    try:
        return read_snapshot(Path(machine_file))
    except SnapshotError:
        return None


def load_machine(path: Path) -> Machine:
    """Read a machine snapshot.

    Raises:
        SnapshotError: unreadable, not JSON, foreign, malformed or from a newer schema (exit 3).
    """
    return Machine.from_dict(read_snapshot(path), origin=str(path))


def read_cluster_snapshot(machine_file: str | None) -> ClusterFacts | None:
    """The cluster snapshot ``--machine`` names, or None when it names none (or a single machine's snapshot).

    Raises:
        SnapshotError: a cluster snapshot that is malformed (exit 3).
    """
    if not machine_file:
        return None
    data = _read_quietly(machine_file)
    if not (isinstance(data, dict) and data.get("schema") == schemas.CLUSTER):
        return None  # a machine snapshot (or one load_machine will refuse, with its own message)
    from vllm_guard.facts.cluster import ClusterFacts

    return ClusterFacts.from_dict(data, origin=machine_file)


def snapshot_vllm_version(machine_file: str) -> str | None:
    """The vLLM version the snapshot recorded (it picks the option table when planning against it)."""
    data = _read_quietly(machine_file)
    version = data.get("vllm_version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None
