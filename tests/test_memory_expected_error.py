"""The predicted KV cache carries its expected error, and max-model-len "auto" stays below it (issue 18)."""

from __future__ import annotations

from vllm_guard.facts.machine import Gpu
from vllm_guard.preflight import memory, memory_params
from vllm_guard.probes.model import probe_model

GIB = 2**30


def l4() -> Gpu:
    # The seed log's card: total_gpu_memory (23.64GiB) (domain.md).
    return Gpu(index=0, uuid="", name="NVIDIA L4", pci_bus_id=None, memory_total_bytes=int(23.64 * GIB),
               memory_used_bytes=None, memory_free_bytes=None, compute_capability=(8, 9), mig_enabled=None,
               processes=None)


def llama() -> memory.ModelFacts:
    return probe_model("meta-llama/Llama-3.1-8B-Instruct", revision=None, environ={"HF_HUB_OFFLINE": "1"},
                       cache_dir="/nonexistent")


def test_the_kv_estimate_has_an_expected_error() -> None:
    e = memory.estimate(llama(), l4(), memory_params.Params(utilization=0.9, max_model_len=8192))
    assert e.kv_expected_error_bytes is not None and e.weights_bytes_per_gpu is not None
    # 1.5% of 14.96 GiB of weights plus 15% of the graph estimate: a few hundred MiB.
    assert 0.2 * GIB < e.kv_expected_error_bytes < 0.6 * GIB
    assert e.to_dict()["kv_expected_error_bytes"] == e.kv_expected_error_bytes


def test_auto_stays_on_the_safe_side_of_the_expected_error() -> None:
    e = memory.estimate(llama(), l4(), memory_params.Params(utilization=0.9, max_model_len=-1))
    assert e.max_model_len is not None and e.max_fitting_model_len is not None and e.kv_budget_bytes is not None
    assert e.max_model_len < e.max_fitting_model_len
    need = e.kv_needed_bytes(llama(), memory_params.Params(utilization=0.9, max_model_len=-1), e.max_model_len)
    assert need is not None and e.kv_expected_error_bytes is not None
    assert need <= e.kv_budget_bytes - e.kv_expected_error_bytes


def test_a_fixed_kv_cache_has_no_estimation_error() -> None:
    e = memory.estimate(llama(), l4(), memory_params.Params(kv_cache_memory_bytes=4 * GIB, max_model_len=8192))
    assert e.kv_expected_error_bytes is None
