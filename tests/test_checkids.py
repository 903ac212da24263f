"""The check ids have one home below the profile and the checks: no import cycle between them."""

from __future__ import annotations

import ast
from pathlib import Path

from vllm_guard import checkids
from vllm_guard.preflight import checks

ROOT = Path(__file__).resolve().parents[1] / "vllm_guard"


def _imports(module: str) -> set[str]:
    tree = ast.parse((ROOT / f"{module}.py").read_text())
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_profile_does_not_import_checks() -> None:
    assert "vllm_guard.preflight.checks" not in _imports("profile/load")
    assert "vllm_guard.checkids" in _imports("profile/load") and "vllm_guard.checkids" in _imports("preflight/checks")


def test_checkids_import_nothing_of_the_guard() -> None:
    assert not {m for m in _imports("checkids") if m.startswith("vllm_guard")}


def test_every_check_has_its_id() -> None:
    assert len(checks.CHECKS) == len(checkids.CHECK_IDS) == len(set(checkids.CHECK_IDS))
    assert set(checkids.GPU_DEPENDENT) <= set(checkids.CHECK_IDS)
