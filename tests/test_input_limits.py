"""Inputs the guard reads are regular files of a sane size: a FIFO, a device, a directory or a file of
gigabytes is refused at once with a message, a hint and an exit code; `explain -` reads a pipe of any
length in bounded memory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import L4, ROOT, run_cli
from vllm_guard.safefile import LOG_TAIL_BYTES, read_stream_tail

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /dev/zero are POSIX's")


def special(tmp_path: Path, kind: str) -> str:
    """A path to something that is not a regular file. Reading a FIFO nobody writes would block
    forever; /dev/zero and /dev/urandom never end."""
    if kind == "fifo":
        path = tmp_path / "special"
        os.mkfifo(path)
        return str(path)
    if kind == "directory":
        return str(tmp_path)
    return f"/dev/{kind}"


KINDS = ["fifo", "zero", "urandom", "directory"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_profile_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    link = tmp_path / "p.toml"
    link.symlink_to(special(tmp_path, kind))
    r = run_cli("check", "--machine", L4, str(link))
    assert r.code == 3, r.err
    assert "not a regular file" in r.err and "hint:" in r.err


@pytest.mark.parametrize("kind", KINDS)
def test_a_snapshot_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    r = run_cli("check", "--machine", special(tmp_path, kind), "Qwen/Qwen3-0.6B")
    assert r.code == 3, r.err
    assert "not a regular file" in r.err and "hint:" in r.err


@pytest.mark.parametrize("kind", KINDS)
def test_explain_refuses_a_log_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    r = run_cli("explain", special(tmp_path, kind))
    assert r.code == 2, r.err
    assert "not a regular file" in r.err and "explain -" in r.err


@pytest.mark.parametrize("kind", ["fifo", "zero", "directory"])
def test_a_model_config_that_is_not_a_regular_file_is_a_preflight_error(tmp_path: Path, kind: str) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").symlink_to(special(tmp_path, kind) if kind != "directory" else model)
    r = run_cli("check", "--machine", L4, str(model))
    assert r.code == 4, r.err
    assert "config.json" in r.err and "not a regular file" in r.err and "hint:" in r.err


def test_a_cached_model_config_over_the_limit_is_a_preflight_error(tmp_path: Path) -> None:
    snap = tmp_path / "hub" / "models--org--m" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (tmp_path / "hub" / "models--org--m" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--m" / "refs" / "main").write_text("abc")
    with (snap / "config.json").open("wb") as f:  # sparse
        f.truncate(64 * 2**20)
    r = run_cli("check", "--machine", L4, "org/m", env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert r.code == 4, r.err
    assert "config.json" in r.err and "67,108,864 bytes" in r.err


def test_a_safetensors_shard_that_is_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                                                   "num_hidden_layers": 2, "hidden_size": 64,
                                                   "num_attention_heads": 4, "vocab_size": 100,
                                                   "max_position_embeddings": 128}))
    os.mkfifo(model / "model.safetensors")
    r = run_cli("check", "--machine", L4, str(model))
    assert r.code in (0, 4) and "internal error" not in r.err, r.err


@pytest.mark.parametrize(("what", "limit_mib"), [("profile", 1), ("snapshot", 16), ("config", 16)])
def test_an_input_over_its_size_limit_is_refused_by_name(tmp_path: Path, what: str, limit_mib: int) -> None:
    big = tmp_path / ("p.toml" if what == "profile" else "config.json" if what == "config" else "m.json")
    with big.open("wb") as f:  # sparse: no disk used
        f.truncate(limit_mib * 2**20 + 1)
    if what == "profile":
        r = run_cli("check", "--machine", L4, str(big))
    elif what == "snapshot":
        r = run_cli("check", "--machine", str(big), "Qwen/Qwen3-0.6B")
    else:
        r = run_cli("check", "--machine", L4, str(tmp_path))
    assert r.code == {"profile": 3, "snapshot": 3, "config": 4}[what], r.err
    assert f"{limit_mib * 2**20 + 1:,} bytes" in r.err and "hint:" in r.err


def test_explain_reads_a_long_log_file_as_its_tail(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    tail = (ROOT / "tests" / "data" / "logs" / "no_kv_memory_033.log").read_bytes()
    with log.open("wb") as f:
        f.truncate(LOG_TAIL_BYTES + 2**20)  # a sparse head of NUL bytes longer than the window
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + tail)
    r = run_cli("explain", str(log))
    assert r.code == 0, r.err
    assert "failure: no_kv_memory" in r.out


def test_the_stdin_window_keeps_the_end_of_any_stream() -> None:
    lines = "".join(f"line {i}\n" for i in range(200_000))
    text, cut = read_stream_tail(io.StringIO(lines), 1000, chunk_chars=4096)
    assert cut and len(text) == 1000 and text.endswith("line 199999\n")
    text, cut = read_stream_tail(io.StringIO("short\n"), 1000)
    assert (text, cut) == ("short\n", False)


def _explain_stdin(stdin: int | None, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "vllm_guard", "explain", "-"], env=env, stdin=stdin, input=data,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_explain_refuses_an_endless_device_on_stdin(device: str) -> None:
    with open(device, "rb") as f:
        r = _explain_stdin(f.fileno())
    assert r.returncode == 2, r.stderr
    assert b"character device" in r.stderr and b"hint:" in r.stderr


def test_explain_reads_a_pipe_with_bytes_that_are_not_utf8() -> None:
    log = (ROOT / "tests" / "data" / "logs" / "no_kv_memory_033.log").read_bytes()
    r = _explain_stdin(None, b"\xff\xfe\x00 garbage\n" + log)
    assert r.returncode == 0, r.stderr
    assert b"no_kv_memory" in r.stdout
