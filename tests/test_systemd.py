"""systemd and containers: sd_notify over a real datagram socket, the unit files, the guard as PID 1."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_serve import Rig, fake_processes, gone_soon
from vllm_guard.launch.notify import Notifier

UNITS = [ROOT / "systemd" / "vllm-guard@.service", ROOT / "systemd" / "vllm-guard.service"]


class NotifySocket:
    """What systemd does: bind a datagram socket and collect what the service sends, with arrival times."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + address[1:] if address.startswith("@") else address)
        self.sock.settimeout(0.2)
        self.messages: list[tuple[float, str]] = []
        self.health_at_ready: list[int] = []
        self.port: int | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(65536).decode()
            except OSError:
                continue
            self.messages.append((time.monotonic(), data))
            if "READY=1" in data and self.port:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    self.health_at_ready.append(r.status)

    def fields(self, name: str) -> list[str]:
        return [line.split("=", 1)[1] for _, m in self.messages for line in m.split("\n")
                if line.startswith(name + "=")]

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


def test_notifier_is_silent_without_a_socket() -> None:
    n = Notifier({})
    assert not n.enabled and n.send("READY=1") is False and n.watchdog_interval_s is None


def test_watchdog_only_for_our_pid() -> None:
    assert Notifier({"WATCHDOG_USEC": "2000000"}).watchdog_interval_s == 2.0
    assert Notifier({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}).watchdog_interval_s is None


@pytest.mark.parametrize("kind", ["path", "abstract"])
def test_sd_notify_through_a_ladder_and_a_stop(tmp_path: Path, kind: str) -> None:
    address = str(tmp_path / "notify.sock") if kind == "path" else f"@vllm-guard-test-{os.getpid()}"
    listener = NotifySocket(address)
    rig = Rig(tmp_path, weights_gib=16.6, load_s=0.5)  # a KV misfit first: two attempts
    listener.port = rig.port
    guard = rig.start(rig.profile("max-model-len = 32768"),
                      env={"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "1000000"})
    try:
        rig.wait_ready(guard)
        deadline = time.monotonic() + 10
        while len(listener.fields("WATCHDOG")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        guard.send_signal(signal.SIGTERM)
        guard.communicate(timeout=30)
        time.sleep(0.3)
    finally:
        listener.close()
    assert guard.returncode == 143
    statuses = listener.fields("STATUS")
    assert any(s.startswith("attempt 1/5") for s in statuses)
    assert any(s.startswith("attempt 2/5: max-model-len") and "relaxed from 32768" in s for s in statuses)
    assert any(s.startswith("ready: p on :") and "KV" in s for s in statuses)
    assert listener.fields("READY") == ["1"] and listener.health_at_ready == [200]  # never before /health
    ready_at = next(t for t, m in listener.messages if "READY=1" in m)
    assert all(t < ready_at for t, m in listener.messages if "EXTEND_TIMEOUT_USEC" in m)
    assert listener.fields("EXTEND_TIMEOUT_USEC")
    watchdog_at = [t for t, m in listener.messages if "WATCHDOG=1" in m]
    assert len(watchdog_at) >= 2 and all(t > ready_at for t in watchdog_at)
    assert listener.fields("STOPPING") == ["1"]


def test_units_have_the_directives_that_matter() -> None:
    template = UNITS[0].read_text()
    for line in ("Type=notify", "NotifyAccess=main",
                 "ExecStart=/usr/local/bin/vllm-guard serve /etc/vllm-guard/%i.toml", "KillMode=mixed",
                 "Restart=on-failure", "RestartPreventExitStatus=2 3 4 5", "SuccessExitStatus=143",
                 "StartLimitBurst=", "StateDirectory=vllm-guard", "RuntimeDirectory=vllm-guard",
                 "RuntimeDirectoryPreserve=yes", "LimitNOFILE=65536", "Environment=HF_HOME=", "User=",
                 "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=", "PrivateTmp=yes",
                 "ProtectKernelTunables=yes", "TimeoutStartSec=", "TimeoutStopSec=", "WatchdogSec="):
        assert any(row.startswith(line) for row in template.splitlines()), line
    assert "PrivateDevices=yes" not in template  # it would hide /dev/nvidia*


def _seconds(value: str) -> float:
    return float(value[:-3]) * 60 if value.endswith("min") else float(value.rstrip("s"))


def test_stop_timeout_outlasts_the_guards_grace() -> None:
    from vllm_guard.profile.settings import GUARD_SETTINGS

    for unit in UNITS:
        stop = next(r.split("=", 1)[1] for r in unit.read_text().splitlines() if r.startswith("TimeoutStopSec="))
        assert _seconds(stop) > GUARD_SETTINGS["stop-timeout"].default + 30


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # verify checks that ExecStart= exists: point it at the vllm-guard this test runs.
    guard = Path(sys.executable).with_name("vllm-guard")
    exe = str(guard) if guard.exists() else shutil.which("true")
    copies = []
    for unit in UNITS:
        name = unit.name.replace("@.", "@llama.")
        (tmp_path / name).write_text(unit.read_text().replace("/usr/local/bin/vllm-guard", str(exe)))
        copies.append(str(tmp_path / name))
    r = subprocess.run(["systemd-analyze", "verify", *copies], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _unshare_allowed() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True).returncode == 0


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _zombie_children(pid: int) -> list[int]:
    out = []
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                out.append(child)
        except OSError:
            pass
    return out


@pytest.mark.skipif(not _unshare_allowed(), reason="needs root and unshare --pid (not permitted here)")
def test_pid_1_reaps_orphans_and_stops_on_sigterm(tmp_path: Path) -> None:
    rig = Rig(tmp_path, orphan_grandchild_s=1)
    unshare = subprocess.Popen(
        # --kill-child: if the test fails, killing unshare takes the whole namespace with it.
        ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-m", "vllm_guard", "serve",
         "--machine",
         str(ROOT / "profiles/machines/l4-24gb.json"), rig.profile("max-model-len = 8192")],
        env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rig.wait_ready(unshare)
        guard = _children(unshare.pid)[0]
        nspid = next(r for r in Path(f"/proc/{guard}/status").read_text().splitlines() if r.startswith("NSpid:"))
        assert nspid.split()[-1] == "1"  # the guard is PID 1 inside the new namespace
        time.sleep(3)  # the orphaned helper has exited by now
        assert _zombie_children(guard) == []
        os.kill(guard, signal.SIGTERM)
        unshare.communicate(timeout=30)
    finally:
        if unshare.poll() is None:
            unshare.kill()
    assert gone_soon(), fake_processes()


def test_dockerfile_pins_vllm_and_enters_through_the_guard() -> None:
    text = (ROOT / "docker" / "Dockerfile").read_text()
    base = next(r for r in text.splitlines() if r.startswith("FROM "))
    assert base == "FROM vllm/vllm-openai:v0.33.0"  # a pinned tag, never :latest
    assert 'ENTRYPOINT ["vllm-guard", "serve"]' in text and "STOPSIGNAL SIGTERM" in text
    assert "VLLMGUARD_PROFILE=/etc/vllm-guard/profile.toml" in text


def test_environment_alone_can_name_a_model() -> None:
    from tests.conftest import L4, run_cli

    r = run_cli("serve", "--dry-run", "--machine", L4, env={"VLLMGUARD_PROFILE": "Qwen/Qwen3-0.6B"})
    assert r.code == 0 and "\nvllm serve Qwen/Qwen3-0.6B\n" in r.out


def _service_directives(unit: Path) -> dict[str, list[str]]:
    """The [Service] section's directives (name -> values, in order), comments left out."""
    out: dict[str, list[str]] = {}
    section = ""
    for raw in unit.read_text().splitlines():
        row = raw.strip()
        if row.startswith("["):
            section = row
        elif section == "[Service]" and "=" in row and not row.startswith("#"):
            name, _, value = row.partition("=")
            out.setdefault(name, []).append(value)
    return out


def test_the_single_unit_is_the_template_unit_for_one_profile() -> None:
    """docs/systemd.md says vllm-guard.service "is the same" as the template: it is, but for the profile path."""
    template, single = (_service_directives(ROOT / "systemd" / name)
                        for name in ("vllm-guard@.service", "vllm-guard.service"))
    assert template.pop("ExecStart") == ["/usr/local/bin/vllm-guard serve /etc/vllm-guard/%i.toml"]
    assert single.pop("ExecStart") == ["/usr/local/bin/vllm-guard serve /etc/vllm-guard/profile.toml"]
    assert {k: sorted(v) for k, v in single.items()} == {k: sorted(v) for k, v in template.items()}


def test_every_hardening_directive_the_doc_names_is_in_both_units() -> None:
    doc = (ROOT / "docs" / "systemd.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| hardening |"))
    names: set[str] = set()
    previous = ""
    for token in re.findall(r"`([A-Za-z]+)", row):
        name = token
        if re.fullmatch(r"[A-Z][a-z]+", token) and previous:
            # `ProtectKernelTunables`/`Modules`/`Logs`: the last word of the previous name, replaced.
            name = re.sub(r"[A-Z][a-z]+$", token, previous)
        names.add(name)
        previous = name
    assert len(names) >= 15
    for unit in ("vllm-guard@.service", "vllm-guard.service"):
        directives = _service_directives(ROOT / "systemd" / unit)
        assert names <= set(directives), (unit, names - set(directives))


def test_docker_healthcheck_asks_the_port_it_is_given() -> None:
    """The image's HEALTHCHECK command, run as Docker would, against a /health on a port that is not 8000."""
    import http.server
    import shlex

    text = (ROOT / "docker" / "Dockerfile").read_text().replace("\\\n", " ")
    command = shlex.split(next(r for r in text.splitlines() if r.startswith("HEALTHCHECK")).split(" CMD ", 1)[1])

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        python = [sys.executable, *command[1:]]
        assert subprocess.run(python, env={"HEALTHCHECK_PORT": str(port)}, capture_output=True).returncode == 0
        server.shutdown()
        server.server_close()
        assert subprocess.run(python, env={"HEALTHCHECK_PORT": str(port)}, capture_output=True).returncode != 0
    finally:
        server.server_close()
