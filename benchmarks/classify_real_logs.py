"""The classifier over the shared real start-up failures (../shared/data/real-logs/failures): accuracy,
confident errors (a class other than the label and other than `unknown`) and per-class results.

The logs are what users pasted into public issue reports; index.json labels each one. The successful
start-ups in ../shared/data/real-logs/startups are read too: a success must never get a failure class.

Run: python benchmarks/classify_real_logs.py [SHARED_DIR]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vllm_guard.diagnose.classify import classify  # noqa: E402

SHARED = ROOT.parent / "shared"


@dataclass(frozen=True)
class Result:
    file: str
    label: str
    got: str
    stage: str

    @property
    def right(self) -> bool:
        return self.got == self.label

    @property
    def confident_error(self) -> bool:
        return not self.right and self.got != "unknown"


def evaluate(shared: Path = SHARED) -> tuple[list[Result], list[Result]]:
    """(failures, start-ups): each log classified as `vllm-guard explain FILE` does."""
    failures = []
    base = shared / "data/real-logs/failures"
    for entry in json.loads((base / "index.json").read_text()):
        d = classify((base / entry["file"]).read_text(errors="replace"))
        failures.append(Result(entry["file"], entry["class"], d.cls, d.stage))
    startups = []
    base = shared / "data/real-logs/startups"
    for path in sorted(base.glob("*.log")):
        d = classify(path.read_text(errors="replace"))
        startups.append(Result(path.name, "unknown", d.cls, d.stage))
    return sorted(failures, key=lambda r: r.file), startups


def main() -> int:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    failures, startups = evaluate(shared)
    right = sum(r.right for r in failures)
    wrong = [r for r in failures if r.confident_error]
    print(f"real failures: {right} of {len(failures)} right ({right / len(failures):.1%}), "
          f"{len(wrong)} confident error(s), {sum(r.got == 'unknown' and not r.right for r in failures)} unknown")
    labels = Counter(r.label for r in failures)
    print(f"{'class':26} {'right':>5} {'of':>3}  misses")
    for label in sorted(labels):
        rows = [r for r in failures if r.label == label]
        misses = ", ".join(f"{r.file} -> {r.got}" for r in rows if not r.right)
        print(f"{label:26} {sum(r.right for r in rows):>5} {len(rows):>3}  {misses}")
    bad = [r for r in startups if r.got != "unknown"]
    print(f"successful start-ups: {len(startups) - len(bad)} of {len(startups)} without a failure class"
          + "".join(f"\n  {r.file} -> {r.got}" for r in bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
