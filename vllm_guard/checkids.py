"""The preflight's check ids: one home below both the profile (which names them in
``[guard.checks]``) and the checks (which produce them), so neither imports the other for them."""

from __future__ import annotations

CHECK_IDS: tuple[str, ...] = (
    "gpu.present", "gpu.count", "gpu.free_memory", "model.facts", "model.weights_fit", "model.kv_fit",
    "model.max_len", "model.tp_divisible", "gpu.dtype", "gpu.kv_cache_dtype", "gpu.quantization",
    "host.ram", "host.shm", "host.disk", "net.port", "host.nofile", "vllm.executable",
)
# Checks that judge a GPU: skipped when there is none, or when vLLM is a CPU build.
GPU_DEPENDENT: tuple[str, ...] = ("gpu.count", "gpu.free_memory", "model.weights_fit", "model.kv_fit", "gpu.dtype",
                                  "gpu.kv_cache_dtype", "gpu.quantization")
# A Ray cluster's checks (vllm_guard/cluster/checks.py): each failure names the node.
CLUSTER_CHECK_IDS: tuple[str, ...] = (
    "cluster.node_unreachable", "cluster.gpus", "cluster.versions", "cluster.model_readable", "cluster.free_memory",
    "cluster.kv_fit", "cluster.host_ram", "cluster.shm", "cluster.network", "cluster.env",
)
ALL_CHECK_IDS: tuple[str, ...] = CHECK_IDS + CLUSTER_CHECK_IDS
