"""The memory model against the 27 real start-ups in ../shared (issue 18), with honest thresholds.

The figures and how each version is treated: benchmarks/memory_calibration.py (run it to see the
table). The shared data sits beside the repository; a clone without it skips these tests.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
STARTUPS = ROOT.parent / "shared" / "data" / "real-logs" / "startups"

pytestmark = pytest.mark.skipif(not (STARTUPS / "index.json").is_file(),
                                reason=f"the shared real start-ups are not at {STARTUPS}")


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_calibration", ROOT / "benchmarks" / "memory_calibration.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_startup_is_modelled_or_says_why_not() -> None:
    b = bench()
    rows, skipped = b.calibrate(STARTUPS)
    modelled = {r.file for r in rows}
    assert len(modelled) == 18 and len(skipped) == 9
    assert all(why for why in skipped.values())


@pytest.mark.parametrize(("quantity", "median_pct", "worst_pct"), [
    # Weights per GPU: the parameter count from config.json shapes (exact for dense decoders) in the
    # checkpoint's format; the worst, Qwen2.5-7B-Instruct on vLLM 0.17.0 (-1.3%), loads 0.18 GiB more
    # than the same shapes did on 0.10.1.1 (startups/001, -0.4%).
    # gpt-oss-120b on vLLM 0.10.1.1 (startups/005, 4x A100, MXFP4) is the exception at -11.9%: vLLM loaded
    # 17.22 GiB per GPU, 68.9 GiB in all, for a checkpoint of about 60.7 GiB (the estimate); the MoE kernels on
    # A100 keep the experts padded (2880 -> 3072 each way would add 13.8%), which the model does not know.
    ("weights_gib", 3.0, 12.5),
    # KV bytes per token per GPU: vLLM's formula; the residue is the two-decimal rounding of the GiB.
    ("kv_bytes_per_token", 3.0, 0.5),
    # CUDA-graph memory is an estimate per captured size and layer: it varies 0.2-3.2 GiB across
    # versions and compile modes (startups/014 on 0.22.1: 0.22 GiB; 017 on 0.17.0: 3.19 GiB).
    ("cudagraph_gib", 30.0, 320.0),
    # KV GiB where the source names the GPU, from the card's NVML total as the guard probes it (A100-SXM4-80GB
    # 81920 MiB, H100 80GB HBM3 81559 MiB: profiles/machines). 4 start-ups; worst startups/014 (H100, vLLM
    # 0.22.1) at -5.8%: the graph estimate is 0.68 GiB above the 0.22 GiB it captured, and the default utilization
    # of that version (0.9 here) is not printed; 005 (+5.7%) inherits the weights' -2.05 GiB per GPU.
    ("kv_gib_nvml", 5.0, 6.0),
])
def test_calibration_thresholds(quantity: str, median_pct: float, worst_pct: float) -> None:
    b = bench()
    rows, _ = b.calibrate(STARTUPS)
    s = b.summary(rows, quantity)
    assert s is not None
    _n, median, worst = s
    assert median <= median_pct, (quantity, median)
    assert abs(worst.error_pct) <= worst_pct, (quantity, worst)
