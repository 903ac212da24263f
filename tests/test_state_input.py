"""State is input (issue 28, item 4): registry entries, remembered relaxations and their keys, read from files
other users or a damaged disk may have written. Real files, FIFOs, links; never a crash, a hang or an echo."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vllm_guard.state import registry

NOW = "2026-12-01T00:00:00+00:00"


def entry_doc(**kw: object) -> dict:
    doc = {"schema": registry.SCHEMA, "guard_pid": os.getpid(), "guard_started": 1.0, "profile": "p.toml",
           "model": "m", "state": "ready", "since": NOW, "attempt": 1, "gpus": [0], "port": 8000}
    doc.update(kw)
    return doc


@pytest.mark.parametrize("started", ["1" + "0" * 400, "1e400", "-1", "NaN", "Infinity", "true", '"100"'])
def test_a_registry_entry_with_a_hostile_start_time_is_passed_over(tmp_path: Path, started: str) -> None:
    """A 400-digit number once crashed every user's `ps` (float() overflowed)."""
    text = json.dumps(entry_doc()).replace('"guard_started": 1.0', f'"guard_started": {started}')
    (tmp_path / f"instance-{os.getpid()}.json").write_text(text)
    entries, notes = registry.read_entries(tmp_path)
    assert entries == []
    assert notes and "not a guard's entry" in notes[0]


def test_a_registry_entry_with_a_sane_start_time_is_read(tmp_path: Path) -> None:
    (tmp_path / f"instance-{os.getpid()}.json").write_text(json.dumps(entry_doc(guard_started=1764547200.5)))
    entries, _ = registry.read_entries(tmp_path)
    assert [e.guard_started for e in entries] == [1764547200.5]


def test_a_pre_created_temp_name_does_not_hide_a_guard(tmp_path: Path) -> None:
    """The old temp name was fixed (.instance-PID.json.PID.tmp): something put there first (here a directory,
    which nobody can unlink as a file) made the registration fail, and the guard was missing from `ps`."""
    path = registry.path_for(tmp_path, os.getpid())
    (tmp_path / f".{path.name}.{os.getpid()}.tmp").mkdir()
    entry = registry.entry_from_dict(entry_doc())
    assert entry is not None
    assert registry.write_entry(path, entry) is None
    assert json.loads(path.read_text())["guard_pid"] == os.getpid()
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") and p.is_file()] == []


# --- remembered relaxations ------------------------------------------------------------------------------

from tests.scripted import World  # noqa: E402
from tests.test_ladder_driver import KV_MISFIT, SERVING, Rig, Script  # noqa: E402


def remembered_file(world: World) -> Path:
    first = Rig(world, Script(KV_MISFIT, exit_at=20), Script(SERVING, ready_at=25))
    first.signal_at(200)
    assert first.run() == 143
    (path,) = (Path(world.env["VLLMGUARD_STATE_DIR"]) / "remembered").glob("p-*.json")
    return path


def with_values(path: Path, values_json: str) -> None:
    doc = json.loads(path.read_text())
    text = json.dumps({**doc, "values": "@@"}).replace('"@@"', values_json)
    path.write_text(text)


HOSTILE_VALUES = {
    "utilization 5.0": '{"gpu-memory-utilization": 5.0}',
    "utilization below the ladder": '{"gpu-memory-utilization": 0.1}',
    "max-model-len 0": '{"max-model-len": 0}',
    "max-model-len NaN": '{"max-model-len": NaN}',
    "max-model-len 400 digits": '{"max-model-len": 1' + "0" * 400 + "}",
    "max-model-len a word": '{"max-model-len": "plenty"}',
    "an option smuggled in": '{"kv-cache-dtype": "--api-key=x"}',
    "a terminal escape": '{"kv-cache-dtype": "fp8\\u001b]0;pwned\\u0007"}',
    "an option the ladder does not change": '{"api-key": "x"}',
    "a key with an escape": '{"max-model-len\\u001b[2J": 9200}',
}


@pytest.mark.parametrize("values", HOSTILE_VALUES.values(), ids=HOSTILE_VALUES.keys())
def test_hostile_remembered_values_never_reach_vllm_and_are_named(tmp_path: Path, values: str) -> None:
    world = World(tmp_path)
    path = remembered_file(world)
    with_values(path, values)
    again = Rig(world, Script(SERVING, ready_at=25))
    again.signal_at(100)
    assert again.run() == 143
    argv = again.vllm.argv(0)
    assert "--max-model-len 32768" in argv and "api-key" not in argv and "fp8" not in argv, argv
    assert "--gpu-memory-utilization 5" not in argv and "0.1" not in argv.split()
    notes = [m for m in again.status.messages() if "ignored the remembered relaxations" in m]
    assert len(notes) == 1, again.status.messages()
    assert all(c.isprintable() for m in again.status.messages() for c in m)
    assert not any("REMEMBERED RELAXATIONS" in m for m in again.status.messages())


@pytest.mark.parametrize("how", ["fifo", "symlink", "huge", "deep nesting", "not json"])
def test_a_hostile_remembered_file_never_hangs_or_crashes_the_start(tmp_path: Path, how: str) -> None:
    world = World(tmp_path)
    path = remembered_file(world)
    good = path.read_text()
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "symlink":
        (tmp_path / "elsewhere.json").write_text(good)
        path.symlink_to(tmp_path / "elsewhere.json")
    elif how == "huge":
        path.write_text(good[:-1] + ', "pad": "' + "x" * 200_000 + '"}')
    elif how == "deep nesting":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.write_text("{not json")
    again = Rig(world, Script(SERVING, ready_at=25))
    again.signal_at(100)
    assert again.run() == 143
    assert "--max-model-len 32768" in again.vllm.argv(0)
    assert any("ignored the remembered relaxations" in m for m in again.status.messages()), again.status.messages()


def test_two_profiles_of_one_name_in_two_directories_share_nothing(tmp_path: Path) -> None:
    """/srv/a/p.toml learnt max-model-len 9200; /srv/b/p.toml (same name, same content) starts as written and
    writes its own attempt log."""
    from vllm_guard.state import attempts as attempt_log

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    state = {"VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    a, b = World(tmp_path / "a", env=dict(state)), World(tmp_path / "b", env=dict(state))
    for w in (a, b):
        del w.env["VLLMGUARD_ATTEMPT_LOG"]  # the per-profile log in the state dir
    remembered_file(a)
    again = Rig(b, Script(SERVING, ready_at=25))
    again.signal_at(100)
    assert again.run() == 143
    assert "--max-model-len 32768" in again.vllm.argv(0)
    logs = sorted(p.name for p in (tmp_path / "state").glob("p-*.jsonl"))
    assert len(logs) == 2, logs
    stems = {attempt_log.profile_stem("p", w.tmp / "p.toml", "m") for w in (a, b)}
    assert {f"{s}.jsonl" for s in stems} == set(logs)


def test_attempts_by_name_finds_the_one_log_and_refuses_to_guess_between_two(tmp_path: Path) -> None:
    from tests.conftest import run_cli
    from vllm_guard.state import attempts as attempt_log

    env = {"VLLMGUARD_STATE_DIR": str(tmp_path / "state")}
    record = {"attempt": 1, "outcome": "ready", "started_at": NOW}
    first = attempt_log.log_path(None, attempt_log.profile_stem("p", tmp_path / "a" / "p.toml", "m"), env)
    attempt_log.append(first, record)
    r = run_cli("attempts", "p", "--json", env=env)
    assert r.code == 0 and json.loads(r.out)["log"] == str(first), r.err
    attempt_log.append(attempt_log.log_path(None, attempt_log.profile_stem("p", tmp_path / "b" / "p.toml", "m"),
                                            env), record)
    r = run_cli("attempts", "p", env=env)
    assert r.code == 2 and "2 profiles called p have attempt logs" in r.err and "hint:" in r.err


# --- a shared lock directory someone else made first ---------------------------------------------------

from tests.test_hardening import as_nobody, shared_dir  # noqa: E402,F401  (shared_dir: a fixture)
from vllm_guard.launch import lock  # noqa: E402


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's directory needs root (setpriv --reuid=nobody)")
@pytest.mark.parametrize("how", ["a 0755 dir", "a 1777 dir", "a symlink"])
def test_a_shared_lock_dir_another_user_made_is_named_and_passed_over(shared_dir: Path, tmp_path: Path,  # noqa: F811
                                                                      how: str) -> None:
    """/run/lock/vllm-guard made first by nobody once kept every guard on the host from starting (exit 4)."""
    squat = shared_dir / "vllm-guard"
    code = {"a 0755 dir": "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o755)",
            "a 1777 dir": "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o1777)",
            "a symlink": "import os, sys; os.symlink('/tmp', sys.argv[1])"}[how]
    p = as_nobody(code, str(squat))
    assert p.wait(timeout=30) == 0, p.communicate()
    env = {"HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    chosen = lock.lock_dir(None, env, shared=squat)
    assert chosen != squat
    lock.prepare_dir(chosen, shared=squat)  # usable: no refusal
    note = lock.sharing_note(None, env, shared=squat)
    assert note is not None and str(squat) in note and "not using the shared lock directory" in note, note
    assert "65534" in note or "symbolic link" in note, note


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's directory needs root (setpriv --reuid=nobody)")
def test_a_private_tmp_lock_dir_another_user_made_is_passed_over_too(shared_dir: Path,  # noqa: F811
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """No shared dir, and $TMPDIR/vllm-guard-0 made by nobody: the user's own ~/.cache/vllm-guard/locks."""
    import tempfile

    squat = shared_dir / f"vllm-guard-{os.geteuid()}"
    p = as_nobody("import os, sys; os.mkdir(sys.argv[1], 0o777); os.chmod(sys.argv[1], 0o777)", str(squat))
    assert p.wait(timeout=30) == 0, p.communicate()
    monkeypatch.setattr(tempfile, "tempdir", str(shared_dir))  # what tempfile.gettempdir() answers
    env = {"HOME": str(shared_dir / "home")}
    chosen = lock.lock_dir(None, env, shared=shared_dir / "absent" / "vllm-guard")
    assert chosen == shared_dir / "home" / ".cache" / "vllm-guard" / "locks"
    lock.prepare_dir(chosen)
