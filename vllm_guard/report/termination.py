"""A failed exit's summary where Kubernetes reads it: the container's termination message.

The kubelet shows the file ``terminationMessagePath`` (``/dev/termination-log`` by default) in
`kubectl describe pod`, at most 4096 bytes: what failed (the failed check ids, the ladder's last class), the
fix, and what the exit code means, so a CrashLoopBackOff says why without reading logs. Without that file,
``guard.termination-log`` (a file of the user's choice) gets it; with neither, nothing is written.

The file is opened without following a symbolic link (another user could plant one), never truncated when it has
other names (hard links) or, for ``guard.termination-log``, when another user owns it, and never created at the
kubelet's path; a file that cannot be written is a note on stderr, never a crash.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from vllm_guard.diagnose.details import advice_for
from vllm_guard.exit_codes import EXIT_CODE_MEANINGS, ExitCode
from vllm_guard.launch.journal import Attempt
from vllm_guard.preflight.findings import Finding
from vllm_guard.redact import printable

KUBELET_PATH = Path("/dev/termination-log")
LIMIT_BYTES = 4096  # the kubelet keeps no more


def summary(code: int, what: str, fixes: Iterable[str] = ()) -> str:
    """'exit 4 (preflight check failed): ...' then each fix, cut to LIMIT_BYTES."""
    try:
        meaning = EXIT_CODE_MEANINGS[ExitCode(code)]
    except ValueError:
        meaning = "unknown exit code"
    lines = [f"vllm-guard: exit {code} ({meaning}): {printable(what, 1000)}"]
    lines += [f"fix: {printable(fix, 1000)}" for fix in fixes if fix]
    return cut("\n".join(lines) + "\n")


def cut(text: str, limit: int = LIMIT_BYTES) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - 4].decode(errors="ignore") + "...\n"


def write(text: str, configured: str | None, *, kubelet_path: Path = KUBELET_PATH) -> str | None:
    """Write the summary to the kubelet's file, else to ``configured``; a note (why not) or None."""
    notes = []
    candidates = [(kubelet_path, False)] if kubelet_path.exists() else []
    candidates += [(Path(configured), True)] if configured else []
    for path, create in candidates:
        # The kubelet's file is root's, writable by the container's user; a file of our own choosing must be ours.
        problem = _write_one(path, cut(text).encode(), create=create, own=create)
        if problem is None:
            return None
        notes.append(f"the termination message was not written to {path}: {problem}")
    return "; ".join(notes) or None


def _write_one(path: Path, data: bytes, *, create: bool, own: bool) -> str | None:
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        return "a symbolic link" if e.errno == errno.ELOOP else str(e.strerror or e)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_nlink > 1:  # a hard link another user made to a file of ours (or root's) is never truncated
            return "a file with other names (hard links)"
        if own and st.st_uid != os.geteuid():
            return "another user's file"
        os.ftruncate(fd, 0)
        os.write(fd, data)
    except OSError as e:
        return str(e.strerror or e)
    finally:
        os.close(fd)
    return None


def for_preflight(findings: Iterable[Finding]) -> str:
    """A failed preflight: each failed check's id, what it found, and its fix."""
    failed = [f for f in findings if f.status == "fail"]
    what = "preflight failed: " + ", ".join(f.id for f in failed) if failed else "preflight failed"
    return summary(int(ExitCode.PREFLIGHT_FAILED), what,
                   [f"{f.id}: {f.fix or f.message}" for f in failed])


def for_launch(code: int, history: Sequence[Attempt]) -> str | None:
    """A start that failed (exit 5), or vLLM that exited after ready (exit 6): the last class and what helps;
    None for an exit that is no failure (0, a stop signal)."""
    if code not in (ExitCode.START_FAILED, ExitCode.CHILD_EXITED):
        return None
    last = history[-1] if history else None
    if code == ExitCode.CHILD_EXITED:
        return summary(code, "vLLM exited after it was ready (a restart may help)",
                       ["`vllm-guard explain` on the container's log names the cause"])
    d = last.diagnosis if last is not None else None
    if d is None:
        return summary(code, f"start failed after {len(history)} attempt(s)")
    step = last.step if last is not None else None
    reason = getattr(step, "reason", None)
    what = f"start failed after {len(history)} attempt(s): {d.cls} ({d.stage})" + (f"; {reason}" if reason else "")
    return summary(code, what, list(advice_for(d).helps[:3]))
