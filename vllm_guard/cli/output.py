"""What the commands that write a file share: an existing file needs --force; -o FILE and --json."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from vllm_guard.errors import UsageError
from vllm_guard.exit_codes import ExitCode


def refuse_existing(output: str | None, force: bool) -> None:
    """One rule for every command that writes a file (init, snapshot): an existing file needs --force."""
    if output and Path(output).exists() and not force:
        raise UsageError(f"{output} exists", hint="use --force to overwrite it")


def write_file(output: str, text: str) -> None:
    """-o FILE: the file, or a usage error that says why it cannot be written."""
    try:
        Path(output).write_text(text)
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror}") from None


def write_output(args: argparse.Namespace, doc: dict[str, Any], stdout: TextIO, show: Callable[[], None],
                 what: str) -> int:
    """-o FILE and --json for a machine or a cluster snapshot; otherwise ``show`` prints it for a person."""
    import json

    text = json.dumps(doc, indent=2) + "\n"
    if args.output:
        write_file(args.output, text)
    if args.json:
        stdout.write(text)
    else:
        show()
        if args.output:
            stdout.write(f"{what} written to {args.output}; plan against it with --machine {args.output}\n")
    return ExitCode.OK
