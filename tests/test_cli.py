"""The command line itself: exit codes, help, version, commands not built yet."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli
from vllm_guard import __version__
from vllm_guard.exit_codes import ExitCode


def test_help_lists_commands_and_exit_codes() -> None:
    r = run_cli("--help")
    assert r.code == 0
    for name in ("serve", "check", "snapshot", "explain", "init", "attempts"):
        assert name in r.out
    assert "exit codes" in r.out and "143" in r.out


@pytest.mark.parametrize("command", ["serve", "check", "snapshot", "explain", "init", "attempts"])
def test_each_command_has_help_and_version(command: str) -> None:
    assert run_cli(command, "--help").code == 0
    r = run_cli(command, "--version")
    assert r.code == 0 and __version__ in r.out


def test_no_command_is_usage() -> None:
    assert run_cli().code == ExitCode.USAGE


def test_usage_errors_exit_2_without_traceback() -> None:
    cases = (["serve", "--dry-run"], ["serve", "--bogus", "m"], ["frobnicate"], ["serve", "--dry-run", "m", "stray"])
    for argv in cases:
        r = run_cli(*argv)
        assert r.code == 2, argv
        assert "Traceback" not in r.err and "error:" in r.err


def test_debug_shows_traceback() -> None:
    r = run_cli("--debug", "serve", "--dry-run", "m", "--max-model-len")
    assert r.code == 2 and "Traceback" in r.err


def test_exit_codes_are_the_documented_table() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 6, 7, 130, 143]
    readme = (ROOT / "README.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in readme


def test_python_m_works_and_import_has_no_side_effects() -> None:
    heavy = "('pynvml', 'psutil', 'huggingface_hub', 'rich', 'sh')"
    code = f"import sys, vllm_guard.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and __version__ in r.stdout
