"""Median time to classify a 100,000-line vLLM log with the root cause in the middle (target: under 1 s).

Run: python benchmarks/classify_big_log.py [RUNS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.diagnose.classify import classify  # noqa: E402


def build(lines: int) -> str:
    failure = (ROOT / "tests/data/logs/kv_cache_too_small_033_with_estimate.log").read_text().splitlines()
    noise = [f"(APIServer pid=41125) INFO 11-29 06:{i // 60 % 60:02d}:{i % 60:02d} [metrics.py:88] "
             f"Avg prompt throughput: {i % 977}.0 tokens/s, Running: {i % 17} reqs" for i in range(lines)]
    half = (lines - len(failure)) // 2
    return "\n".join(noise[:half] + failure + noise[half: lines - len(failure)]) + "\n"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    text = build(100_000)
    assert classify(text).cls == "kv_cache_too_small"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        classify(text)
        times.append(time.perf_counter() - start)
    print(f"classify a {len(text.splitlines()):,}-line log ({len(text) / 2**20:.1f} MiB): "
          f"median {statistics.median(times) * 1000:.0f} ms over {runs} runs")


if __name__ == "__main__":
    main()
