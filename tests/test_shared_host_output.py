"""What the guard shows and leaves on a shared host: no URL credentials in its output or its log, explicit
modes whatever the umask, 143 after a requested stop whatever happened to stdout, and a read-only attempt
log that does not stop serving (checked as an unprivileged user: root ignores file modes)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import L4, ROOT, run_cli
from tests.test_serve_hardening import FAKE, free_port, wait_healthy
from vllm_guard.redact import mask_url_credentials, redact_env, redact_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and setpriv are Linux's")
NOBODY = 65534


def test_url_credentials_are_masked_in_the_dry_run(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\notlp-traces-endpoint = "http://tr:otelpw99@otel:4317"\n'
                       '[env]\nDATABASE_URL = "postgres://app:hunter22@db:5432/x"\n'
                       'HTTPS_PROXY = "http://proxyuser:proxypw77@proxy:3128"\n')
    r = run_cli("serve", "--dry-run", "--machine", L4, str(profile))
    assert r.code == 0, r.err
    for secret in ("otelpw99", "hunter22", "proxypw77", "app:", "proxyuser"):
        assert secret not in r.out + r.err
    assert "postgres://***@db:5432/x" in r.out and "http://***@otel:4317" in r.out


def test_url_credentials_are_masked_in_evidence_and_environment_lines() -> None:
    line = "ERROR connecting to postgres://app:hunter22@db/x; retry with password hunter22"
    assert redact_text(line, ["hunter22"]) == "ERROR connecting to postgres://***@db/x; retry with password ***"
    assert redact_text("see https://u:tok3n@h/p", []) == "see https://***@h/p"
    assert redact_env({"DATABASE_URL": "mysql://root:pw@h/db", "HF_ENDPOINT": "https://hf.co"}) == {
        "DATABASE_URL": "mysql://***@h/db", "HF_ENDPOINT": "https://hf.co"}
    assert mask_url_credentials("mailto:a@b and http://host/path@x") == "mailto:a@b and http://host/path@x"


# --- the fake vLLM, as another user or under umask 000 ----------------------------------------------------


def _rig(root: Path) -> tuple[Path, dict[str, str], int]:
    """A profile, a fake `vllm` on PATH and the guard's environment, all under ``root``."""
    (root / "gpu.json").write_text(json.dumps({"total_gib": 22.49, "weights_gib": 1.2, "load_s": 0.1}))
    vllm = root / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    vllm.chmod(0o755)
    port = free_port()
    profile = root / "p.toml"
    profile.write_text(f'[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nport = {port}\nhost = "127.0.0.1"\n'
                       'max-model-len = 8192\n[guard]\nstop-timeout = 5\n')
    env = {"PATH": f"{vllm.parent}:/usr/bin:/bin", "HOME": str(root), "HF_HUB_OFFLINE": "1",
           "FAKE_VLLM_GPU": str(root / "gpu.json"), "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(root / "state"),
           "VLLMGUARD_LOCK_DIR": str(root / "locks" / "gpu")}
    return profile, env, port


def _serve(prefix: list[str], profile: Path, env: dict[str, str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([*prefix, sys.executable, "-m", "vllm_guard", "serve", "--machine", L4, str(profile)],
                            env=env, stderr=subprocess.PIPE, text=True, cwd=profile.parent, **kw)  # type: ignore


def test_state_and_lock_dirs_get_explicit_modes_under_umask_000(tmp_path: Path) -> None:
    profile, env, port = _rig(tmp_path)
    guard = _serve(["sh", "-c", 'umask 000; exec "$@"', "sh"], profile, env, stdout=subprocess.DEVNULL)
    try:
        wait_healthy(guard, port)  # type: ignore[arg-type]
    finally:
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=60)
    assert guard.returncode == 143, err
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "state", tmp_path / "state" / "vllm-guard",
                                                         tmp_path / "locks", tmp_path / "locks" / "gpu")}
    assert all(mode & 0o022 == 0 for mode in modes.values()), {str(p): oct(m) for p, m in modes.items()}
    (log,) = (tmp_path / "state" / "vllm-guard").glob("p-*.jsonl")  # the profile's name and its path's hash
    assert stat.S_IMODE(log.stat().st_mode) & 0o027 == 0, oct(log.stat().st_mode)
    locks = list((tmp_path / "locks" / "gpu").iterdir())
    assert locks and all(stat.S_IMODE(p.stat().st_mode) & 0o022 == 0 for p in locks)


def test_a_stop_reports_143_even_when_stdout_is_gone(tmp_path: Path) -> None:
    """Python exits 120 when its last flush of stdout fails: a pipe whose reader died with the same
    SIGTERM (`vllm-guard serve ... | tee log` stopped as a group) must not turn the stop into 120."""
    profile, env, port = _rig(tmp_path)
    read_end, write_end = os.pipe()
    guard = _serve([], profile, env, stdout=write_end)
    os.close(write_end)
    try:
        wait_healthy(guard, port)  # type: ignore[arg-type]
    finally:
        os.close(read_end)  # the reader is gone: every later write to stdout fails with EPIPE
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=60)
    assert guard.returncode == 143, err
    # The relay thread keeps draining vLLM's pipes: no traceback of the guard's own (vLLM's may have one).
    assert "vllm_guard/" not in err and "Exception ignored" not in err, err


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A directory the user nobody owns, outside root's private /tmp/pytest-of-root."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the guard as another user (root ignores file modes)")
    spawn = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import vllm_guard, rich'], check=True)"
    probe = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable,
                            "-c", spawn], env={"PYTHONPATH": str(ROOT)}, capture_output=True, cwd="/")
    if probe.returncode != 0:  # the guard starts its keeper with sys.executable: it must be nobody's to run
        pytest.skip(f"the user nobody cannot start {sys.executable} (a Python under a private home?): "
                    f"{probe.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    root = Path(tempfile.mkdtemp(prefix="vllm-guard-nobody-"))
    root.chmod(0o755)
    os.chown(root, NOBODY, NOBODY)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_read_only_attempt_log_never_stops_a_ready_vllm(nobody_dir: Path) -> None:
    profile, env, port = _rig(nobody_dir)
    log = nobody_dir / "attempts.jsonl"
    log.write_text("")
    log.chmod(0o444)
    for path in [*nobody_dir.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    env["VLLMGUARD_ATTEMPT_LOG"] = str(log)
    guard = _serve(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"], profile, env,
                   stdout=subprocess.DEVNULL)
    try:
        wait_healthy(guard, port)  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and guard.poll() is None:  # until the ready record was tried
            status = Path(f"/proc/{guard.pid}/status").read_text()
            if "Uid:\t65534" in status:
                break
            time.sleep(0.1)
        time.sleep(1.5)  # the ready record has been tried by now
        assert guard.poll() is None, guard.communicate()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            assert r.status == 200
    finally:
        guard.send_signal(signal.SIGTERM)
        _, err = guard.communicate(timeout=60)
    assert guard.returncode == 143, err
    assert err.count("cannot write the attempt log") == 1, err
    assert "Permission denied" in err
    assert log.read_text() == ""
