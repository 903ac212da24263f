"""Errors carry a message, a hint and an exit code; only the CLI prints them."""

from __future__ import annotations

from vllm_guard.exit_codes import ExitCode


class GuardError(Exception):
    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, hint: str | None = None, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(GuardError):
    exit_code = ExitCode.USAGE


class ProfileError(GuardError):
    exit_code = ExitCode.PROFILE_INVALID


class SnapshotError(GuardError):
    """A machine snapshot that is malformed, foreign or from a newer schema."""

    exit_code = ExitCode.PROFILE_INVALID
