"""The house rules of docs/architecture.md that a reader can count: small modules, classes and functions.

The layers and the doorways are import-linter's contracts in pyproject.toml (`lint-imports`, run by .ci/run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vllm_guard"
MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 100
MODULES = sorted(PACKAGE.rglob("*.py"))


def _span(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return (node.end_lineno or first) - first + 1


def test_there_are_modules_to_count() -> None:
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_sizes(path: Path) -> None:
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{path.name}: over {MAX_MODULE_LINES} lines"
    too_big = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and _span(node) > MAX_CLASS_LINES:
            too_big.append(f"class {node.name}: {_span(node)} lines")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _span(node) > MAX_FUNCTION_LINES:
            too_big.append(f"def {node.name}: {_span(node)} lines")
    assert not too_big, too_big


def test_every_folder_is_a_stage_package() -> None:
    """Every folder under vllm_guard/ (but data/) is a package: a stage of the flow, named in the architecture."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    for folder in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name not in ("data", "__pycache__")):
        assert (folder / "__init__.py").is_file(), folder
        assert f"`{folder.name}/`" in doc, f"docs/architecture.md does not say what {folder.name}/ owns"


def test_serve_and_check_go_through_the_seam() -> None:
    """One machine or a Ray cluster is decided once, in sites/: `serve` and `check` name neither."""
    tree = ast.parse((PACKAGE / "cli" / "serve.py").read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in modules if m.startswith("vllm_guard.cluster") or m == "vllm_guard.sites.ray"}
    assert not {n for n in names if "ray" in n.lower() or "cluster" in n.lower() or n in ("cp", "connection")}
