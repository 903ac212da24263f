"""Hostile log lines: every pattern of the classifier and the phase tracker stays linear.

Targets (issue 13, item 4): each pathological line under 100 ms through `classify()` and through
the relay's `stage_of()`; a 16-20 MB log of them under 2 s; a single 50 MB line without a newline
and 50 MB of NUL bytes classified quickly, with evidence cut to a sane length and no NUL echoed.

Run: python benchmarks/classify_pathological.py [RUNS]     (exit 1 when a target is missed)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.diagnose import classify as classify_module  # noqa: E402
from vllm_guard.diagnose import markers, rules  # noqa: E402
from vllm_guard.diagnose.classify import classify  # noqa: E402
from vllm_guard.diagnose.markers import stage_of  # noqa: E402


def every_pattern() -> list[object]:
    """Every compiled pattern of the classifier, whatever table it sits in (new rules included)."""
    found: list[object] = []

    def walk(value: object) -> None:
        if hasattr(value, "pattern") and hasattr(value, "search"):
            found.append(value)
        elif hasattr(value, "pattern"):  # a Rule
            walk(value.pattern)
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)

    for module in (classify_module, markers, rules):
        for name in dir(module):
            walk(getattr(module, name))
    return found

K64 = 64 * 1024

# Each line repeats the start of a pattern without its end, the shape that makes a backtracking
# regex quadratic, and carries the prefilter's words so that every rule really runs on it.
LINES: dict[str, str] = {
    "dtype \\S+ (64 KiB of non-space)": "x" * K64 + " is not supported",
    "ANSI OSC without BEL": "\x1b]" * (K64 // 2),
    "Using ... attention backend": "Using " * (K64 // 6),
    "reserved ... memory for KV Cache": "reserved " * (K64 // 9) + "load",
    "NCCL WARN ... /dev/shm": "/dev/shm " + "NCCL WARN " * (K64 // 10),
    "Killed process N (": "Out of memory: Killed process 1 " + "Killed process 1 (" * (K64 // 18),
    "Starting vLLM server on http://": "Starting vLLM server on http://" * (K64 // 31),
    "bind on address ('": "[Errno 98] error while attempting to bind on address ('" * (K64 // 55),
    "FP8 KV cache ... compute capability": "FP8 KV cache is not supported by the x attention backend on " * (K64 // 60),
    "No valid attention backend found": "No valid attention backend found" * (K64 // 32),
    "Bfloat16 ... Your": ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                          * (K64 // 83)),
    "Free memory on device": "Free memory on device " * (K64 // 22),
    "Model architectures [": "Model architectures [" * (K64 // 21),
}


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    failed = False

    def report(name: str, ms: float, target_ms: float) -> None:
        nonlocal failed
        ok = ms < target_ms
        failed |= not ok
        print(f"{'ok ' if ok else 'SLOW'} {ms:9.1f} ms  (target < {target_ms:g} ms)  {name}")

    for name, line in LINES.items():
        report(f"classify: {name}", median_ms(lambda line=line: classify(line), runs), 100)
        report(f"stage_of: {name}", median_ms(lambda line=line: stage_of(line), runs), 100)

    # The patterns on their own, on the whole 64 KiB lines (no length cap): the worst pattern per line.
    patterns = every_pattern()
    for name, line in LINES.items():
        worst, slowest = 0.0, ""
        for pattern in patterns:
            start = time.perf_counter()
            pattern.search(line)  # type: ignore[attr-defined]
            ms = (time.perf_counter() - start) * 1000
            if ms > worst:
                worst, slowest = ms, pattern.pattern[:40]  # type: ignore[attr-defined]
        report(f"worst of {len(patterns)} patterns, uncapped: {name} ({slowest!r})", worst, 100)

    # A 16-20 MB log made of those lines, many times over.
    block = "\n".join(LINES.values()) + "\n"
    big = block * (18 * 2**20 // len(block))
    report(f"a {len(big) / 2**20:.1f} MiB log of pathological lines", median_ms(lambda: classify(big), 3), 2000)

    one = "y" * (50 * 2**20)
    report("a single 50 MiB line without a newline", median_ms(lambda: classify(one), 3), 2000)
    d = classify(one)
    longest = max((len(e) for e in d.evidence), default=0)
    print(f"     evidence: {len(d.evidence)} line(s), the longest {longest:,} characters")
    failed |= longest > 1000

    nul = "\0" * (50 * 2**20)
    report("50 MiB of NUL bytes", median_ms(lambda: classify(nul), 3), 2000)
    d = classify(nul)
    echoed = any("\0" in e for e in d.evidence)
    print(f"     NUL bytes echoed as evidence: {echoed}")
    failed |= echoed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
