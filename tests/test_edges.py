"""Exit statuses and messages at the edges: a closed pipe, profiles without .toml, quoted booleans, files in
the way, secrets by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import L4, ROOT, run_cli
from vllm_guard.redact import is_secret_name, redact_env

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PROFILE = f'[model]\nid = "{MODEL}"\n[vllm]\nmax-model-len = 4096\n'


def test_a_closed_pipe_keeps_the_real_exit_status() -> None:
    # The reader is gone before the guard writes a byte: every write meets EPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "vllm_guard", "check", "--machine", L4, MODEL],
                          stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(write_end)
    assert proc.returncode == 4, proc.stderr  # a failed preflight, not 1 ("a bug")
    assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr


def test_a_shell_pipe_into_head_keeps_the_real_exit_status() -> None:
    script = (f"{sys.executable} -m vllm_guard check --machine {L4} {MODEL} | head -1 >/dev/null; "
              "exit ${PIPESTATUS[0]}")
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "PYTHONPATH": str(ROOT)}
    assert subprocess.run(["bash", "-c", script], env=env, timeout=60).returncode == 4


@pytest.mark.parametrize("name", ["ok.TOML", "vllm-profile", "profile.conf"])
def test_a_profile_is_known_by_being_a_file(name: str, write_profile) -> None:
    path = write_profile(PROFILE, name)
    doc = json.loads(run_cli("check", "--json", "--machine", L4, str(path)).out)
    assert doc["model"]["model"] == MODEL and doc["target"] == str(path)


def test_a_gguf_file_stays_a_model(tmp_path: Path) -> None:
    from vllm_guard.cli.target import is_profile_path

    gguf = tmp_path / "tiny"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    named = tmp_path / "tiny.gguf"
    named.write_bytes(b"")
    assert not is_profile_path(str(gguf)) and not is_profile_path(str(named))
    assert not is_profile_path(str(tmp_path))  # a directory is a local model
    assert is_profile_path(str(tmp_path / "missing.TOML"))  # meant as a profile: load_profile says it is missing


def test_a_quoted_boolean_says_to_drop_the_quotes(write_profile) -> None:
    path = write_profile(PROFILE + 'enforce-eager = "true"\n')
    r = run_cli("check", "--machine", L4, str(path))
    assert r.code == 3 and "got the string 'true': drop the quotes" in r.err
    guard = write_profile(PROFILE + '[guard]\nfirst-request = "false"\n', "g.toml")
    r = run_cli("check", "--machine", L4, str(guard))
    assert r.code == 3 and "drop the quotes" in r.err


def test_a_flag_given_a_value_says_how_to_write_false() -> None:
    r = run_cli("check", "--machine", L4, MODEL, "--enforce-eager", "false")
    assert r.code == 2
    assert "--enforce-eager takes no value" in r.err and "--no-enforce-eager for false" in r.err


def test_snapshot_refuses_an_existing_file_like_init(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    out.write_text("{}")
    r = run_cli("snapshot", "-o", str(out), env={"HOME": str(tmp_path)})
    assert r.code == 2 and "exists" in r.err and "--force" in r.err and out.read_text() == "{}"
    init = run_cli("init", "Qwen/Qwen3-0.6B", "--machine", L4, "-o", str(out))
    assert init.code == 2 and "--force" in init.err


def test_machine_must_be_a_json_snapshot(tmp_path: Path) -> None:
    r = run_cli("check", "--machine", str(tmp_path), MODEL)
    assert r.code == 3 and "a directory, not a regular file" in r.err
    text = tmp_path / "notes.txt"
    text.write_text("GPU: L4\n")
    r = run_cli("check", "--machine", str(text), MODEL)
    assert r.code == 3 and "not JSON" in r.err and "vllm-guard snapshot -o FILE" in r.err


@pytest.mark.parametrize("name", ["MYSQL_PASSWD", "PROXY_AUTH", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_PRIVATE",
                                  "HF_TOKEN", "DB_PASSWORD"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)
    assert redact_env({name: "hunter22"}) == {name: "***"}


def test_url_credentials_are_masked() -> None:
    got = redact_env({"DATABASE_URL": "postgres://app:hunter22@db:5432/x", "PLAIN": "http://db:5432/x"})
    assert got == {"DATABASE_URL": "postgres://***@db:5432/x", "PLAIN": "http://db:5432/x"}


def test_failed_preflight_in_serve_says_vllm_was_not_started() -> None:
    r = run_cli("serve", "--machine", L4, MODEL)
    assert r.code == 4 and "vLLM was not started" in r.err


def test_attempts_refuses_a_file_that_is_not_an_attempt_log(tmp_path: Path) -> None:
    log = tmp_path / "other.jsonl"
    log.write_text("\n".join(json.dumps({"n": i}) for i in range(130)) + "\n")
    r = run_cli("attempts", str(log))
    assert r.code == 2 and "is not an attempt log" in r.err and r.err.count("\n") <= 2


A100X2 = str(Path(L4).parent / "a100-80gb-x2.json")


def test_gpus_written_like_cuda_visible_devices(write_profile) -> None:
    """gpus = "0,1" is read as CUDA_VISIBLE_DEVICES reads it; a list holding "0,1" names no GPU and says so."""
    path = write_profile('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard]\ngpus = "0,1"\n')
    doc = json.loads(run_cli("check", "--json", "--machine", A100X2, str(path)).out)
    present = next(c for c in doc["checks"] if c["id"] == "gpu.present")
    assert present["status"] == "pass" and present["measured"] == {"visible_gpus": 2}
    path = write_profile('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard]\ngpus = ["0,1"]\n')
    doc = json.loads(run_cli("check", "--json", "--machine", A100X2, str(path)).out)
    present = next(c for c in doc["checks"] if c["id"] == "gpu.present")
    assert present["status"] == "fail" and present["fix"] == "write a list: gpus = [0, 1]"


def test_a_listed_gpu_the_layout_does_not_use_is_named(write_profile) -> None:
    path = write_profile('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard]\ngpus = [0, 1]\n')
    doc = json.loads(run_cli("check", "--json", "--machine", A100X2, str(path)).out)
    count = next(c for c in doc["checks"] if c["id"] == "gpu.count")
    assert count["status"] == "pass" and count["message"].endswith("; GPU 1 stays unused")


@pytest.mark.skipif(not os.access("/var/lib", os.W_OK), reason="needs to write /var/lib/vllm-guard (root)")
def test_attempts_of_a_name_finds_the_systemd_units_log(tmp_path: Path) -> None:
    """Issue 23: `vllm-guard attempts llama` in an operator's shell looked only in the operator's state dir."""
    import json
    import shutil
    import uuid

    unit_dir = Path("/var/lib/vllm-guard")
    created = not unit_dir.exists()
    name = f"test-{uuid.uuid4().hex[:8]}"
    unit_dir.mkdir(exist_ok=True)
    log = unit_dir / f"{name}.jsonl"
    try:
        log.write_text(json.dumps({"schema": "vllm-guard.attempt/1", "attempt": 1, "outcome": "ready",
                                   "argv": ["vllm", "serve", "m"], "changed": {}}) + "\n")
        r = run_cli("attempts", name, env={"HOME": str(tmp_path)})
        assert r.code == 0, r.err
        assert f"reading the systemd unit's {log}" in r.err and "ready" in r.out
    finally:
        log.unlink(missing_ok=True)
        if created:
            shutil.rmtree(unit_dir, ignore_errors=True)
