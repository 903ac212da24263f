"""The one table of exit codes. The README and the systemd unit quote it.

systemd units use ``RestartPreventExitStatus=2 3 4 5``: a bad command line, a
bad profile, a failed preflight or an exhausted ladder will not get better by
restarting, while an internal error or a crash after ready might.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # unexpected internal error: a bug in vllm-guard
    USAGE = 2  # bad command line
    PROFILE_INVALID = 3  # unreadable or invalid profile or machine snapshot
    PREFLIGHT_FAILED = 4  # a preflight check failed, or the vLLM executable is missing
    START_FAILED = 5  # the ladder is exhausted, or no relaxation can fix the failure
    CHILD_EXITED = 6  # vLLM exited on its own after it was ready
    EXPLAIN_UNKNOWN = 7  # explain: the log shows no failure the guard can name (not a bug in the guard)
    INTERRUPTED = 130  # SIGINT
    TERMINATED = 143  # SIGTERM


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.ERROR: "internal error (a bug: please report it with --debug output)",
    ExitCode.USAGE: "usage error (bad command line or arguments)",
    ExitCode.PROFILE_INVALID: "profile or machine snapshot invalid",
    ExitCode.PREFLIGHT_FAILED: "preflight check failed (or the vLLM executable is missing)",
    ExitCode.START_FAILED: "start failed: ladder exhausted, or a failure no relaxation fixes",
    ExitCode.CHILD_EXITED: "vLLM exited after it was ready (its last error lines are shown; `vllm-guard explain` "
    "diagnoses the log)",
    ExitCode.EXPLAIN_UNKNOWN: "explain: the log shows no failure the guard can name (class unknown)",
    ExitCode.INTERRUPTED: "interrupted by SIGINT",
    ExitCode.TERMINATED: "terminated by SIGTERM",
}
