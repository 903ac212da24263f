"""`explain` on blind110 and blind111 (tests/data/real-logs/blind110, blind111), two blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier: blind110 scored once at 3420914 (3 of 5, one confident error,
a label in dispute: Triton's fp8e4nv refusal, read dtype_unsupported as two earlier sets label it), blind111 at
933fdb7 (14 of 15, none). What their misses taught, each read from the source that writes the message: vLLM's KV
cache planner refusing layers whose page sizes it cannot make one, and Marlin's own tile check as it repacks weights.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_settings import KV_PAGE_PADDING, KV_PAGE_SIZE
from vllm_guard.diagnose.knowledge import Advice
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


@pytest.mark.parametrize(("message", "detail", "advice", "newer"), [
    # 0.13-0.20 (the paste flattened a worker's three lines into one: blind110/b110-001, Gemma 4 with an int8
    # per-token-head KV cache dtype): a newer vLLM, which pads attention pages, may help
    ("NotImplementedError: The page size of the layer is not divisible by the maximum page size. Cannot unify by "
     "adjusting block_size.", "kv_page_size", KV_PAGE_SIZE, True),
    # 0.30-0.34 (vLLM 0.34 v1/core/kv_cache_planning.py): it pads only non-MLA attention pages, so a newer vLLM is no
    # advice for the layer it names (a review's finding: blind21/b21-012, a sparse indexer's cache)
    ("NotImplementedError: Layer model.layers.3.self_attn.attn: page size is not divisible by the maximum page size "
     "and cannot be padded. Padding is only supported for non-MLA attention layers.", "kv_page_padding",
     KV_PAGE_PADDING, False),
])
def test_layers_whose_kv_pages_cannot_be_made_one_size(message: str, detail: str, advice: Advice,
                                                        newer: bool) -> None:
    d = classify("(EngineCore_DP0 pid=7) ERROR 04-19 14:16:08 [core.py:1] EngineCore failed to start.\n"
                 f"(EngineCore_DP0 pid=7) ERROR 04-19 14:16:08 [core.py:1] {message}\n")
    assert (d.cls, d.detail, d.stage) == ("unsupported_architecture", detail, "kv_cache")
    assert advice_for(d) is advice
    assert any("newer vLLM" in h for h in advice.helps) is newer
    stop = next_step(d, Settings(max_model_len=8192))
    assert isinstance(stop, Stop) and ("newer vLLM" in stop.reason) is newer


def test_the_flattened_paste_of_blind110() -> None:
    d = classify(blind_log("blind110", "b110-001"))
    assert (d.cls, d.detail) == ("unsupported_architecture", "kv_page_size")


def test_marlins_tile_check_as_it_repacks_the_weights() -> None:
    # blind111/b111-001: GLM-4.5V's 'RuntimeError: size_n = 2736 is not divisible by tile_n_size = 64', one line
    d = classify(blind_log("blind111", "b111-001"))
    assert (d.cls, d.detail, d.numbers) == ("tp_indivisible", "marlin_tile", {"size": 2736, "tile": 64})
    assert isinstance(next_step(d, Settings(max_model_len=8192)), Stop)
    # an FP8 checkpoint on GPUs without FP8 reaches the repack too (marlin_utils_fp8.py): vLLM's GPTQ advice for
    # Marlin's shape check is not this one's (a review's finding)
    assert not any("--quantization gptq" in h for h in advice_for(d).helps)


def test_what_blind110_and_blind111_read_right_at_their_score() -> None:
    assert [classify(blind_log("blind110", p)).cls for p in ("b110-002", "b110-004", "b110-005")] == \
        ["version_mismatch", "kv_cache_too_small", "kv_cache_too_small"]
    assert classify(blind_log("blind111", "b111-003")).cls == "dtype_unsupported"


@pytest.mark.parametrize(("backend", "gpu", "capability"), [
    ("Triton attention", "NVIDIA A100-SXM4-80GB", 8.0),
    # the MLA backend's own words went unread until this session checked every rule against its source
    ("Triton MLA", "Tesla V100-SXM2-32GB", 7.0),
])
def test_an_fp8_kv_cache_refused_by_either_triton_backend(backend: str, gpu: str, capability: float) -> None:
    # vLLM 0.30-0.34 v1/attention/backends/triton_attn.py and mla/triton_mla.py, as the backend is built
    d = classify(f"ValueError: FP8 KV cache is not supported by the {backend} backend on {gpu} (compute capability "
                 f"{capability}); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16.\n")
    assert (d.cls, d.detail, d.numbers) == ("quant_unsupported", "kv_cache_dtype", {"current_capability": capability})


def test_the_cpu_builds_node_memory_check_at_start_up() -> None:
    # vLLM 0.30-0.32 v1/worker/cpu_worker.py init_device, filled in as its f-string writes it (no rule had a test)
    d = classify("ValueError: Available memory on node 0 (12.5/31.2 GiB) on startup is less than desired CPU memory "
                 "utilization (0.9, 28.08 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the "
                 "fraction of CPU memory reserved (despite its name). To resolve: decrease `--gpu-memory-utilization` "
                 "(e.g. `--gpu-memory-utilization 0.5`) or reduce CPU memory used by other processes.\n")
    assert (d.cls, d.detail) == ("gpu_busy", "cpu_node_memory")
    assert {k: d.numbers[k] for k in ("free_gib", "total_gib", "requested_gib")} == \
        {"free_gib": 12.5, "total_gib": 31.2, "requested_gib": 28.08}
