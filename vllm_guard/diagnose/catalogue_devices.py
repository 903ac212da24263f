"""Where the messages of the accelerators other than NVIDIA's CUDA GPUs come from (TPUs, Gaudis, AWS Neuron cores,
Ascend NPUs, and ROCm's AITER kernels): their runtimes, their plugins and vLLM's code for them. Part of
catalogue.SOURCES, kept apart to keep that file readable."""

from __future__ import annotations

DEVICE_SOURCES: dict[str, str] = {
    "tpu_busy": "the TPU's PJRT client (JAX, torch_xla): 'TPU initialization failed: open(/dev/vfio/0): Device or "
                "resource busy' ('Unable to initialize backend 'tpu'' in JAX); libtpu: 'The TPU is already in use by "
                "process with pid N. Not attempting to load libtpu.so in this process.'",
    "tpu_onchip": "XLA's TPU compiler: 'RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in "
                  "memory space vmem' (or smem): a kernel's scratch memory on the core",
    "hpu_acquire": "Habana's SynapseAI runtime under habana_frameworks.torch.hpu init (synDeviceAcquire): "
                   "'RuntimeError: synStatus=8 [Device not found] Device acquire failed.' and 'synStatus=20 [Device "
                   "already acquired] Device acquire failed.'",
    "neuron_busy": "AWS Neuron runtime (libnrt) nrt_allocate_neuron_cores: 'NeuronCore(s) not available - Requested:N "
                   "Available:0', newer runtimes 'Logical Neuron Core(s) not available - Requested:lncA-lncB "
                   "Available:0 Logical Core size:1 (cores busy, ret=-16)'; a NeuronCore is reserved whole by one "
                   "process until it exits (Neuron Runtime configuration guide)",
    "neuron_oom": "AWS Neuron runtime (libnrt, NRT_RESOURCE = 4) through torch-neuron's _parallel_to_neuron: "
                  "'RuntimeError: nrt_tensor_allocate status=4 message=\"Allocation Failure\"'",
    "acl_capture": "torch_npu NPUGraph.capture_begin (csrc/core/npu/NPUGraph.cpp): 'NPU function error: "
                   "c10_npu::acl::AclmdlRICaptureBegin(capture_stream_, capture_mode), error code is N' with CANN's "
                   "'[Error]: Failed to apply for memory.' after it, in vllm-ascend's ACL graph capture",
    "ascend_no_kv": "vllm-ascend 0.9-0.13 worker/worker_v1.py NPUWorker.determine_available_memory: 'Available "
                    "memory: {available_kv_cache_memory}, total memory: {total_npu_memory}' (bytes, clamped at 0 by "
                    "max(..., 0)), before vLLM's 'No available memory for the cache blocks'",
    "aiter_moe": "ROCm's AITER aiter/fused_moe.py, refusing a MoE kernel combination it has no kernel for: "
                 "'NotImplementedError: a16w4 (bf16 A x MXFP4 W) SiTUv2 is not supported: ...' (v0.1.20), 'MXFP4 "
                 "a4w4 FlyDSL port does not support expert-parallel yet' (v0.1.18-0.1.20), 'CK 2-stage MoE has no "
                 "Swiglu+MXFP4 specialization' (pull request #3565, June 2026, in no release through v0.1.20)",
    "aiter_mla_heads": "vLLM 0.9-0.16 v1/attention/backends/mla/rocm_aiter_mla.py: 'AssertionError: Aiter MLA only "
                       "supports 16 or 128 number of heads. Provided N number of heads. Try adjusting "
                       "tensor_parallel_size value.'",
}
