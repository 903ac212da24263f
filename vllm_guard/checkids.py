"""The preflight's check ids: one home below both the profile (which names them in
``[guard.checks]``) and the checks (which produce them), so neither imports the other for them."""

from __future__ import annotations

CHECK_IDS: tuple[str, ...] = (
    "gpu.present", "gpu.count", "gpu.free_memory", "model.facts", "model.weights_fit", "model.kv_fit",
    "model.max_len", "model.tp_divisible", "gpu.dtype", "gpu.kv_cache_dtype", "gpu.quantization",
    "gpu.p2p", "host.ram", "host.shm", "host.disk", "net.port", "host.nofile", "vllm.executable",
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

# One line each for `vllm-guard checks` (and check --list).
DESCRIPTIONS: dict[str, str] = {
    "gpu.present": "an NVIDIA GPU is visible (or vLLM is a CPU build)",
    "gpu.count": "tensor x pipeline x data parallel is at most the GPUs vLLM will see",
    "gpu.free_memory": "each GPU has gpu-memory-utilization of its memory free, plus a margin",
    "model.facts": "the model's config is known (local path, Hugging Face cache, the Hub, or bundled)",
    "model.weights_fit": "the weights fit in the memory budget of one GPU",
    "model.kv_fit": "the KV cache holds one request of max-model-len (and min-concurrency of them)",
    "model.max_len": "max-model-len is within the model's own maximum",
    "model.tp_divisible": "the attention heads (and KV heads, quantization groups) split over tensor parallel",
    "gpu.dtype": "the dtype runs on the GPU's compute capability (bfloat16 needs 8.0) and with the weight "
                 "quantization (fp8 and the online schemes take 16-bit activations only)",
    "gpu.kv_cache_dtype": "an fp8 KV cache runs on the GPU (native from 8.9)",
    "gpu.quantization": "the weight quantization method runs on the GPU's compute capability",
    "gpu.p2p": "GPU peer-to-peer between every pair of the layout (vLLM's custom all-reduce needs it)",
    "host.ram": "host RAM (or the cgroup limit) holds the weights while they load",
    "host.shm": "/dev/shm is large enough (tensor parallel needs about 200 MiB; Docker gives 64 MiB)",
    "host.disk": "the download directory has room for weights not yet on disk",
    "net.port": "the API port (or socket) is free",
    "host.nofile": "the open-files limit allows many concurrent connections",
    "vllm.executable": "the vLLM executable is found",
    "cluster.node_unreachable": "Ray cluster: every alive node answers the guard's probe task in time",
    "cluster.gpus": "Ray cluster: enough GPUs in total and per node for tensor x pipeline parallel",
    "cluster.versions": "Ray cluster: the same vLLM, torch, Ray and Python on every node",
    "cluster.model_readable": "Ray cluster: every node can read the model (local path or Hugging Face cache)",
    "cluster.free_memory": "Ray cluster: every GPU of the placement has the utilization's memory free",
    "cluster.kv_fit": "Ray cluster: the KV cache for max-model-len fits the per-node budget",
    "cluster.host_ram": "Ray cluster: host RAM on each node holds its share of the weights",
    "cluster.shm": "Ray cluster: /dev/shm on each node is large enough",
    "cluster.network": "Ray cluster: consistent node IPs and interfaces, none on loopback",
    "cluster.env": "Ray cluster: the variables vLLM's workers need reach every node",
}
