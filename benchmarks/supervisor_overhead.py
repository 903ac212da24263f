"""What supervision costs: CPU to relay vLLM's log, CPU while idle, peak memory of the guard.

Targets (issue 6): under 1 CPU-second per 100,000 relayed lines, under 1% CPU while
supervising an idle ready vLLM, under 60 MB peak RSS. The guard runs for real against
the fake vLLM of the tests, with its stdout going to a pipe that is drained and dropped.

Run: python benchmarks/supervisor_overhead.py
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fake_vllm.py"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime of the guard alone


KEEPER_IDLE: list[float] = []  # the keeper's CPU % while vLLM is idle and ready, one per run


def keeper_of(guard_pid: int) -> int:
    """The guard's keeper (vllm_guard/launch/keeper.py): its child whose command line names it."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == guard_pid and b"vllm-guard-keeper" in (proc / "cmdline").read_bytes():
                    return int(proc.name)
            except (OSError, ValueError):
                continue
    raise SystemExit("no keeper found under the guard")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run(work: Path, lines: int, idle_s: float, *, line_bytes: int = 0, terminal: bool = False
        ) -> tuple[float, float, float]:
    """The guard's CPU from launch to ready, its idle CPU % after, and its peak RSS.

    ``terminal``: the guard's stdout and stderr are a pseudo-terminal (the live status is on).
    """
    (work / "gpu.json").write_text(json.dumps({"total_gib": 22.49, "weights_gib": 14.99, "load_s": 0,
                                               "spam_lines": lines, "spam_line_bytes": line_bytes}))
    vllm = work / "vllm"
    vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    vllm.chmod(0o755)
    log = work / f"attempts-{time.monotonic_ns()}.jsonl"  # one per run: a ready record must be this run's
    env = {**os.environ, "FAKE_VLLM_GPU": str(work / "gpu.json"), "VLLMGUARD_VLLM_BIN": str(vllm),
           "VLLMGUARD_ATTEMPT_LOG": str(log), "VLLMGUARD_LOCK_DIR": str(work / "locks"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "vllm_guard", "serve", "--machine", str(ROOT / "profiles/machines/l4-24gb.json"),
            "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--port", "18765", "--host", "127.0.0.1"]
    if terminal:
        master, slave = pty.openpty()
        guard = subprocess.Popen(argv, env=env, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        read = lambda: _read_pty(master)  # noqa: E731
    else:
        guard = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        read = lambda: guard.stdout.read(65536)  # type: ignore[union-attr]  # noqa: E731
    drain = threading.Thread(target=lambda: [None for _ in iter(read, b"")])
    drain.start()
    while not (log.exists() and '"outcome":"ready"' in log.read_text()):
        if guard.poll() is not None:
            raise SystemExit("the guard exited before vLLM was ready")
        time.sleep(0.05)
    startup_cpu = cpu_seconds(guard.pid)
    time.sleep(0.5)
    keeper = keeper_of(guard.pid)
    before, keeper_before = cpu_seconds(guard.pid), cpu_seconds(keeper)
    time.sleep(idle_s)
    idle_cpu = cpu_seconds(guard.pid) - before
    KEEPER_IDLE.append((cpu_seconds(keeper) - keeper_before) / idle_s * 100)
    rss = peak_rss_mb(guard.pid)
    guard.send_signal(signal.SIGTERM)
    guard.wait(30)
    drain.join(5)
    if terminal:
        os.close(master)
    return startup_cpu, idle_cpu / idle_s * 100, rss


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO once the guard has closed its side
        return b""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base_cpu, _, _ = run(Path(tmp), 0, 1.0)
        spam_cpu, idle_pct, rss = run(Path(tmp), 200_000, 10.0)
        tty_base, _, _ = run(Path(tmp), 0, 0.5, terminal=True)
        tty_cpu, _, _ = run(Path(tmp), 200_000, 0.5, terminal=True)
        _, _, long_rss = run(Path(tmp), 3_000, 0.5, line_bytes=256 * 1024)
    relay = spam_cpu - base_cpu
    print(f"guard CPU from launch to ready, quiet vLLM:           {base_cpu:.2f} s (preflight and start-up)")
    print(f"guard CPU from launch to ready, 200,000 log lines:    {spam_cpu:.2f} s")
    print(f"relaying cost, to a pipe:                             {relay / 2:.2f} CPU-s per 100,000 lines")
    tty_relay = (tty_cpu - tty_base) / 2
    print(f"(to a terminal: {tty_base:.2f} s quiet, {tty_cpu:.2f} s with 200,000 lines)")
    print(f"relaying cost, to a terminal (live status):           {tty_relay:.2f} CPU-s per 100,000 lines")
    print(f"guard CPU while supervising an idle ready vLLM:       {idle_pct:.2f} % (10 s)")
    print(f"keeper CPU meanwhile (a /proc look every 2 s):        {KEEPER_IDLE[1]:.2f} %")
    print(f"guard peak RSS:                                       {rss:.1f} MB")
    print(f"guard peak RSS after 3,000 lines of 256 KiB:          {long_rss:.1f} MB")


if __name__ == "__main__":
    main()
