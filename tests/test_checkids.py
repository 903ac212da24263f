"""The check ids have one home below the profile and the checks: no import cycle between them."""

from __future__ import annotations

import ast
from pathlib import Path

from vllm_guard import checkids
from vllm_guard.preflight.run import CHECKS

ROOT = Path(__file__).resolve().parents[1] / "vllm_guard"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_profile_does_not_import_checks() -> None:
    profile = set().union(*(_imports(p) for p in (ROOT / "profile").glob("*.py")))
    assert not {m for m in profile if m.startswith("vllm_guard.preflight")}
    assert "vllm_guard.checkids" in profile and "vllm_guard.checkids" in _imports(ROOT / "preflight" / "run.py")


def test_checkids_import_nothing_of_the_guard() -> None:
    assert not {m for m in _imports(ROOT / "checkids.py") if m.startswith("vllm_guard")}


def test_every_check_has_its_id() -> None:
    assert len(CHECKS) == len(checkids.CHECK_IDS) == len(set(checkids.CHECK_IDS))
    assert set(checkids.GPU_DEPENDENT) <= set(checkids.CHECK_IDS)
