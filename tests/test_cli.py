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
    for name in ("serve", "check", "snapshot", "explain", "init", "attempts", "checks", "completion"):
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
    code = f"import sys, vllm_guard.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    r = subprocess.run([sys.executable, "-m", "vllm_guard", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and __version__ in r.stdout


COMMANDS = ["serve", "check", "snapshot", "explain", "init", "attempts", "checks", "models", "completion", "manifest"]


def test_every_option_has_help() -> None:
    import argparse

    from vllm_guard.cli.completion import commands
    from vllm_guard.cli.parser import build_parser

    parser = build_parser()
    assert set(commands(parser)) >= set(COMMANDS)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for action in p._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.option_strings or action.dest)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_has_examples_and_points_to_the_exit_codes_once(command: str) -> None:
    r = run_cli(command, "--help")
    assert r.code == 0 and "examples:" in r.out and f"vllm-guard {command}" in r.out.split("examples:")[1]
    assert "exit codes: see `vllm-guard --help`" in r.out and "143" not in r.out


def test_every_command_has_examples() -> None:
    from vllm_guard.cli.completion import commands
    from vllm_guard.cli.helptext import EXAMPLES
    from vllm_guard.cli.parser import build_parser

    missing = set(commands(build_parser())) - set(EXAMPLES)
    assert not missing, f"add examples for {sorted(missing)} to vllm_guard/cli/helptext.py"


def test_short_version_flag() -> None:
    for argv in (["-V"], ["check", "-V"]):
        r = run_cli(*argv)
        assert r.code == 0 and __version__ in r.out


def test_a_mistyped_command_gets_did_you_mean() -> None:
    r = run_cli("chek", "model")
    assert r.code == 2 and "did you mean 'check'?" in r.err and "Traceback" not in r.err
    r = run_cli("explian")
    assert "did you mean 'explain'?" in r.err


def test_bash_completion_completes_commands_and_options() -> None:
    script = run_cli("completion", "bash").out
    probe = (script + "COMP_WORDS=(vllm-guard ch); COMP_CWORD=1; _vllm_guard; echo \"${COMPREPLY[*]}\"\n"
             "COMP_WORDS=(vllm-guard init --co); COMP_CWORD=2; _vllm_guard; echo \"${COMPREPLY[*]}\"\n"
             "COMP_WORDS=(vllm-guard serve --dr); COMP_CWORD=2; _vllm_guard; echo \"${COMPREPLY[*]}\"\n")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["check checks", "--context", "--dry-run"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_completion_name_every_command_and_option(shell: str) -> None:
    from vllm_guard.cli.completion import commands
    from vllm_guard.cli.parser import build_parser

    script = run_cli("completion", shell).out
    for name, (_, options) in commands(build_parser()).items():
        assert name in script
        for strings, _ in options:
            for s in strings:
                assert (s if shell == "zsh" else s.lstrip("-")) in script, (name, s)
    import shutil

    if shutil.which(shell):  # a syntax check where the shell is installed
        flag = ["-n"] if shell == "zsh" else ["--no-execute"]
        assert subprocess.run([shell, *flag], input=script, text=True).returncode == 0


def test_a_usage_error_points_to_the_commands_help() -> None:
    r = run_cli("init", "Qwen/Qwen3-0.6B", "--context", "12q")
    assert r.code == 2 and "hint: see `vllm-guard init --help`" in r.err
