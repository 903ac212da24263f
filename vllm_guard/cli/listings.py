"""The commands that list what the guard knows: check ids, bundled models, shell completion.

Each returns an exit code, like every command under cli/.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from vllm_guard.exit_codes import ExitCode


def models(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    """The bundled model facts: what `check` and `init` know about with no Hub and no local copy."""
    from vllm_guard.probes import bundled

    rows = bundled.summary()
    if args.json:
        import json

        from vllm_guard import schemas

        stdout.write(json.dumps({"schema": schemas.MODELS, "models": [
            {"id": i, "about": about} for i, about in rows]}, indent=2) + "\n")
        return ExitCode.OK
    width = max(len(i) for i, _ in rows)
    stdout.write("".join(f"{i:<{width}}  {about}\n" for i, about in rows))
    stdout.write("\nids match in any case; a quantized variant (-AWQ, -FP8, ...) of a bundled model is known too; "
                 "any other model: a directory holding its config.json\n")
    return ExitCode.OK


def completion(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    from vllm_guard.cli.completion import SHELLS
    from vllm_guard.cli.parser import build_parser

    stdout.write(SHELLS[args.shell](build_parser()))
    return ExitCode.OK


def list_checks(args: argparse.Namespace, *, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int:
    """Every check id, in the order the report shows them, with one line on what it checks."""
    from vllm_guard.checkids import ALL_CHECK_IDS, DESCRIPTIONS

    if getattr(args, "json", False):
        import json

        from vllm_guard import schemas

        stdout.write(json.dumps({"schema": schemas.CHECKS, "checks": [
            {"id": i, "checks": DESCRIPTIONS[i]} for i in ALL_CHECK_IDS]}, indent=2) + "\n")
        return ExitCode.OK
    width = max(len(i) for i in ALL_CHECK_IDS)
    for check_id in ALL_CHECK_IDS:
        stdout.write(f"{check_id:<{width}}  {DESCRIPTIONS[check_id]}\n")
    stdout.write("\nskip one with [guard.checks] skip = [\"ID\"], or make its failure a warning with warn-only\n")
    return ExitCode.OK
