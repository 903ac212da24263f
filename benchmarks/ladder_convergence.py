"""Starts until ready: the guard's ladder against a blind ladder and a plain restart loop.

Each strategy drives the fake vLLM of the tests (vLLM 0.33's messages over a simulated
24 GB GPU) through the same misfit scenarios. The guard's ladder is the real one:
classify() on vLLM's output, then ladder.next_step(). The blind ladder is
what existing launchers do: enforce-eager, then halve max-num-seqs, then
max-model-len - 512 per start, then utilization - 0.05 per start. The restart loop
starts again unchanged. Simulated start-up time charges each start by the stage it
reached (a real 8B start: 10 s before the engine, 60 s loading, 90 s profiling,
100 s KV sizing, 130 s graph capture, 150 s to ready).

Run: python benchmarks/ladder_convergence.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.diagnose import ladder  # noqa: E402
from vllm_guard.diagnose.classify import classify  # noqa: E402

FAKE = ROOT / "tests" / "fake_vllm.py"
STAGE_SECONDS = {"before_start": 10, "weight_loading": 60, "profiling": 90, "kv_cache": 100, "cuda_graph": 130,
                 "api_server": 150}
CAP = {"guard": 10, "blind": 40, "restart": 8}

# name -> (simulated GPU, starting options)
SCENARIOS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "8B, full 131k context, 24 GB": ({"weights_gib": 14.99}, {"max_model_len": 131072}),
    "8B, 131k, old vLLM wording (no estimate)": ({"weights_gib": 14.99, "wording": "v1_old"},
                                                 {"max_model_len": 131072}),
    "8B, 32k, heavier checkpoint": ({"weights_gib": 16.6}, {"max_model_len": 32768}),
    "8B, CUDA-graph OOM": ({"weights_gib": 14.99, "graph_oom_unless_eager": True}, {"max_model_len": 8192}),
    "0.6B, GPU busy (6 GiB held)": ({"weights_gib": 1.2, "others_gib": 6}, {"max_model_len": 8192}),
    "8B, max-model-len above the model's": ({"weights_gib": 14.99}, {"max_model_len": 200000}),
    "8B, no KV memory at utilization 0.7": ({"weights_gib": 14.99}, {"max_model_len": 8192,
                                                                     "gpu_memory_utilization": 0.7}),
    "8B, 64k and 512 sequences": ({"weights_gib": 14.99}, {"max_model_len": 65536, "max_num_seqs": 512}),
    "8B, tensor parallel 3 (no fix exists)": ({"weights_gib": 14.99, "heads": 32},
                                              {"max_model_len": 8192, "tensor_parallel_size": 3}),
}
DEFAULTS = {"gpu_memory_utilization": 0.92, "max_num_seqs": 256, "max_num_batched_tokens": 2048,
            "enforce_eager": False, "kv_cache_dtype": "auto", "tensor_parallel_size": 1}


def start(work: Path, gpu: dict[str, Any], opts: dict[str, Any]) -> tuple[bool, str, int]:
    """One start of the fake vLLM; it stops by itself once ready (crash_after_ready_s 0)."""
    conf = {"total_gib": 22.49, "load_s": 0, "crash_after_ready_s": 0, **gpu}
    others = work / "others"
    others.write_text(str(gpu.get("others_gib", 0)))
    conf["others_file"] = str(others)
    (work / "gpu.json").write_text(json.dumps(conf))
    argv = [sys.executable, str(FAKE), "serve", "model", "--port", "0"]
    for key, value in opts.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            argv += [flag] if value else []
        else:
            argv += [flag, str(value)]
    env = {**os.environ, "FAKE_VLLM_GPU": str(work / "gpu.json")}
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    text = p.stdout + p.stderr
    return "Application startup complete." in text, text, p.returncode


def guard_next(text: str, code: int, opts: dict[str, Any], unchanged: int) -> dict[str, Any] | None:
    d = classify(text, exit_status=code)
    s = ladder.Settings(max_model_len=opts.get("max_model_len"), gpu_memory_utilization=opts["gpu_memory_utilization"],
                        max_num_batched_tokens=opts["max_num_batched_tokens"], max_num_seqs=opts["max_num_seqs"],
                        enforce_eager=opts["enforce_eager"], kv_cache_dtype=opts["kv_cache_dtype"])
    step = ladder.next_step(d, s, ladder.Limits(), fp8_supported=True, unchanged_retries=unchanged)
    if isinstance(step, ladder.Stop):
        return None
    if step.param is None:
        return dict(opts)
    return {**opts, step.param.replace("-", "_"): step.value}


def blind_next(opts: dict[str, Any], n: int) -> dict[str, Any] | None:
    if n == 1:
        return {**opts, "enforce_eager": True}
    if n == 2:
        return {**opts, "max_num_seqs": max(opts["max_num_seqs"] // 2, 1)}
    if opts["max_model_len"] - 512 >= 1024:
        return {**opts, "max_model_len": opts["max_model_len"] - 512}
    if opts["gpu_memory_utilization"] - 0.05 >= 0.3:
        return {**opts, "gpu_memory_utilization": round(opts["gpu_memory_utilization"] - 0.05, 2)}
    return None


def run(strategy: str, gpu: dict[str, Any], first: dict[str, Any], work: Path) -> tuple[int, int, bool]:
    opts = {**DEFAULTS, **first}
    seconds = 0
    unchanged = 0
    for n in range(1, CAP[strategy] + 1):
        ok, text, code = start(work, gpu, opts)
        stage = classify(text).stage if not ok else "api_server"
        seconds += STAGE_SECONDS.get(stage, 60)
        if ok:
            return n, seconds, True
        nxt = (guard_next(text, code, opts, unchanged) if strategy == "guard"
               else blind_next(opts, n) if strategy == "blind" else dict(opts))
        if nxt is None:
            return n, seconds, False
        unchanged += nxt == opts
        opts = nxt
    return CAP[strategy], seconds, False


def main() -> None:
    totals = {s: [0, 0, 0] for s in CAP}
    print(f"{'scenario':<42} " + "  ".join(f"{s + ' starts':>14} {'sim. time':>9}" for s in CAP))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "holders").mkdir()
        for name, (gpu, first) in SCENARIOS.items():
            cells = []
            for strategy, cap in CAP.items():
                starts, seconds, ok = run(strategy, gpu, first, work)
                totals[strategy][0] += starts
                totals[strategy][1] += seconds
                totals[strategy][2] += ok
                mark = "" if ok else " (gave up)" if starts < cap else " (cap)"
                cells.append(f"{str(starts) + mark:>14} {seconds / 60:>7.1f}m")
            print(f"{name:<42} " + "  ".join(cells))
    print(f"{'total':<42} " + "  ".join(f"{t[0]:>14} {t[1] / 60:>7.1f}m" for t in totals.values()))
    print("ready in: " + ", ".join(f"{s} {t[2]}/{len(SCENARIOS)}" for s, t in totals.items()))


if __name__ == "__main__":
    main()
