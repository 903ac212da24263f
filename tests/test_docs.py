"""What README.md and docs/ say can be typed: every command and guard flag they show exists, every example
profile parses."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import tomllib

from tests.conftest import ROOT
from vllm_guard.cli.parser import build_parser
from vllm_guard.options.table import load_table
from vllm_guard.profile.load import load_profile

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_LEVEL = {"--help", "-h", "--version", "-V", "--debug"}


def guard_options() -> dict[str, set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {s for a in p._actions for s in a.option_strings} for name, p in sub.choices.items()}


def code_text(path: Path) -> str:
    """The code in a Markdown file: fenced blocks and inline spans, one per line."""
    text = path.read_text()
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return "\n".join([*blocks, *spans])


def invocations() -> list[tuple[str, str, str]]:
    """(file, command, the rest of its line) for every `vllm-guard COMMAND ...` in the docs' code, and every
    row of the README's table of commands."""
    found = []
    for path in DOCS:
        for line in code_text(path).splitlines():
            for m in re.finditer(r"(?<![\w/.-])vllm-guard[ \t]+(-{0,2}[a-zA-Z][\w-]*)(?![\w:./@-])([^|#;`\n]*)", line):
                found.append((path.name, m.group(1), m.group(2)))
    for name in ("README.md", "docs/commands.md"):
        text = (ROOT / name).read_text()
        table = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
        found += [(name, cmd, rest) for cmd, rest in re.findall(r"^\| `([a-z]+)\b([^`]*)`", table, re.M)]
    return found


def test_the_docs_show_commands() -> None:
    assert len(invocations()) > 30


@pytest.mark.parametrize(("where", "command", "rest"), invocations())
def test_every_command_and_flag_in_the_docs_exists(where: str, command: str, rest: str) -> None:
    options = guard_options()
    if command.startswith("-"):
        assert command in TOP_LEVEL, (where, command)
        return
    assert command in options, f"{where}: `vllm-guard {command}` is not a command"
    vllm = load_table()
    for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", rest):
        if flag in options[command] or flag in TOP_LEVEL:
            continue
        # After TARGET, `serve` and `check` take `vllm serve`'s own options.
        assert command in ("serve", "check") and vllm.claims(flag), f"{where}: {command} has no option {flag}"


def example_profiles() -> list[tuple[str, str]]:
    return [(path.name, body) for path in DOCS
            for body in re.findall(r"```toml\n(.*?)```", path.read_text(), re.S)]


def test_the_docs_have_example_profiles() -> None:
    assert len(example_profiles()) >= 2


@pytest.mark.parametrize(("where", "body"), example_profiles())
def test_every_example_profile_parses(where: str, body: str, tmp_path: Path) -> None:
    doc = tomllib.loads(body)
    if "model" in doc or "vllm" in doc:  # a whole profile, not a fragment of one table
        path = tmp_path / "example.toml"
        path.write_text(body if "model" in doc else '[model]\nid = "Qwen/Qwen3-0.6B"\n' + body)
        load_profile(path, environ={"HOME": str(tmp_path)})


def runnable_lines() -> list[tuple[str, str, int]]:
    """(file, command, expected exit status) of each line of the docs' ```sh test blocks: the commands that
    can run here (offline, against snapshots and fixtures). A trailing `# exit N` names another status."""
    found = []
    for path in DOCS:
        for body in re.findall(r"```sh test\n(.*?)```", path.read_text(), re.S):
            for line in body.splitlines():
                command, _, comment = line.partition("#")
                if command.strip():
                    m = re.search(r"\bexit (\d+)\b", comment)
                    found.append((path.name, command.strip(), int(m.group(1)) if m else 0))
    return found


def test_the_docs_have_runnable_commands() -> None:
    assert len(runnable_lines()) >= 8


@pytest.mark.parametrize(("where", "command", "code"), runnable_lines())
def test_every_runnable_command_in_the_docs_runs(where: str, command: str, code: int, tmp_path: Path) -> None:
    """Each shown command, run as a user would type it from a clone (cwd: the repository), offline."""
    import shlex
    import subprocess
    import sys

    argv = shlex.split(command)
    assert argv[0] == "vllm-guard", (where, command)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "VLLMGUARD_STATE_DIR": str(tmp_path / "state"), "VLLMGUARD_LOCK_DIR": str(tmp_path / "locks")}
    r = subprocess.run([sys.executable, "-m", "vllm_guard", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == code, f"{where}: `{command}` exited {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
