"""Wall time of `vllm-guard check` on a three-node Ray test cluster, a fresh guard process each run, as a user runs
it on the head: import, connect to Ray, one pinned probe task per node, checks, report.

Target (issue 17): under 5 s with per-node findings and the placement. The cluster is the tests' one
(tests/ray_nodes.py: three Ray nodes on this machine, two declared GPUs each, each with its own facts).
Run: python benchmarks/cluster_check.py [RUNS]   (needs ray: pip install '.[ray]')
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.ray_nodes import ClusterRig  # noqa: E402


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        rig = ClusterRig(Path(tmp) / "cluster", [2, 2, 2])
        up = time.perf_counter() - started
        try:
            profile = Path(tmp) / "p.toml"
            profile.write_text(f'[model]\nid = "{ROOT / "tests/data/models/llama-3.1-8b"}"\n[vllm]\n'
                               'tensor-parallel-size = 2\npipeline-parallel-size = 3\n'
                               'distributed-executor-backend = "ray"\n')
            env = {**os.environ, "RAY_ADDRESS": rig.address, "HF_HUB_OFFLINE": "1"}
            times, codes = [], set()
            for _ in range(runs):
                t = time.perf_counter()
                r = subprocess.run([sys.executable, "-m", "vllm_guard", "check", str(profile)], env=env,
                                   capture_output=True, text=True, check=False)
                times.append(time.perf_counter() - t)
                codes.add(r.returncode)
                assert "placement: tensor 2 x pipeline 3" in r.stdout, r.stdout + r.stderr
        finally:
            rig.shutdown()
    print(f"three-node test cluster up in {up:.1f} s")
    print(f"vllm-guard check on it, {runs} runs: median {statistics.median(times):.2f} s, min {min(times):.2f} s, "
          f"max {max(times):.2f} s (exit codes {sorted(codes)}; 4 only for the missing vLLM executable here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
