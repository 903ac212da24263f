"""The failure rules about the accelerators a start can have: vLLM's world size against the GPUs it sees,
data-parallel ranks, Ray's placement groups and autoscaler, Kubernetes' scheduler without a free GPU, no GPU at all,
a device index past those visible, heads per GPU a kernel takes, a layer this GPU's platform does not run, and a TPU
another process holds or whose core's on-chip memory a kernel outgrew. Read in their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import bundle_gpus, numbers_of
from vllm_guard.diagnose.markers import BEFORE_START, KV_CACHE, LOADING
from vllm_guard.diagnose.rule import Rule

GPU_COUNT_RULES: tuple[Rule, ...] = (
    # A TPU held by another process: its VFIO group opens busy, as JAX's and torch_xla's PJRT client report it
    # (blind82/b82-002, b82-003: TPU tests run in parallel), or libtpu's lockfile names the process. JAX logs the
    # same words at INFO before it falls back to the CPU: only in a start that never got ready.
    Rule("gpu_busy", re.compile(r"TPU initialization failed: open\(/dev/(?:vfio/\d{1,4}|accel\d{1,4})\): Device or "
                                r"resource busy|The TPU is already in use by process with pid (?P<pid>\d{1,10})"),
         BEFORE_START, detail="tpu_busy", numbers=lambda m: numbers_of(m, "pid"), when=conditions.never_ready,
         source=SOURCES["tpu_busy"]),
    # Habana's runtime acquiring a Gaudi (habana_frameworks' hpu init, synDeviceAcquire): a Gaudi is held whole by
    # one process, so "[Device already acquired]" (synStatus 20) is another's; "[Device not found]" (8) is none free
    # to this process, whether none is in the container or each is held (blind93/b93-002: OPEA's vLLM pod).
    Rule("gpu_busy", re.compile(r"synStatus=20 \[Device already acquired\] Device acquire failed"), BEFORE_START,
         detail="hpu_acquired", when=conditions.never_ready, source=SOURCES["hpu_acquire"]),
    Rule("too_few_gpus", re.compile(r"synStatus=8 \[Device not found\] Device acquire failed"), BEFORE_START,
         detail="hpu_not_found", when=conditions.never_ready, source=SOURCES["hpu_acquire"]),
    # AWS Neuron's runtime reserving the NeuronCores a process asks for (libnrt nrt_allocate_neuron_cores): a core is
    # reserved whole by one process until it exits, so none available is another's (blind179/b179-005: a test's
    # leftover vLLM container on the same Neuron device; newer runtimes add "(cores busy, ret=-16)", EBUSY). Only with
    # "Available:0", on the line or on the next where a paste broke it before the counts: a count short of the request
    # may be too few cores.
    Rule("gpu_busy", re.compile(r"nrt_allocate_neuron_cores\s{1,40}(?:Logical )?Neuron ?Core\(s\) not available"
                                r"(?:\s{0,3}$|\s{0,3}-\s{0,3}Requested:\s?[\w-]{1,40}\s{1,3}Available:0\b)"),
         BEFORE_START, detail="neuron_busy", when=conditions.no_neuron_core_free, source=SOURCES["neuron_busy"]),
    # XLA's TPU compiler out of a core's on-chip memory (vmem, smem) for one of vLLM's kernels: an out-of-memory both
    # real reports label gpu_oom (blind47/b47-010: smem at a 16k context; blind82/b82-001: vmem in the ragged paged
    # attention kernel's precompile), but not HBM's, so no memory setting of vLLM's frees it (rules._OOM reads hbm)
    # (newer XLA codes it: "E1001: CompileTimeScopedVmemOom: Ran out of memory in memory space vmem ..."; JAX raises
    # it as a ValueError through tpu-inference: blind157/b157-012, the TPU image's precompile at 16 tokens)
    Rule("gpu_oom", re.compile(r"(?:RESOURCE_EXHAUSTED: (?:XLA:TPU compile permanent error\. |E\d{4}: \w{1,60}Oom: )?"
                               r"|ValueError: )Ran out of memory in memory space (?P<space>[sv]mem)\b"),
         detail="tpu_onchip",
         source=SOURCES["tpu_onchip"]),
    # Kubernetes' scheduler placing no pod: no node has the GPUs the pod requests free (FailedScheduling, as `kubectl
    # describe pod` and `kubectl get events` print it: framework's FitError "0/N nodes are available: ..." over the
    # noderesources plugin's "Insufficient RESOURCE"; blind79/b79-001: a second vLLM on a node of one GPU)
    Rule("too_few_gpus", re.compile(r"\d{1,6}/(?P<nodes>\d{1,6}) nodes are available: .{0,400}?\b"
                                    r"(?P<short_nodes>\d{1,6}) Insufficient (?:nvidia\.com|amd\.com|habana\.ai|"
                                    r"gpu\.intel\.com)/\w{1,40}"), BEFORE_START, detail="k8s_unschedulable",
         numbers=lambda m: numbers_of(m, "nodes", "short_nodes"), when=conditions.still_pending,
         source=SOURCES["k8s_unschedulable"]),
    # A MoE whose experts are not gated (Nemotron-H's relu2) on a platform vLLM's fused-MoE layer does not run them on
    # (fused_moe/layer.py 0.11-0.20, fused_moe/config.py 0.25-0.34; blind66/b66-003: Intel XPU)
    Rule("unsupported_architecture", re.compile(r"is_act_and_mul=False is supported only for (?:CUDA|ROCm|XPU)"),
         LOADING, detail="moe_act_platform", source=SOURCES["moe_act_platform"]),
    # Data parallelism on Ray: one placement group per DP rank, each of its world size's GPUs, and the cluster
    # could not give them all (v1/engine/utils.py, 0.9-0.34; blind62/b62-001, Ray Serve on T4 nodes)
    # (0.9-0.10 print no count before "DP ranks"; 0.11 passes it as a %s argument, pasted as a tuple)
    Rule("too_few_gpus", re.compile(r"Not enough resources to allocate (?:(?P<dp_size>\d{1,6}|%s) )?(?:placement "
                                    r"groups, only created (?P<created>\d{1,6}) placement groups|DP ranks on DP master "
                                    r"node)"),
         BEFORE_START, detail="dp_placement", numbers=lambda m: numbers_of(m, "dp_size", "created"),
         source=SOURCES["dp_placement"]),
    # ROCm's AITER MLA kernel takes 16 or 128 attention heads per GPU: tensor parallelism that leaves another count
    # (DeepSeek's 128 heads over 4 GPUs: 32; blind61/b61-001)
    Rule("usage_error", re.compile(r"Aiter MLA only supports 16 or 128 number of heads\.(?:\s{0,4}Provided "
                                   r"(?P<heads_per_gpu>\d{1,6}) number of heads)?"), BEFORE_START,
         detail="aiter_mla_heads", numbers=lambda m: numbers_of(m, "heads_per_gpu"), source=SOURCES["aiter_mla_heads"]),
    # V1's worker asserting that the ranks it runs on this node fit the GPUs it sees (0.11-0.33 v1/worker/
    # gpu_worker.py init_device; blind47/b47-006: 16 on a node of 8 under a two-node Ray cluster)
    Rule("too_few_gpus", re.compile(r"local_world_size \((?P<world_size>\d{1,6})\) must be less than or equal to the "
                                    r"number of visible devices \((?P<gpus>\d{1,6})\)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "world_size", "gpus"), source=SOURCES["local_world_size"]),
    Rule("too_few_gpus", re.compile(r"World size \((?P<world_size>\d+)\) is larger than the number of available "
                                    r"GPUs \((?P<gpus>\d+)\)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "world_size", "gpus"), source=SOURCES["world_size"]),
    # 0.11's wording of the same check (blind101/b101-002: TP 16 over two nodes of 8 launched as one)
    Rule("too_few_gpus", re.compile(r"Tensor parallel size \((?P<world_size>\d+)\) cannot be larger than the number of "
                                    r"available GPUs \((?P<gpus>\d+)\)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "world_size", "gpus"), source=SOURCES["world_size"]),
    Rule("too_few_gpus", re.compile(r"DP adjusted local rank \d+ is out of bounds for (?P<gpus>\d+) devices"),
         BEFORE_START, numbers=lambda m: numbers_of(m, "gpus"), source=SOURCES["dp_rank"]),
    # Printed while vLLM waits for its placement group: the wait's cause, named by Ray (a CPU or memory request
    # is not vLLM's GPU bundle).
    Rule("too_few_gpus", re.compile(r"No available node types can fulfill resource requests? \{[^}]{0,500}?'GPU'"),
         BEFORE_START, when=conditions.never_ready, source=SOURCES["ray_infeasible"]),
    # Ray (0.4-0.34; a warning too from 0.11, where vLLM waits for the group): the placement group or the cluster has
    # fewer GPUs than tensor x pipeline parallel; the device is
    # the platform's Ray resource (ray_utils.py device_str: "TPU" on TPUs; blind152/b152-007, a v5p-16 at TP 8)
    Rule("too_few_gpus", re.compile(r"The number of required GPUs exceeds the total "
                                    r"number of available GPUs in the (?:placement group|cluster)"),
         BEFORE_START, when=conditions.raised_or_last,
         source=SOURCES["ray_required_gpus"]),
    # The same on TPUs, Ascend NPUs and Gaudi: what helps is that platform's device count and its own visibility
    # variable, not CUDA_VISIBLE_DEVICES (Intel's XPU platform counts its GPUs as Ray's "GPU": xpu.py ray_device_key)
    Rule("too_few_gpus", re.compile(r"The number of required (?P<device>TPU|NPU|HPU)s exceeds the total "
                                    r"number of available (?P=device)s in the (?:placement group|cluster)"),
         BEFORE_START, detail="ray_accelerators", when=conditions.raised_or_last,
         source=SOURCES["ray_required_gpus"]),
    # Ray: vLLM's driver node (where `vllm serve` runs) must hold a GPU itself (ray_utils.py initialize_ray_cluster).
    # The head alone: the rest (the node's resources) is long and pastes hard-wrap it (blind4/b4-024); vllm-ascend
    # says NPU (its platform's device name, blind4/b4-012), and TPUs TPU (blind152/b152-008).
    Rule("too_few_gpus", re.compile(r"Current node has no (?:GPU|NPU|TPU|HPU|XPU) available\. current_node_resource="),
         BEFORE_START, detail="ray_head_without_gpu",
         source=SOURCES["ray_head_gpu"]),
    # Ray: the placement group never came (vllm/v1/executor/ray_utils.py _wait_until_pg_ready, PG_WAIT_TIMEOUT 1800).
    # 0.11-0.34 say "requiring N GPUs (placement_group_specs=...)" when the group asks for GPUs and "of
    # placement_group_specs=..." otherwise, the only wording before (0.5-0.10); a paste may stop in its last word
    # (blind30/b30-006).
    Rule("too_few_gpus", re.compile(r"Cannot provide a placement group (?:of |requiring [\d.]{1,8} GPUs \()"
                                    r"placement_group_specs=.{0,4000}? within (?P<timeout_s>\d+) secon"), BEFORE_START,
         numbers=lambda m: {**numbers_of(m, "timeout_s"), **bundle_gpus(m.group(0))},
         source=SOURCES["ray_pg_timeout"]),
    # Ray Serve (serve/_private/deployment_state.py): a replica that asks for a GPU the cluster does not have waits
    # unscheduled ("... taken more than 30s to be scheduled ... total resources available: {...}" without a GPU).
    Rule("too_few_gpus", re.compile(r"taken more than \d{1,6}s to be scheduled\.[^\[]{0,2000}Resources required for "
                                    r"each replica: \[(?=[^\]]{0,2000}\bGPU\b)[^\]]{0,2000}\], total resources "
                                    r"available: \{(?![^}]{0,2000}\bGPU\b)[^}]{0,2000}\}"), BEFORE_START,
         when=conditions.never_ready, source=SOURCES["ray_serve_unscheduled"]),
    # The same on the V0 Ray executor (vllm/executor/ray_distributed_executor.py _init_workers_ray, 0.6-0.10;
    # ray_gpu_executor.py before): "Ray does not allocate any GPUs on the driver node" (vllm #12983).
    Rule("too_few_gpus", re.compile(r"Ray does not allocate any GPUs on the driver node"), BEFORE_START,
         detail="ray_head_without_gpu", source=SOURCES["ray_driver_gpu"]),
    # vLLM 0.4-0.10 executor/ray_utils.py _verify_bundles: the placement group has no GPU bundle on the node the
    # driver runs on ("driver node id X is not included in a placement group ... You don't have enough GPUs available
    # in a current node."; blind35/b35-002, GPUStack over two nodes)
    Rule("too_few_gpus", re.compile(r"driver node id \w{1,64} is not included in a placement group"), BEFORE_START,
         detail="ray_head_without_gpu", source=SOURCES["ray_driver_bundle"]),
    # Ray's own check of a bundle index (ray/util/placement_group.py, check_placement_group_index): vLLM's
    # workers asked for more bundles than the placement group has (OpenRLHF #728).
    Rule("too_few_gpus", re.compile(r"placement group bundle index (?P<bundle_index>\d+) is invalid\. Valid "
                                    r"placement group indexes: 0-(?P<last_index>\d+)"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "bundle_index", "last_index"), source=SOURCES["ray_bundle"]),
    # The exception itself only: a warning may quote it and go on on another device ("RuntimeError('No CUDA GPUs
    # are available'), using CPU").
    Rule("too_few_gpus", re.compile(r"(?:^|\] )(?:[A-Za-z_][\w.]{0,100}\.)?RuntimeError: No CUDA GPUs are available"),
         BEFORE_START, detail="no_gpu", source=SOURCES["no_gpu"]),
    # A device index the process cannot see: tensor parallel (mp backend, one rank per local GPU) or --device past
    # CUDA_VISIBLE_DEVICES (torch.cuda.set_device, cudaErrorInvalidDevice; torch 2.8+ raises it as AcceleratorError).
    Rule("too_few_gpus", re.compile(r"Error: (?:CUDA|HIP) error: invalid device ordinal"
                                    # PyTorch's own check of the index (ATen/cuda/CUDAContext.cpp, 2.x)
                                    r"|device >= 0 && device < num_gpus INTERNAL ASSERT FAILED"
                                    # Ascend's CANN runtime for the same (vllm-ascend, torch_npu's set_device)
                                    r"|rtSetDevice execute failed, reason=\[device id error\]"
                                    # ... and CANN 8.x's wording of it (blind169/b169-007: NPU 1 with one visible)
                                    r"|Failed to set visible device\. The invalid device is \d"), BEFORE_START,
         source=SOURCES["device_ordinal"]),
)

# Rebellions NPUs (the vllm-rbln plugin): the runtime's own out-of-memory errors, which the plugin's worker
# (vllm_rbln/v1/worker/rbln_worker.py compile_or_warm_up_model, is_rbln_oom_error) knows by these two names, and its
# words for them when they end the compile of the warm-up: the KV cache blocks it allocated do not fit beside the
# compiled model (blind113/b113-006, b113-007: MiniMax-M2.5 with max-model-len 196608 in 24 blocks of 8192).
# The runtime's error is kept aside, never placed by the progress lines: the plugin raises its own words from it
# (`raise ... from e`), so they follow it in the log, and a placed OOM would have the ladder change a GPU setting
# (enforce-eager skips the plugin's compile altogether).
ACCELERATOR_MEMORY_RULES: tuple[Rule, ...] = (
    # torch's device out-of-memory exception named, its message cut off: a paste that stops at the type, or IPython's
    # header, which names the class above the frames ("OutOfMemoryError      Traceback (most recent call last)";
    # blind127/b127-005, the message at the end not pasted). torch.OutOfMemoryError (2.5+; torch.cuda's before) is
    # raised by the device allocators alone (c10/cuda/CUDACachingAllocator.cpp, XPU's, MPS'): an OOM, resolved by
    # stage like the message itself. Not a line that quotes the name ("except torch.OutOfMemoryError:" in source),
    # nor one whose full message the paste has further down (IPython's traceback ends with it; Ray's
    # OutOfMemoryError, the host's memory, has the same short name).
    Rule("oom", re.compile(r"(?:^|\] )(?:torch\.(?:cuda\.)?)?OutOfMemoryError(?::?\s{0,20}$|\s{2,200}Traceback "
                           r"\(most recent call last\))"), when=conditions.no_fuller_oom_after,
         source=SOURCES["torch_oom"]),
    Rule("no_kv_memory", re.compile(r"Not enough memory for (?P<num_blocks>\d{1,9}) blocks of KV cache\."), KV_CACHE,
         detail="rbln_blocks", numbers=lambda m: numbers_of(m, "num_blocks"), source=SOURCES["rbln_blocks"]),
    Rule("gpu_oom", re.compile(r"SYS_EBUSY: Lack of device memory|SYS_ENOMEM: Out of memory"), warning=True,
         detail="rbln_oom", source=SOURCES["rbln_oom"]),
)
