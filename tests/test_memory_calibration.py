"""The memory model against the real start-ups in tests/data/real-logs/startups (issues 18 and 27), with the
thresholds the figures support today and the issue's bars.

benchmarks/memory_calibration.py prints every figure, the medians by family and the reason for each worst case
(WHY, read from its own log). The start-ups are kept in the repository so that a clone runs these.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
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


@pytest.fixture(scope="module")
def calibration() -> tuple[ModuleType, list, dict]:
    b = bench()
    rows, skipped = b.calibrate(STARTUPS)
    return b, rows, skipped


def test_every_startup_is_modelled_or_says_why_not(calibration: tuple[ModuleType, list, dict]) -> None:
    _, rows, skipped = calibration
    modelled = {r.file for r in rows}
    assert not modelled & set(skipped)
    assert all(why and why != "not matched to a bundled model" for why in skipped.values()), skipped
    # of 93: 48 of 69 when issue 27's start-ups came in, 58 with the configs found since, 75 of 93 with the 24
    # start-ups and 4 configs of 2026-12-02, 77 with gemma-3-1b-it's config (2026-12-03), 82 with DiffusionGemma's
    # and Qwen3-VL-Embedding-2B's aliases (2026-12-06)
    assert len(modelled) >= 82


@pytest.mark.parametrize("log", ["101-diffusiongemma-26b-a4b-it.log", "113-diffusiongemma-26b-a4b-it.log",
                                 "123-diffusiongemma-26b-a4b-it-nvfp4.log", "124-diffusiongemma-26b-a4b-it-nvfp4.log",
                                 "054-qwen3-vl-embedding-2b.log"])
def test_an_alias_holds_its_bases_kv_cache(calibration: tuple[ModuleType, list, dict], log: str) -> None:
    # the evidence that an alias has its base's shapes: the KV bytes a token its log printed (101: chunked prefill
    # off, so each sliding layer keeps the whole 4,096-token length)
    _, rows, _ = calibration
    kv = [r for r in rows if r.file == log and r.quantity == "kv_bytes_per_token"]
    assert len(kv) == 1 and abs(kv[0].error_pct) < 0.5, kv


def test_issue_27_medians_are_within_the_bars(calibration: tuple[ModuleType, list, dict]) -> None:
    # Issue 27's set: the start-ups of vLLM 0.8 or later that print weights, KV GiB and tokens (in_issue_set).
    b, rows, _ = calibration
    index = json.loads((STARTUPS / "index.json").read_text())
    wanted = {e["file"] for e in index if b.in_issue_set(e)}
    assert len(wanted) >= 60
    for key, bar in b.DONE_WHEN.items():
        mine = [abs(r.error_pct) for r in rows if r.quantity in key.split("+") and r.file in wanted]
        assert len(mine) >= 10, key
        assert statistics.median(mine) <= bar, (key, statistics.median(mine))


@pytest.mark.parametrize(("quantity", "median_pct", "worst_pct"), [
    # Weights per GPU: the parameters by part from config.json in the checkpoint's format. The worst are the
    # checkpoints whose quantization_config was not found (065 -17.4%, 069 -13.5%, 032 -7.2%) and two MXFP4 loads
    # above the checkpoint (005 -11.9%, Marlin's padding on an A100; 045 -6.6% on a GB10): each in the benchmark's
    # WHY.
    ("weights_gib", 1.5, 18.0),
    # KV bytes per token: vLLM's formula, with the version's meaning of its token count for sliding-window and
    # hybrid models (reported_per_token); the worst is gemma-4-26B-A4B (066, -1.5%), its window rounding.
    ("kv_bytes_per_token", 0.5, 1.6),
    # KV GiB where the log prints vLLM's own total ("Free memory on device (x/y GiB)", V0's total_gpu_memory): 7
    # figures, median 4.0%. The worst, 038 (+25%, V0 0.8.2, gemma-3-27b on 8 T4s), is the multimodal profile run
    # its log measures at 1.66 GiB of activation peak on a 3.88 GiB KV cache; then 081 (+8%) and 031 (+6.6%), the
    # sampler warm-ups their logs measure (1.72 and 5.59 GiB of peak activation).
    ("kv_gib", 5.0, 26.0),
    # KV GiB from the named card's NVML total, as the guard probes it; the worst, 042 (+14.1%, TP 8 with expert
    # parallel), leaves 8.3 GiB of non-KV memory per GPU that its log does not split.
    ("kv_gib_nvml", 3.0, 15.0),
    # The longest max-model-len one request could have (full-attention models with a known total): KV tokens.
    ("longest_len", 2.0, 7.0),
    # The block size a hybrid model forces: vLLM's own line, exactly.
    ("attention_block_size", 0.0, 0.0),
])
def test_calibration_thresholds(calibration: tuple[ModuleType, list, dict], quantity: str, median_pct: float,
                                worst_pct: float) -> None:
    b, rows, _ = calibration
    s = b.summary(rows, quantity)
    assert s is not None
    _n, median, worst = s
    assert median <= median_pct, (quantity, median)
    assert abs(worst.error_pct) <= worst_pct, (quantity, worst)


def test_cudagraph_error_fraction_rests_on_the_single_node_cuda_figures(
        calibration: tuple[ModuleType, list, dict]) -> None:
    # memory.CUDAGRAPH_ERROR_FRACTION is the 80th percentile of |error| over the "Graph capturing finished ...
    # took X GiB" figures of single-node CUDA start-ups (ROCm 017 and 053, Ray across nodes 004 and 005, and the
    # negative figures 046/047 print are left out: their logs say why; so is DiffusionGemma, 113, whose graphs
    # are captured for its 256-token denoising canvases, which the CUDA-graph term does not model; and the three
    # Laguna DFlash start-ups on one DGX Spark, 067, 121 and 122, whose identical capture sizes "took" 0.11, 1.02
    # and 0.09 GiB against vLLM's own estimate of 0.86-0.93 GiB each time: there the figure measures no graphs).
    from vllm_guard.preflight import memory
    _, rows, _ = calibration
    graphs = sorted(abs(r.error_pct) for r in rows if r.quantity == "cudagraph_gib" and r.reported > 0
                    and r.file[:3] not in ("017", "053", "004", "005", "113", "067", "121", "122"))
    assert len(graphs) >= 30
    p80 = graphs[int(0.8 * len(graphs))]
    assert p80 <= memory.CUDAGRAPH_ERROR_FRACTION * 100, p80
