"""The launch's leftover files: only its own are removed (new since the launch, this user's, held by no one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from vllm_guard.launch import leftovers


def test_only_the_launchs_own_unheld_files_are_removed(tmp_path: Path) -> None:
    shm, tmp = tmp_path / "shm", tmp_path / "tmp"
    shm.mkdir()
    tmp.mkdir()
    old = shm / "psm_before"  # there before the launch: someone else's
    old.write_bytes(b"x")
    before = leftovers.Before.take({"TMPDIR": str(tmp)}, time.time(), shm_dir=str(shm))
    ours = [shm / "psm_0a1b2c", shm / "sem.mp-x1y2", tmp / "vllm_dist_5095cab3cf88"]
    for path in ours:
        path.write_bytes(b"x")
    unrelated = shm / "other_segment"
    unrelated.write_bytes(b"x")
    held = shm / "psm_held"  # a second vLLM beside ours maps or opens its segments: never taken from it
    held.write_bytes(b"x")
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(held)!r}); import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while str(held) not in leftovers_open_by(holder.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = {str(p) for p in ours} | {str(held)}  # what the launch was seen holding while it ran
        removed = leftovers.remove_own(before, leftovers.Held(paths=seen))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(removed) == sorted(str(p) for p in ours)
    assert old.exists() and unrelated.exists() and held.exists()
    assert not any(p.exists() for p in ours)


def test_a_new_file_the_launch_never_held_is_not_taken(tmp_path: Path) -> None:
    """The race the real tier caught: the next launch's fresh segment, created but not yet mapped."""
    shm = tmp_path / "shm"
    shm.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time(), shm_dir=str(shm))
    mine, theirs = shm / "psm_mine", shm / "psm_next_launch"
    mine.write_bytes(b"x")
    theirs.write_bytes(b"x")
    assert leftovers.remove_own(before, leftovers.Held(paths={str(mine)})) == [str(mine)]
    assert theirs.exists()


def held_by_a_process(before: leftovers.Before, code: str) -> leftovers.Held:
    """What a real process running CODE (which prints 'ok' once it holds its files) is seen holding."""
    proc = subprocess.Popen([sys.executable, "-c", code + "; print('ok', flush=True); import time; time.sleep(60)"],
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ok\n"
        held = leftovers.Held()
        held.look(before, [proc.pid], time.time())
        return held
    finally:
        proc.kill()
        proc.wait()


def test_what_a_process_holds_is_seen(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time(), shm_dir=str(shm))
    segment, other = shm / "psm_mapped", shm / "psm_not_held"
    segment.write_bytes(b"\0" * 4096)
    other.write_bytes(b"x")
    held = held_by_a_process(before, f"import mmap; f = open({str(segment)!r}, 'r+b'); m = mmap.mmap(f.fileno(), "
                                      "4096); f.close()")
    assert {p for p in before.new_files() if held.owns(p)} == {str(segment)}  # mapped, its fd closed


def test_a_semaphore_its_creator_maps_under_a_temporary_name_is_seen(tmp_path: Path) -> None:
    """What the real tier left: glibc's sem_open maps /dev/shm/sem.XXXXXX, links it to sem.mp-..., unlinks the
    first name, so the creator's maps never shows the name left behind. Python's spawn-context Lock keeps the
    name (its resource tracker unlinks it at exit), as vLLM's own processes do."""
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time())
    code = "import multiprocessing as mp, time; lock = mp.get_context('spawn').Lock(); " \
           "print(lock._semlock.name, flush=True); time.sleep(60)"
    # Its own session, so that SIGKILL reaches its resource tracker too, as the keeper's does: else the tracker
    # would unlink the semaphore when its parent dies.
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        name = "/dev/shm/sem." + proc.stdout.readline().strip().lstrip("/")
        assert os.path.basename(name).startswith("sem.mp-") and os.path.exists(name)
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
        assert name not in maps  # the creator maps it under another name...
        held = leftovers.Held()
        held.look(before, [proc.pid], time.time())
        assert {p for p in before.new_files() if held.owns(p)} == {name}  # ...and it is still seen as held
        assert leftovers.remove_own(before, held) == []  # held by a live process: never removed
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert leftovers.remove_own(before, held) == [name]  # its holder killed: the launch's leftover


def leftovers_open_by(pid: int) -> set[str]:
    out = set()
    for fd in os.scandir(f"/proc/{pid}/fd"):
        try:
            out.add(os.readlink(fd.path))
        except OSError:
            continue
    return out


def test_a_symlink_planted_under_a_leftover_name_is_not_followed(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time(), shm_dir=str(shm))
    target = tmp_path / "precious"
    target.write_text("keep me")
    (shm / "psm_trap").symlink_to(target)
    assert leftovers.remove_own(before, leftovers.Held(paths={str(shm / "psm_trap")})) == []
    assert target.read_text() == "keep me"


def test_a_file_whose_inode_changed_long_after_it_was_last_seen_is_another(tmp_path: Path) -> None:
    """ext4 gives a freed inode number again: a new file under one of vLLM's names that got the number of a file the
    launch held a minute ago is not the launch's."""
    shm = tmp_path / "shm"
    shm.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp_path)}, time.time() - 120, shm_dir=str(shm))
    segment = shm / "psm_reused"
    segment.write_bytes(b"x")
    st = os.lstat(segment)
    held = leftovers.Held(seen={(st.st_dev, st.st_ino): time.time() - 60})
    assert not held.owns(str(segment))
    assert leftovers.remove_own(before, held) == [] and segment.exists()
    held.seen[(st.st_dev, st.st_ino)] = time.time()  # seen held just now: the launch's
    assert leftovers.remove_own(before, held) == [str(segment)]


def test_a_tmpdir_written_with_a_trailing_slash_or_through_a_link_is_looked_after(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for tmpdir in (f"{real}/", str(tmp_path / "link")):
        before = leftovers.Before.take({"TMPDIR": tmpdir}, time.time(), shm_dir=str(tmp_path / "none"))
        store = Path(tmpdir) / f"vllm_dist_{len(tmpdir)}"
        store.write_bytes(b"x")
        held = held_by_a_process(before, f"f = open({str(store)!r})")  # /proc shows the resolved path
        assert leftovers.remove_own(before, held) == [os.path.join(os.path.abspath(tmpdir), store.name)]


def test_tmpdir_files_are_the_launchs_by_name_not_by_inode(tmp_path: Path) -> None:
    """(newcomer review) ext4 gives a freed inode number to the next new file at once: a scratch file the launch held
    must not make another launch's new rendezvous file its own, and its own rendezvous file stays its own however late
    the store writes to it."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    before = leftovers.Before.take({"TMPDIR": str(tmp)}, time.time(), shm_dir=str(tmp_path / "none"))
    scratch, store = tmp / "scratch.bin", tmp / "vllm_dist_0a1b2c3d"
    scratch.write_bytes(b"x")
    store.write_bytes(b"x")
    held = held_by_a_process(before, f"a = open({str(scratch)!r}); b = open({str(store)!r})")
    assert held.paths == {str(store)} and not held.seen  # the scratch file is nobody's business
    with store.open("ab") as f:  # the store written to after the last look
        f.write(b"y")
    another = tmp / "vllm_dist_ffeeddcc"  # another launch's, whatever inode it got
    another.write_bytes(b"x")
    assert held.owns(str(store)) and not held.owns(str(another))
    assert leftovers.remove_own(before, held) == [str(store)]


def test_a_process_name_cut_mid_character_is_read(tmp_path: Path) -> None:
    """(newcomer review) the kernel cuts a command name at 15 bytes, in the middle of a UTF-8 character: the keeper
    reads the fields after it all the same, never a UnicodeDecodeError."""
    from vllm_guard.probes.procfs import START_TIME_FIELD, STATE_FIELD, stat_field

    (tmp_path / "42").mkdir()
    name = "启动vllm服务.sh".encode()[:15]
    (tmp_path / "42" / "stat").write_bytes(b"42 (" + name + b") S 1 42 42 0 -1 4194560" + b" 0" * 12 + b" 987654 0\n")
    assert stat_field(42, STATE_FIELD, str(tmp_path)) == "S"
    assert stat_field(42, START_TIME_FIELD, str(tmp_path)) == "987654"


def test_a_process_with_any_thread_in_uninterruptible_sleep_has_its_maps_left_unread(tmp_path: Path) -> None:
    """Reading /proc/PID/maps takes the memory-map lock that a thread stuck in a driver call may hold: the keeper
    skips the maps of a process when any of its threads is in state D, not only its main thread, whose state
    /proc/PID/stat alone gives (a worker's NCCL or CUDA thread hangs while the main thread sleeps)."""
    from vllm_guard.probes.procfs import holdings_of, paths_in_use

    held = tmp_path / "shm" / "psm_0a1b"
    held.parent.mkdir()
    held.write_bytes(b"x")
    st = held.stat()
    proc = tmp_path / "proc"
    line = (f"7f00-7f10 rw-s 00000000 {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x} {st.st_ino}"
            f"                  {held}\n")

    def process(pid: int, states: list[str]) -> None:
        (proc / str(pid) / "task").mkdir(parents=True)
        (proc / str(pid) / "maps").write_text(line)
        (proc / str(pid) / "stat").write_text(f"{pid} (python3) {states[0]} 1 {pid} {pid} 0\n")
        for n, state in enumerate(states):
            (proc / str(pid) / "task" / str(pid + n)).mkdir()
            (proc / str(pid) / "task" / str(pid + n) / "stat").write_text(f"{pid + n} (python3) {state} 1\n")

    process(100, ["S", "S"])
    process(200, ["S", "D"])  # the main thread sleeps; another waits in the kernel
    directories = (str(held.parent) + "/",)
    assert holdings_of([100], directories, str(proc)) == {(str(held), (st.st_dev, st.st_ino))}
    assert holdings_of([200], directories, str(proc)) == set()
    # (newcomer reviews) the scan of every process for a leftover's users does not read such maps either, and, as
    # such a process may map any of the files, it takes them all for in use: the keeper removes none of them
    (proc / "100" / "maps").write_text("")  # process 100 no longer maps it; 200's maps cannot be read
    assert paths_in_use({str(held)}, str(proc), pause_s=0) == {str(held)}
    (proc / "200" / "task" / "201" / "stat").write_text("201 (python3) S 1\n")  # its thread woke
    assert paths_in_use({str(held)}, str(proc), pause_s=0) == {str(held)}  # and its maps show the file
    (proc / "200" / "maps").write_text("")
    assert paths_in_use({str(held)}, str(proc), pause_s=0) == set()
