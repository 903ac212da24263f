"""Never join or start a Ray cluster another user controls (issue 28, item 1).

Ray makes /tmp/ray mode 0777, so any local user can write the ``ray_current_cluster`` file that names "the cluster
started on this machine"; joining a cluster is running its code (Ray's protocol carries pickles). Real files,
owners, sockets and processes; the owner cases need root (chown, setpriv) and skip cleanly without it.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.foreign_server import SilentPort
from vllm_guard.cluster import trust

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="planting a file of another user needs root (chown, setpriv)")


def nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


def plant(tmp: Path, text: str, *, dir_mode: int = 0o755, file_mode: int = 0o644, file_uid: int | None = None,
          dir_uid: int | None = None) -> dict[str, str]:
    """$RAY_TMPDIR/ray/ray_current_cluster as ``ray start --head`` leaves it, owned and moded as asked."""
    base = tmp / "raytmp"
    d = base / "ray"
    d.mkdir(parents=True)
    f = d / "ray_current_cluster"
    f.write_text(text)
    os.chmod(f, file_mode)
    os.chmod(d, dir_mode)
    if file_uid is not None:
        os.chown(f, file_uid, -1)
    if dir_uid is not None:
        os.chown(d, dir_uid, -1)
    return {"RAY_TMPDIR": str(base)}


@pytest.fixture
def listener() -> Iterator[SilentPort]:
    one = SilentPort(hold=False)
    yield one
    one.close()


def test_a_private_file_of_this_user_is_trusted(tmp_path: Path) -> None:
    env = plant(tmp_path, "127.0.0.1:6379\n", dir_mode=0o700)
    found = trust.local_cluster(env)
    assert found.address == "127.0.0.1:6379" and found.ignored is None


def test_a_sticky_shared_directory_with_this_users_file_is_trusted(tmp_path: Path) -> None:
    env = plant(tmp_path, "127.0.0.1:6379", dir_mode=0o1777)
    assert trust.local_cluster(env).address == "127.0.0.1:6379"


@pytest.mark.parametrize(("how", "why"), [
    ("dir-0777", "writable by other users"),  # Ray's own /tmp/ray: anyone could have replaced the file
    ("file-0666", "writable by other users"),
    ("symlink", "symbolic link"),
    ("fifo", "FIFO"),
    ("huge", "more than"),
    ("escapes", "not an address"),
])
def test_an_untrusted_file_is_ignored_and_says_why(tmp_path: Path, how: str, why: str) -> None:
    text = {"huge": "1" * 5000, "escapes": "127.0.0.1:6379\x1b]0;pwned\x07"}.get(how, "127.0.0.1:6379")
    env = plant(tmp_path, text, dir_mode=0o777 if how == "dir-0777" else 0o755,
                file_mode=0o666 if how == "file-0666" else 0o644)
    f = Path(env["RAY_TMPDIR"]) / "ray" / "ray_current_cluster"
    if how == "symlink":
        (tmp_path / "elsewhere").write_text("127.0.0.1:6379")
        f.unlink()
        f.symlink_to(tmp_path / "elsewhere")
    elif how == "fifo":
        f.unlink()
        os.mkfifo(f)
    found = trust.local_cluster(env)
    assert found.address is None
    assert found.ignored is not None and why in found.ignored, found.ignored
    assert "\x1b" not in found.ignored


@needs_root
@pytest.mark.parametrize("owner", ["file", "dir"])
def test_a_file_planted_by_another_user_is_ignored(tmp_path: Path, owner: str) -> None:
    env = plant(tmp_path, "127.0.0.1:6379", file_uid=nobody() if owner == "file" else None,
                dir_uid=nobody() if owner == "dir" else None)
    found = trust.local_cluster(env)
    assert found.address is None and found.ignored is not None
    assert f"uid {nobody()}" in found.ignored and "another user could have planted it" in found.ignored


TP2 = '[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\ntensor-parallel-size = 2\n'


@needs_root
def test_roots_check_makes_no_connection_to_a_planted_cluster_and_says_why(tmp_path: Path,
                                                                           listener: SilentPort) -> None:
    """The issue's attack: nobody plants the address of its own head; root checks a profile that needs more
    GPUs than the machine has. No connection reaches the port, and the report names the ignored file."""
    env = plant(tmp_path, f"127.0.0.1:{listener.port}", file_uid=nobody())
    profile = tmp_path / "p.toml"
    profile.write_text(TP2)
    r = run_cli("check", str(profile), env={**env, "RAY_ADDRESS": ""})
    assert listener.connections == 0
    assert "ray_current_cluster" in r.out + r.err and "another user could have planted it" in r.out + r.err, r.out
    assert r.code == 4  # the one-machine verdict on a machine without the GPUs


@needs_root
def test_root_never_joins_a_head_another_user_listens_on(tmp_path: Path) -> None:
    """Named or not, a head on this machine whose socket belongs to another user is refused before ray.init."""
    server = subprocess.Popen(
        ["setpriv", f"--reuid={nobody()}", f"--regid={nobody()}", "--clear-groups", sys.executable, "-c",
         "import socket, sys, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
         "print(s.getsockname()[1], flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        profile = tmp_path / "p.toml"
        profile.write_text(TP2 + 'distributed-executor-backend = "ray"\n')
        pytest.importorskip("ray")
        r = run_cli("check", str(profile), env={"RAY_ADDRESS": f"127.0.0.1:{port}"})
    finally:
        server.kill()
        server.wait()
    assert r.code == 4
    assert f"belongs to uid {nobody()}" in r.err and "root never joins a cluster another user controls" in r.err


@pytest.mark.parametrize("where", ["RAY_ADDRESS", "guard.ray-address", "file"])
def test_local_starts_no_cluster(tmp_path: Path, where: str) -> None:
    """``local`` would make ray.init start a cluster listening on every interface: refused, with a message."""
    pytest.importorskip("ray")
    env = {"RAY_ADDRESS": "local"} if where == "RAY_ADDRESS" else {"RAY_ADDRESS": ""}
    guard = '[guard]\nray-address = "local"\n' if where == "guard.ray-address" else ""
    if where == "file":
        env.update(plant(tmp_path, "local", dir_mode=0o700))
    else:
        env["RAY_TMPDIR"] = str(tmp_path / "raytmp")
    profile = tmp_path / "p.toml"
    profile.write_text(TP2 + 'distributed-executor-backend = "ray"\n' + guard)
    r = run_cli("check", str(profile), env=env)
    assert r.code == 4, r.err
    assert "would start a new Ray cluster" in r.err
    session = Path(env["RAY_TMPDIR"]) / "ray"
    assert not session.exists() or not any(p.name.startswith("session") for p in session.iterdir())
