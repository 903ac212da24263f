"""The only module that imports `sh`: short, bounded runs of outside tools (nvidia-smi, journalctl)."""

from __future__ import annotations

import shutil


class ShellError(Exception):
    """The tool is missing, failed, or took too long; the message says which."""


def which(program: str) -> str | None:
    return shutil.which(program)


def run(program: str, args: list[str], *, timeout_s: float = 10.0) -> str:
    """Run a tool and return its stdout.

    Raises:
        ShellError: when the tool is not on PATH, exits non-zero, or exceeds ``timeout_s``.
    """
    import sh

    try:
        command = sh.Command(program)
    except sh.CommandNotFound:
        raise ShellError(f"{program} not found on PATH") from None
    try:
        return str(command(*args, _timeout=timeout_s, _err_to_out=False, _tty_out=False))
    except sh.TimeoutException:
        raise ShellError(f"{program} took longer than {timeout_s:g}s") from None
    except sh.ErrorReturnCode as e:
        stderr = e.stderr.decode(errors="replace").strip().splitlines()
        raise ShellError(f"{program} exited {e.exit_code}: {stderr[-1] if stderr else 'no message'}") from None
