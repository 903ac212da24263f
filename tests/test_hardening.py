"""A shared host: launch locks and the attempt log against planted links, FIFOs, squatters and a second user.

The second user is `nobody` (uid 65534) through `setpriv`, which needs root: those
tests are skipped with the reason elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from vllm_guard.errors import GuardError
from vllm_guard.launch import lock
from vllm_guard.state import attempts

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                             reason="a second local user needs root and setpriv")


def as_nobody(code: str, *args: str) -> subprocess.Popen[str]:
    """Python code run by another local user, with this checkout importable."""
    return subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                             sys.executable, "-c", code, *args],
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd="/",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A root-owned sticky world-writable directory that `nobody` can reach (tmp_path is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="vg-shared-"))
    base.chmod(0o755)
    d = base / "locks"
    d.mkdir()
    d.chmod(0o1777)
    yield d
    shutil.rmtree(base, ignore_errors=True)


def take(directory: Path, uuid: str = "GPU-1", **kw: object) -> lock.GpuLocks:
    locks = lock.GpuLocks(directory, [uuid], {"profile": "p.toml"})
    assert locks.acquire(on_wait=lambda u, who: None, **kw)  # type: ignore[arg-type]
    return locks


# --- lock files -------------------------------------------------------------------------------


def test_a_planted_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir(mode=0o700)
    (locks_dir / "gpu-GPU-1.lock").symlink_to(victim)
    with pytest.raises(GuardError) as e:
        take(locks_dir)
    assert "symbolic link" in e.value.message and int(e.value.exit_code) == 4
    assert victim.read_text() == "precious\n"


def test_a_fifo_as_lock_file_is_refused_without_blocking(tmp_path: Path) -> None:
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir(mode=0o700)
    os.mkfifo(locks_dir / "gpu-GPU-1.lock")
    with pytest.raises(GuardError, match="FIFO"):
        take(locks_dir)


def test_a_hard_link_as_lock_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir(mode=0o700)
    os.link(victim, locks_dir / "gpu-GPU-1.lock")
    with pytest.raises(GuardError, match="2 links"):
        take(locks_dir)
    assert victim.read_text() == "precious\n"


def test_a_lock_file_is_never_truncated_and_names_its_holder(tmp_path: Path) -> None:
    locks = take(tmp_path / "locks")
    path = tmp_path / "locks" / "gpu-GPU-1.lock"
    assert json.loads(path.read_text())["pid"] == os.getpid()
    size = path.stat().st_size
    locks.release()
    assert path.stat().st_size == size and path.read_text().strip() == ""  # overwritten in place


def test_dirs_and_lock_files_get_explicit_modes_under_umask_000(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        locks = take(tmp_path / "a" / "b" / "locks")
        attempts.append(tmp_path / "state" / "x" / "p.jsonl", {"attempt": 1})
    finally:
        os.umask(old)
    locks.release()
    for d in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "locks", tmp_path / "state",
              tmp_path / "state" / "x"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE((tmp_path / "a" / "b" / "locks" / "gpu-GPU-1.lock").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "state" / "x" / "p.jsonl").stat().st_mode) == 0o640


def test_an_unsafe_lock_dir_is_refused(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # writable by everyone, not sticky: anyone could swap the lock files
    with pytest.raises(GuardError, match="not sticky"):
        take(open_dir)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(GuardError, match="symbolic link"):
        take(link)


def test_lock_dir_resolution_prefers_the_shared_dir(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    tmp_path.chmod(0o700)
    assert lock.lock_dir(None, {"VLLMGUARD_LOCK_DIR": "/x"}, shared=shared) == Path("/x")
    assert lock.lock_dir("/y", {}, shared=shared) == Path("/y")
    shared.mkdir()
    assert lock.lock_dir(None, env, shared=shared) == shared
    assert lock.sharing_note(None, env, shared=shared) is None
    shared.rmdir()
    missing = tmp_path / "no-parent" / "shared"
    assert lock.lock_dir(None, env, shared=missing) == tmp_path / "vllm-guard"
    note = lock.sharing_note(None, env, shared=missing)
    assert note is not None and "not serialized" in note


@as_root
def test_root_creates_the_shared_dir_sticky_and_world_writable(tmp_path: Path) -> None:
    shared = tmp_path / "lock" / "vllm-guard"
    (tmp_path / "lock").mkdir()
    assert lock.lock_dir(None, {}, shared=shared) == shared
    lock.prepare_dir(shared, shared=shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777 and shared.stat().st_uid == 0


@as_root
def test_root_refuses_a_lock_dir_another_user_made(shared_dir: Path) -> None:
    squat = shared_dir / "vllm-guard-0"
    p = as_nobody("import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)", str(squat))
    assert p.wait(timeout=30) == 0, p.communicate()
    with pytest.raises(GuardError, match="belongs to uid 65534"):
        take(squat)


@as_root
def test_a_squatter_of_another_user_is_named_by_the_kernel_not_by_its_file(shared_dir: Path) -> None:
    # nobody creates the lock file, fills it with escape sequences and holds the flock.
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
            "os.write(fd, b'{\"profile\": \"\\x1b]0;pwned\\x07\\x1b[2J\", \"pid\": 1}')\n"
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)\n")
    squatter = as_nobody(code, str(shared_dir / "gpu-GPU-1.lock"))
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "held"
        seen: list[str] = []
        polls = iter(range(3))
        locks = lock.GpuLocks(shared_dir, ["GPU-1"])
        assert not locks.acquire(on_wait=lambda uuid, who: seen.append(who), poll_s=0.01,
                                 should_stop=lambda: next(polls, None) is None)
        assert seen == [f"pid {squatter.pid} (user nobody, python3)"] or seen[0].startswith(f"pid {squatter.pid} (")
        assert all(c.isprintable() for c in seen[0]) and "pwned" not in seen[0]
    finally:
        squatter.kill()
        squatter.wait()
    # Once the squatter is gone, root locks the very same file another user created.
    take(shared_dir).release()


@as_root
def test_two_users_on_one_gpu_are_serialized(shared_dir: Path) -> None:
    """root holds the GPU's lock; nobody's guard waits for it, then takes it the moment root lets go."""
    code = ("import sys, time\nfrom pathlib import Path\nfrom vllm_guard.launch import lock\n"
            "l = lock.GpuLocks(Path(sys.argv[1]), ['GPU-1'], {})\n"
            "l.acquire(on_wait=lambda u, who: print('waiting for', who, flush=True), poll_s=0.02)\n"
            "print('locked', time.time(), flush=True)\n")
    probe = as_nobody("import vllm_guard")
    if probe.wait(timeout=30) != 0:  # a checkout under a 0700 directory (mktemp -d) is not nobody's to read
        pytest.skip(f"the user nobody cannot import this checkout at {ROOT}: {probe.communicate()[1].strip()[-200:]}")
    held = take(shared_dir)
    other = as_nobody(code, str(shared_dir))
    assert other.stdout is not None
    first = other.stdout.readline()
    assert first.startswith(f"waiting for pid {os.getpid()} (user root"), (first, other.stderr)
    released_at = time.time()
    held.release()
    out, err = other.communicate(timeout=30)
    assert other.returncode == 0, err
    assert out.startswith("locked") and float(out.split()[1]) >= released_at


# --- the attempt log -------------------------------------------------------------------------


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    log = tmp_path / "p.jsonl"
    attempts.append(log, {"attempt": 1, "outcome": "failed"})
    with log.open("a") as f:
        f.write('{"schema":"vllm-guard.attempt/1","attempt":2,"outc')  # a crash or ENOSPC mid-record
    attempts.append(log, {"attempt": 3, "outcome": "ready"})
    records, warnings = attempts.read(log)
    assert [r["attempt"] for r in records] == [1, 3] and len(warnings) == 1


def test_a_planted_attempt_log_symlink_receives_nothing(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "state").mkdir(mode=0o700)
    (tmp_path / "state" / "p.jsonl").symlink_to(victim)
    with pytest.raises(attempts.LogProblem, match="symbolic link"):
        attempts.append(tmp_path / "state" / "p.jsonl", {"attempt": 1})
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev_full", "not_a_dir", "symlink"])
def test_the_writer_reports_once_and_never_raises_or_blocks(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "log"
    if kind == "fifo":
        os.mkfifo(path)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader that never reads
    elif kind == "directory":
        path.mkdir()
    elif kind == "dev_full":
        path = Path("/dev/full")
    elif kind == "not_a_dir":
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "log"
    else:
        path.symlink_to(tmp_path / "elsewhere")
    reports: list[str] = []
    writer = attempts.Writer(path, on_error=reports.append)
    for n in range(3):
        assert writer.append({"attempt": n}) is False
    assert len(reports) == 1 and str(path) in reports[0] and "vLLM keeps running" in reports[0]
    if kind == "fifo":
        os.close(reader)


MALFORMED = [
    '{"schema":"vllm-guard.attempt/1","attempt":1,"changed":[1,2]}',
    '{"schema":"vllm-guard.attempt/1","attempt":2,"changed":{"max-model-len":5}}',
    '{"schema":"vllm-guard.attempt/1","attempt":3,"failure":"oom","next":"eager"}',
    '{"schema":"vllm-guard.attempt/1","attempt":4,"reported":[1],"next":[{"param":1}]}',
    '{"schema":"vllm-guard.attempt/1","attempt":{"x":1},"started_at":7,"outcome":["[bold]x"]}',
    '{"schema":"vllm-guard.attempt/1","attempt":6,"failure":{"class":"[/]\\u001b[2J"},"duration_s":"[red]"}',
    '{"schema":"vllm-guard.attempt/1","attempt":7,"outcome":"\\ud800"}',
    '{"schema":"vllm-guard.attempt/1","attempt":' + "9" * 5000 + "}",
    "[" * 100000 + "]" * 100000,
    '"just a string"',
    '{"schema":"vllm-guard.attempt/1","attempt":9,"outcome":"ready"}',
]


def test_malformed_records_give_warnings_never_a_crash(tmp_path: Path) -> None:
    log = tmp_path / "p.jsonl"
    log.write_text("\n".join(MALFORMED) + "\n")
    r = run_cli("attempts", str(log))
    assert r.code == 0, r.err
    assert "internal error" not in r.err and "warning" in r.err
    assert "\x1b" not in r.out and "9 " in r.out and "ready" in r.out


def test_attempts_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(run_cli("attempts", str(fifo)).code), daemon=True)
    t.start()
    t.join(20)
    assert done and done[0] == 2


# --- hostile log lines (timings: benchmarks/classify_pathological.py) --------------------------


def test_hostile_lines_are_read_with_cut_evidence_and_no_control_characters() -> None:
    from vllm_guard.diagnose.classify import classify, clean_lines
    from vllm_guard.diagnose.diagnosis import EVIDENCE_CHARS
    from vllm_guard.diagnose.markers import stage_of

    d = classify("y" * (8 * 2**20) + " RuntimeError: boom")  # one huge line without a newline
    assert d.cls == "unknown" and all(len(e) <= EVIDENCE_CHARS + 20 for e in d.evidence)
    d = classify("\0" * 2**20 + "\n\x07\x1b]0;title\x07ERROR real\x1b[0m line\x00\n")
    assert d.evidence == ("ERROR real line",)
    assert stage_of("Using " * 20000) is None and stage_of("Using FLASH_ATTN attention backend") is not None
    assert clean_lines("\x1b]0;t\x1b\\INFO a \x1b[1mb\x1b[0m") == [("", "INFO a b")]
    d = classify("ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
                 "[torch.float16]")
    assert d.cls == "dtype_unsupported"
