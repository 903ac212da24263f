"""Per-GPU launch locks: two guards starting on one GPU go one after the other, whoever runs them.

An exclusive flock per GPU UUID, held from the free-memory re-check until the
attempt is ready or has failed, so the second guard sees the memory the first took.

On a shared host the lock directory is one that every local user shares:
``/run/lock/vllm-guard``, owned by root, mode 1777 (sticky: nobody can remove or
replace another user's lock file). The guard creates it when it runs as root;
``systemd/vllm-guard.tmpfiles`` creates it at boot. Without it, each user's locks
are private and guards of different users are not serialized (the guard says so).

Lock files are opened without following links, without blocking, must be regular
files, and are never written or truncated: who holds a lock is read from the
kernel (``/proc/locks``), not from a file another user could write.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pwd
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.safefile import check_dir, describe_mode, make_dirs

SHARED_LOCK_DIR = Path("/run/lock/vllm-guard")
SHARED_MODE = 0o1777
PRIVATE_MODE = 0o700
_HINT = "see docs/security.md; set VLLMGUARD_LOCK_DIR (or guard.lock-dir) to a directory only you or root can change"


def lock_dir(setting: str | None, environ: Mapping[str, str], *, shared: Path = SHARED_LOCK_DIR) -> Path:
    """VLLMGUARD_LOCK_DIR, guard.lock-dir, the shared dir (when it is safe, or absent and this is root),
    $RUNTIME_DIRECTORY, then a private per-user dir ($XDG_RUNTIME_DIR/vllm-guard, $TMPDIR/vllm-guard-$UID, else
    ~/.cache/vllm-guard/locks), each checked before use.

    A shared dir that another user made first (a link, a 0755 or 1777 directory of theirs) is passed over, never a
    reason for every guard on the host to refuse to start (``sharing_note`` names it); so is a /tmp/vllm-guard-UID
    someone else made.
    """
    for candidate in (environ.get("VLLMGUARD_LOCK_DIR"), setting):
        if candidate:
            return Path(candidate)
    if shared_problem(shared) is None and (os.path.lexists(shared) or (os.geteuid() == 0 and shared.parent.is_dir())):
        return shared
    runtime = environ.get("RUNTIME_DIRECTORY")
    if runtime:
        return Path(runtime.split(":")[0])  # systemd may list several runtime directories
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and check_dir(Path(xdg)) is None:
        return Path(xdg) / "vllm-guard"
    private = Path(tempfile.gettempdir()) / f"vllm-guard-{os.geteuid()}"
    if not os.path.lexists(private) or check_dir(private) is None:
        return private
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".cache" / "vllm-guard" / "locks"


def shared_problem(shared: Path = SHARED_LOCK_DIR) -> str | None:
    """Why the shared lock dir, when it exists, is not used (another user's, a link, writable and not sticky)."""
    if not os.path.lexists(shared):
        return None
    return check_dir(shared)


def sharing_note(setting: str | None, environ: Mapping[str, str], *, shared: Path = SHARED_LOCK_DIR) -> str | None:
    """A note when the launch locks are private to this user: other users' guards are not serialized."""
    if environ.get("VLLMGUARD_LOCK_DIR") or setting:
        return None  # the administrator chose the directory
    chosen = lock_dir(setting, environ, shared=shared)
    if chosen == shared:
        return None
    problem = shared_problem(shared)
    if problem is not None:
        return (f"not using the shared lock directory: {problem}; someone may have made it to stop or watch "
                f"other users' guards. The launch locks are private to this user ({chosen}): a guard of another "
                f"user starting on the same GPU at the same time is not serialized with this one (an administrator "
                f"removes it and creates it with mode 1777, owner root; see docs/security.md)")
    return (f"{shared} does not exist, so the launch locks are private to this user: a guard of another user "
            f"starting on the same GPU at the same time is not serialized with this one (an administrator "
            f"creates it with mode 1777, owner root; see docs/security.md)")


def prepare_dir(directory: Path, *, shared: Path = SHARED_LOCK_DIR) -> None:
    """Create the lock directory if needed, with an explicit mode, and refuse one another user controls.

    Raises:
        GuardError: the directory is a link, belongs to another user, or others may write in it unsticky.
    """
    try:
        make_dirs(directory, SHARED_MODE if directory == shared else PRIVATE_MODE)
    except OSError as e:
        raise GuardError(f"cannot create the lock directory {directory}: {e.strerror or e}", hint=_HINT,
                         exit_code=ExitCode.PREFLIGHT_FAILED) from None
    problem = check_dir(directory)
    if problem is not None:
        raise GuardError(f"unsafe lock directory: {problem}", hint=_HINT, exit_code=ExitCode.PREFLIGHT_FAILED)


class LaunchLocks(Protocol):
    """The locks of one attempt: this machine's (``GpuLocks``) or a Ray cluster's (``cluster.locks.ClusterLocks``)."""

    def acquire(self, *, on_wait: Callable[[str, str], None], poll_s: float = 0.5,
                should_stop: Callable[[], bool] = ...) -> bool: ...

    def release(self) -> None: ...


class GpuLocks:
    """Exclusive locks on a set of GPUs, always taken in sorted order (no deadlock between two guards)."""

    def __init__(self, directory: Path, uuids: list[str], holder: Mapping[str, object] | None = None) -> None:
        self.directory = directory
        self.uuids = sorted(set(uuids))
        self.holder = dict(holder or {})
        self._fds: list[int] = []

    def acquire(self, *, on_wait: Callable[[str, str], None], poll_s: float = 0.5,
                should_stop: Callable[[], bool] = lambda: False) -> bool:
        """Take every lock, waiting as long as needed; False if asked to stop while waiting.

        Raises:
            GuardError: the lock directory or a lock file is unsafe (a link, a FIFO, another user's directory).
        """
        prepare_dir(self.directory)
        for uuid in self.uuids:
            told = False
            while (fd := self._try(uuid)) is None:
                if not told:
                    on_wait(uuid, self._holder(uuid))
                    told = True
                if should_stop():
                    self.release()
                    return False
                time.sleep(poll_s)
            self._fds.append(fd)
        return True

    def _try(self, uuid: str) -> int | None:
        """The locked descriptor of this GPU's lock file, or None while another process holds it."""
        path = self.directory / f"gpu-{_safe_name(uuid)}.lock"
        while True:
            fd = _open_lock(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            if _still_at(path, fd):
                _note(fd, json.dumps({**self.holder, "pid": os.getpid(), "since": time.time()}))
                return fd
            os.close(fd)  # the file was replaced while we locked it: lock the one that is there now

    def _holder(self, uuid: str) -> str:
        fd = _open_lock(self.directory / f"gpu-{_safe_name(uuid)}.lock")
        try:
            return holder_of(fd)
        finally:
            os.close(fd)

    @classmethod
    def idlest(cls, directory: Path, ranked: Callable[[], Sequence[str]], count: int,
               holder: Mapping[str, object] | None = None, *, on_wait: Callable[[str], None],
               poll_s: float = 0.5, should_stop: Callable[[], bool] = lambda: False) -> GpuLocks | None:
        """guard.gpus = "auto": the locks of the first ``count`` GPUs, in the order ``ranked()`` gives (idlest
        first), whose lock no other guard holds; None if asked to stop while all were taken.

        Each GPU is only tried (never waited on), so two guards choosing at once take different GPUs when
        there are enough: the second finds the first's lock held and moves on. With too few free, every lock
        taken is let go again before waiting (no deadlock), and the ranking is asked anew (another guard's
        vLLM may now hold memory).

        Raises:
            GuardError: the lock directory or a lock file is unsafe.
        """
        prepare_dir(directory)
        told = False
        while True:
            locks = cls(directory, [], holder)
            taken: list[str] = []
            candidates = list(ranked())
            # Fewer GPUs than the layout needs (a start forced past gpu.count): take them all, and vLLM says
            # what is missing, as it would without the guard. Waiting would never end.
            wanted = min(count, len(candidates))
            for uuid in candidates:
                if len(taken) == wanted:
                    break
                fd = locks._try(uuid)
                if fd is not None:
                    locks._fds.append(fd)
                    taken.append(uuid)
            if len(taken) == wanted:
                locks.uuids = sorted(taken)
                return locks
            locks.release()
            if not told:
                on_wait(f"{wanted - len(taken)} more GPU(s) needed of {len(candidates)} that qualify; the launch "
                        "locks of the others are held by guards starting now")
                told = True
            if should_stop():
                return None
            time.sleep(poll_s)

    def release(self) -> None:
        for fd in self._fds:
            _note(fd, "")
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []


NOTE_BYTES = 1024


def _note(fd: int, text: str) -> None:
    """Name the holder in the lock file, for a person who runs `cat`: only in a file this user owns,
    overwritten in place (fixed width, never truncated). The guard itself never reads it back."""
    data = text.encode("utf-8", errors="replace")[:NOTE_BYTES].ljust(NOTE_BYTES)
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_uid == os.geteuid():  # a read-only descriptor fails here, quietly
            os.pwrite(fd, data, 0)


def _safe_name(uuid: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in uuid)[:128]


def _open_lock(path: Path) -> int:
    """Open (or create, mode 0644) a lock file: no link followed, no FIFO waited on, only a regular file.

    Read-write when this user may write it (to name the holder), else read-only: flock needs no more,
    so every user can lock a file another user created.
    """
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(100):
        try:
            try:
                fd = os.open(path, flags)
            except PermissionError:
                fd = os.open(path, flags & ~os.O_RDWR | os.O_RDONLY)
        except FileNotFoundError:
            try:
                # O_EXCL: never open, through a race, a file someone else just put there.
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
                os.fchmod(fd, 0o644)  # whatever the umask: other users must be able to open it
            except FileExistsError:
                continue
            except OSError as e:
                raise _unsafe(path, e.strerror or str(e)) from None
        except OSError as e:
            reason = "it is a symbolic link" if e.errno == errno.ELOOP else (e.strerror or str(e))
            raise _unsafe(path, reason) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            what = describe_mode(st.st_mode) if not stat.S_ISREG(st.st_mode) else f"a file with {st.st_nlink} links"
            raise _unsafe(path, f"it is {what}, not a plain lock file")
        return fd
    raise _unsafe(path, "it keeps appearing and disappearing")


def _unsafe(path: Path, reason: str) -> GuardError:
    return GuardError(f"refusing the lock file {path}: {reason}",
                      hint=f"remove it (someone may have put it there to interfere); {_HINT}",
                      exit_code=ExitCode.PREFLIGHT_FAILED)


def _still_at(path: Path, fd: int) -> bool:
    try:
        here, held = os.lstat(path), os.fstat(fd)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def holder_of(fd: int, proc: Path = Path("/proc")) -> str:
    """Who holds the flock on this open file, from the kernel's lock table: 'pid N (user, command)'."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        table = (proc / "locks").read_text()
    except OSError:
        return "another process"
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK" or fields[5] != dev:
            continue
        pid = fields[4]
        return f"pid {pid} ({_describe_pid(proc / pid)})"
    return "another process"


def _describe_pid(path: Path) -> str:
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "gone"
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = f"uid {uid}"
    try:
        comm = (path / "comm").read_text(errors="replace").strip()
    except OSError:
        comm = "?"
    # comm is chosen by that process: printable characters only, and short.
    comm = "".join(c for c in comm if c.isprintable())[:32] or "?"
    return f"user {user}, {comm}"
