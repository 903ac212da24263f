"""The memory model against the 27 real start-ups in tests/data/real-logs (issue 18), with honest thresholds.

The figures and how each version is treated: benchmarks/memory_calibration.py (run it to see the
table). The start-ups are a copy of the team's shared set, kept in the repository so that a clone runs these.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
STARTUPS = ROOT / "tests" / "data" / "real-logs" / "startups"

pytestmark = pytest.mark.skipif(not (STARTUPS / "index.json").is_file(),
                                reason=f"the real start-ups are not at {STARTUPS}")


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
    # 17.22 GiB per GPU for a checkpoint of 60.7 GiB (15.17 per GPU). The log names the cause: "Your GPU does not
    # have native support for FP4 ... leveraging the Marlin kernel" (line 79, A100 = SM80), and vLLM's Marlin MXFP4
    # path pads each expert to intermediate-per-GPU 128-aligned and hidden 256-aligned (vLLM 0.32
    # fused_moe/oracle/mxfp4.py:851-852): 720 -> 768 and 2880 -> 3072 at TP=4 gives 17.13 GiB per GPU (-0.6%).
    # Not modelled yet: the padding depends on the MoE backend vLLM picks per GPU, and ModelFacts has no expert count.
    ("weights_gib", 3.0, 12.5),
    # KV bytes per token per GPU: vLLM's formula; the residue is the two-decimal rounding of the GiB.
    ("kv_bytes_per_token", 3.0, 0.5),
    # CUDA-graph memory: a fixed 0.05 GiB plus 2.3e-4 GiB per captured size and layer (a quarter of that for a full
    # decode graph), x1.25 with tensor parallel (memory.py says which logs set each part), fed each log's own capture
    # sizes and graph mode: median 6.5% over 15 figures. The worst, startups/017 (-86%), ran on ROCm (its log's
    # first line); it and the other figures under by more than 15% are explained from their logs in the
    # benchmark's WHY (Ray across nodes, a forced legacy AWQ kernel): see the test below for the rest.
    ("cudagraph_gib", 8.0, 90.0),
    # KV GiB where the source names the GPU, from the card's NVML total as the guard probes it (A100-SXM4-80GB
    # 81920 MiB, H100 80GB HBM3 81559 MiB: profiles/machines), with the settings the log itself prints where the
    # index has none (startups/014, vLLM 0.22.1: utilization 0.92, max_num_seqs 64, max_num_batched_tokens 8192):
    # 4 start-ups, median 2.2%; worst startups/005 (+5.7%), which inherits the weights' Marlin padding above
    # (2.05 GiB per GPU). Without 005 the worst is +2.5% (001).
    ("kv_gib_nvml", 3.0, 6.0),
])
def test_calibration_thresholds(quantity: str, median_pct: float, worst_pct: float) -> None:
    b = bench()
    rows, _ = b.calibrate(STARTUPS)
    s = b.summary(rows, quantity)
    assert s is not None
    _n, median, worst = s
    assert median <= median_pct, (quantity, median)
    assert abs(worst.error_pct) <= worst_pct, (quantity, worst)


def test_cudagraph_figures_the_logs_do_not_explain_are_within_15_percent() -> None:
    # Every figure not named in the benchmark's WHY (10 single-node NVIDIA start-ups, vLLM 0.8.3-0.19.1) is within
    # 15% (worst 007, +12.8%); memory.CUDAGRAPH_ERROR_FRACTION rests on it. Of the five WHY names, 014 (vLLM 0.22.1,
    # +32%) is over, the safe side; the other four are under, each for a reason its log shows.
    b = bench()
    rows, _ = b.calibrate(STARTUPS)
    graphs = [r for r in rows if r.quantity == "cudagraph_gib"]
    rest = [r for r in graphs if (r.file, r.quantity) not in b.WHY]
    assert len(graphs) == 15 and len(rest) == 10
    assert max(abs(r.error_pct) for r in rest) <= 15, rest
