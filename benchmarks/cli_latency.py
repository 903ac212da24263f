"""Median wall time of the guard's everyday commands, each a fresh process as a user runs it, and the CPU time
of the offline verdict as a ratio to a bare Python start measured in the same run.

Targets (issues 2-4, 22): `--help` under 0.3 s, the probes of a whole snapshot under 0.3 s, `check --machine`
under 0.5 s, and the CPU time of `check --machine` at most 7x that of `python -c pass` (issue 22: the check
path imports neither Ray nor huggingface_hub nor the classifier). Run: python benchmarks/cli_latency.py [RUNS]
"""

from __future__ import annotations

import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUARD = [sys.executable, "-m", "vllm_guard"]
CHECK = "vllm-guard check --machine (L4, Llama-3.1-8B)"
CASES = {
    "vllm-guard --help": [*GUARD, "--help"],
    "vllm-guard snapshot --json": [*GUARD, "snapshot", "--json"],
    CHECK: [
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


def median_cpu_seconds(argv: list[str], runs: int) -> float:
    """User plus system CPU time of the child, from the kernel's accounting of waited-for children."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
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
    # A pip-installed guard runs from bytecode (pip compiles at install); a checkout under
    # PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every run and time the compiler.
    compileall.compile_dir(str(ROOT / "vllm_guard"), quiet=1)
    for name, argv in CASES.items():
        print(f"{name:<48} median {median_seconds(argv, runs) * 1000:7.1f} ms over {runs} runs")
    print(f"{'probes of a whole snapshot (in process)':<48} median {probe_seconds(runs) * 1000:7.1f} ms "
          f"over {runs} runs")
    # Interleaved, so that a busy machine slows both sides alike.
    bare, check = [], []
    for _ in range(runs):
        bare.append(median_cpu_seconds([sys.executable, "-c", "pass"], 1))
        check.append(median_cpu_seconds(CASES[CHECK], 1))
    b, c = statistics.median(bare), statistics.median(check)
    print(f"{'CPU time: python -c pass':<48} median {b * 1000:7.1f} ms over {runs} runs")
    print(f"{'CPU time: ' + CHECK:<48} median {c * 1000:7.1f} ms over {runs} runs")
    print(f"{'check --machine / python start (CPU time)':<48} {c / b:7.1f}x (target at most 7x)")


if __name__ == "__main__":
    main()
