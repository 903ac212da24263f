"""Median wall time of the guard's everyday commands, each a fresh process as a user runs it.

Targets (issues 2-4): `--help` under 0.3 s, the probes of a whole snapshot under
0.3 s, `check --machine` under 0.5 s. Run: python benchmarks/cli_latency.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUARD = [sys.executable, "-m", "vllm_guard"]
CASES = {
    "vllm-guard --help": [*GUARD, "--help"],
    "vllm-guard snapshot --json": [*GUARD, "snapshot", "--json"],
    "vllm-guard check --machine (L4, Llama-3.1-8B)": [
        *GUARD, "check", "--machine", str(ROOT / "profiles/machines/l4-24gb.json"),
        str(ROOT / "profiles/llama-3.1-8b-full-context.toml"),
    ],
    "vllm-guard ps --json": [*GUARD, "ps", "--json"],
}


def median_seconds(argv: list[str], runs: int) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def probe_seconds(runs: int) -> float:
    """The probes alone (NVML, host, cgroups, disks), in one process, without interpreter start-up."""
    sys.path.insert(0, str(ROOT))
    from vllm_guard.probes import probe_machine

    probe_machine(environ=dict(os.environ))  # imports and first-touch caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        probe_machine(environ=dict(os.environ))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    for name, argv in CASES.items():
        print(f"{name:<48} median {median_seconds(argv, runs) * 1000:7.1f} ms over {runs} runs")
    print(f"{'probes of a whole snapshot (in process)':<48} median {probe_seconds(runs) * 1000:7.1f} ms "
          f"over {runs} runs")


if __name__ == "__main__":
    main()
