"""Files the guard reads or creates on a shared host: never through a planted link, never a FIFO, never unbounded.

The guard often runs as root next to other users. Every path it creates gets an
explicit mode (the umask may be 000), every directory it writes into is checked
for owner and mode, and every input file is opened without blocking, must be a
regular file, and is read up to a size limit.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, TextIO

# Sizes an input may have: far above any real profile, snapshot or config.json, far below a
# memory problem. A log is read as its last LOG_TAIL_BYTES.
PROFILE_MAX_BYTES = 1 * 2**20
SNAPSHOT_MAX_BYTES = 16 * 2**20
MODEL_JSON_MAX_BYTES = 16 * 2**20
LOG_TAIL_BYTES = 64 * 2**20


class FileProblem(Exception):
    """A file the guard will not use; the message names the path and the reason."""


def read_limited(path: Path, max_bytes: int, *, follow_links: bool = True) -> bytes:
    """The whole content of a regular file of at most ``max_bytes``; a symbolic link is refused when
    ``follow_links`` is false (files other users put in a shared directory).

    Raises:
        FileNotFoundError: when the path does not exist (callers often have a friendlier message).
        FileProblem: a FIFO, a device, a directory, a file over the limit, or any other read error.
    """
    fd = _open_regular(path, follow_links=follow_links)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise FileProblem(f"{path}: {size:,} bytes is more than the {max_bytes:,} this file may have")
        data = _read_fd(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we read it
        raise FileProblem(f"{path}: more than the {max_bytes:,} bytes this file may have")
    return data


def read_tail(path: Path, max_bytes: int) -> tuple[bytes, bool]:
    """The last ``max_bytes`` of a regular file, and whether anything before them was left out.

    Raises:
        FileNotFoundError: when the path does not exist.
        FileProblem: not a regular file, or a read error.
    """
    fd = _open_regular(path)
    try:
        size = os.fstat(fd).st_size
        cut = size > max_bytes
        if cut:
            os.lseek(fd, size - max_bytes, os.SEEK_SET)
        return _read_fd(fd, max_bytes), cut
    finally:
        os.close(fd)


def read_stream_tail(stream: TextIO, max_chars: int, chunk_chars: int = 1 << 20) -> tuple[str, bool]:
    """Read a stream until EOF keeping only its last ``max_chars`` characters (a pipe may never end:
    memory stays bounded, however long it runs)."""
    kept: list[str] = []
    total = 0
    cut = False
    while True:
        chunk = stream.read(chunk_chars)
        if not chunk:
            break
        kept.append(chunk)
        total += len(chunk)
        while total - len(kept[0]) >= max_chars:
            total -= len(kept.pop(0))
            cut = True
    text = "".join(kept)
    if len(text) > max_chars:
        text, cut = text[-max_chars:], True
    return text, cut


def _open_regular(path: Path, *, follow_links: bool = True) -> int:
    try:
        # O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW))
    except FileNotFoundError:
        raise
    except OSError as e:  # ENAMETOOLONG, EACCES, ELOOP
        if e.errno == errno.ELOOP and not follow_links:
            raise FileProblem(f"{path}: a symbolic link, not followed") from None
        raise FileProblem(f"{path}: {e.strerror or e}") from None
    except ValueError:  # a NUL byte in the path
        raise FileProblem(f"{path!r}: not a valid path") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileProblem(f"{path}: {describe_mode(mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd


def open_regular(path: Path) -> BinaryIO:
    """A regular file opened for binary reading, without ever waiting on a FIFO.

    Raises:
        FileNotFoundError: when the path does not exist.
        FileProblem: not a regular file, or it cannot be opened.
    """
    return os.fdopen(_open_regular(path), "rb")


def _read_fd(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < limit:
        try:
            part = os.read(fd, min(limit - got, 1 << 20))
        except OSError as e:
            raise FileProblem(f"read error: {e.strerror or e}") from None
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def describe_mode(mode: int) -> str:
    """'a FIFO', 'a directory', ... for messages."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def make_dirs(path: Path, mode: int = 0o700) -> list[Path]:
    """Create ``path`` and any missing parents, each with exactly ``mode`` whatever the umask; returns
    the directories it created. Existing directories are left as they are."""
    missing: list[Path] = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    created = []
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:
            continue
        os.chmod(d, mode)  # mkdir's mode is reduced by the umask; this one is not
        created.append(d)
    return created


def check_dir(path: Path, *, uid: int | None = None) -> str | None:
    """Why ``path`` is not a safe directory to create files in, or None when it is.

    Safe: a real directory (not a symlink), owned by this user or by root, and writable by nobody
    else unless it is sticky (then nobody can remove or replace another user's files).
    """
    uid = os.geteuid() if uid is None else uid
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is {describe_mode(st.st_mode)}, not a directory"
    if st.st_uid not in (uid, 0):
        return f"{path} belongs to uid {st.st_uid}, neither this user (uid {uid}) nor root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}) and not sticky"
    return None
