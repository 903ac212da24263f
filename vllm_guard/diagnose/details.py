"""What helps for a reading within a failure class (a Diagnosis's detail: a bare SIGKILL, a config.json missing, a
program written for another vLLM release), and the advice a diagnosis gets."""

from __future__ import annotations

from vllm_guard.diagnose.details_build import BUILD_ADVICE
from vllm_guard.diagnose.details_containers import CONTAINER_ADVICE
from vllm_guard.diagnose.details_files import FILE_ADVICE
from vllm_guard.diagnose.details_network import NETWORK_ADVICE
from vllm_guard.diagnose.details_platforms import PLATFORM_ADVICE
from vllm_guard.diagnose.details_quant import QUANT_ADVICE
from vllm_guard.diagnose.details_settings import SETTINGS_ADVICE
from vllm_guard.diagnose.details_versions import VERSION_ADVICE
from vllm_guard.diagnose.diagnosis import Diagnosis
from vllm_guard.diagnose.knowledge import ADVICE, HANG_ADVICE, NO_ERROR, Advice, as_started

PROFILING_ASSERTION = Advice(
    "vLLM's memory profiler saw free memory grow during profiling: another process on the same GPU released "
    "memory while vLLM measured. It is not a lack of memory.",
    ("start again unchanged, when the other process is steady", "give vLLM a GPU of its own"),
    ("lowering --gpu-memory-utilization",),
)

KILLED = Advice(
    "vLLM was killed by SIGKILL (exit 137 or -9), and nothing in the log says by whom: the host's or the "
    "container's OOM killer (most likely while the weights are read through host memory), `docker kill`, a "
    "watchdog or a person. The kernel says which: `dmesg | grep -i 'killed process'` or `journalctl -k`.",
    ("if the kernel logged 'Out of memory: Killed process': host RAM (and the cgroup limit) of at least 2x the "
     "weight size, or swap", "if a watchdog or a start-up timeout killed it: a longer timeout for large models"),
    ("guessing a vLLM flag before knowing who sent the signal",),
)

# Advice for a reading within a class (Diagnosis.detail) that says more than the class's own.
RAY_HEAD_WITHOUT_GPU = Advice(
    "On Ray, vLLM's driver runs where `vllm serve` runs, and vLLM (ray_utils.py) wants a device on that node for its "
    "first worker (a GPU, or the platform's: TPU, NPU): this node has none that Ray can schedule.",
    ("run `vllm serve` (or `vllm-guard serve`) on a node with a device, joined to the cluster",
     "check `ray status`: the node's device may be held by another job"),
    ("adding devices to the other nodes",),
)
# Ray counts a platform's own resource (vLLM's ray_device_key): vLLM's TPU platform, vllm-ascend's NPU, Gaudi's HPU
# (Intel's XPU platform says GPU).
RAY_ACCELERATORS = Advice(
    "tensor x pipeline parallel needs more of this platform's devices than Ray's cluster or placement group has: "
    "Ray counts them as the platform's own resource (TPU, NPU, HPU), not as GPUs.",
    ("a smaller --tensor-parallel-size or --pipeline-parallel-size",
     "`ray status` lists each node's devices; on a TPU slice each host offers only its own chips",
     "the platform's visibility variable, which vLLM reads instead of CUDA_VISIBLE_DEVICES: TPU_VISIBLE_CHIPS, "
     "ASCEND_RT_VISIBLE_DEVICES (vllm-ascend), HABANA_VISIBLE_MODULES (Gaudi)"),
    ("waiting longer for the placement group", "setting CUDA_VISIBLE_DEVICES"),
)


EXCLUSIVE_GPU = Advice(
    "The GPU is in Exclusive Process compute mode and another process already holds it, or it is unavailable.",
    ("`nvidia-smi -q -d COMPUTE` shows the mode, `nvidia-smi` who holds the GPU", "wait for the other process",
     "another GPU (CUDA_VISIBLE_DEVICES)"), ("lowering --gpu-memory-utilization",),
)
MODEL_DTYPE = Advice(
    "This model type refuses the dtype asked for (vLLM lists gemma2, gemma3 and a few others as numerically "
    "unstable in float16).",
    ("--dtype bfloat16 (compute capability 8.0 or newer)", "--dtype float32 on older GPUs, at twice the memory"),
    ("retrying unchanged",),
)

PP_LAYERS = Advice(
    "This vLLM splits the model's layers evenly across pipeline stages, and the layer count is not divisible by "
    "--pipeline-parallel-size.",
    ("a --pipeline-parallel-size that divides the layer count", "tensor parallelism instead, where the heads allow",
     "a newer vLLM, which splits layers unevenly (VLLM_PP_LAYER_PARTITION)"), ("retrying unchanged",),
)
BATCHED_TOKENS = Advice(
    "vLLM's scheduler refuses --max-num-batched-tokens: with chunked prefill off it must hold a whole prompt "
    "(at least --max-model-len), and it must be at least --max-num-seqs.",
    ("--max-num-batched-tokens at least the max-model-len (and max-num-seqs) it names",
     "or --enable-chunked-prefill, or a smaller --max-model-len"), ("retrying unchanged",),
)
MM_BUDGET = Advice(
    "A multimodal model's single image (or audio, video) item needs more tokens than --max-num-batched-tokens, and "
    "this model cannot split an item across steps.",
    ("--max-num-batched-tokens at least the max_tokens_per_mm_item it names",
     "or fewer items per prompt with --limit-mm-per-prompt"), ("retrying unchanged",),
)
TOOL_PARSER = Advice(
    "--enable-auto-tool-choice needs a --tool-call-parser this vLLM has (and --reasoning-parser must name one it "
    "has): the API server refused its options before loading the model.",
    ("--tool-call-parser with a parser the error lists (the model card names the right one)",
     "drop --enable-auto-tool-choice if the model does not call tools",
     "a parser of your own: --tool-parser-plugin or --reasoning-parser-plugin with its file, given to every vLLM "
     "process that reads the option (each node of a multi-node start)"), ("retrying unchanged",),
)
RANKS_MISSING = Advice(
    "The first rank's rendezvous store waited and only some of the ranks connected: the others never arrived. On "
    "one machine they are this start's own processes (data- or tensor-parallel ranks) that failed or hung before "
    "connecting; across nodes they may also be unable to reach this host's address and port.",
    ("read the other ranks' own lines for their error first (an out-of-memory, an import error, a hang)",
     "across nodes: the address and port of the first rank reachable from every node (VLLM_HOST_IP, "
     "MASTER_ADDR; docs/ray.md)"),
    ("retrying unchanged", "lowering memory settings before the other ranks' error is known"),
)
CHAT_TEMPLATE = Advice(
    "--chat-template takes a Jinja template file that exists where vLLM runs, or the template text itself; the "
    "value given is neither, so the API server refused it before loading the model.",
    ("the path of a template file readable by vLLM's user (in a container: mounted into it)",
     "drop --chat-template to use the tokenizer's own template"), ("retrying unchanged",),
)
NO_GPU = Advice(
    "The process sees no GPU at all: a container started without GPUs, CUDA_VISIBLE_DEVICES empty or wrong, no "
    "working NVIDIA driver, or a vLLM built for another platform (the PyPI wheel is CUDA's; CPU, ROCm and XPU have "
    "their own builds).",
    ("`nvidia-smi` in the same container or shell", "Docker: --gpus all (the NVIDIA Container Toolkit); "
     "Kubernetes: a nvidia.com/gpu resource limit", "check CUDA_VISIBLE_DEVICES",
     "on a machine without an NVIDIA GPU: vLLM's build for its platform"), ("changing vLLM's settings",),
)
INSPECTION_FAILED = Advice(
    "vLLM's model registry could not import the model's class in a subprocess: the subprocess's own error, printed "
    "above this line, is the cause (most often an install that does not import: torch, transformers or a kernel "
    "package of the wrong version; sometimes an architecture this vLLM does not have).",
    ("the first error in the subprocess's output (`python -c 'import vllm.model_executor.models'` shows it)",
     "a fresh virtual environment with the versions vLLM pins", "a newer vLLM for a newer architecture"),
    ("retrying unchanged", "changing vLLM's memory settings"),
)

PP_UNSUPPORTED = Advice(
    "This model (or its speculative draft or MTP head) cannot run with pipeline parallelism in this vLLM.",
    ("--pipeline-parallel-size 1 with tensor parallelism across the GPUs",
     "without the speculative head when only it lacks pipeline support"), ("retrying unchanged",),
)
LORA_RANK = Advice(
    "--max-lora-rank must be one of the ranks vLLM builds kernels for (the error lists them).",
    ("the smallest listed rank at least the adapters' own rank (adapter_config.json's r)",), ("retrying unchanged",),
)
QUANT_SHAPE = Advice(
    "A quantized layer's share on one GPU is not a whole number of quant groups or kernel tiles: tensor parallel "
    "splits its input or output unevenly, or the layer's own shape does not fit the kernel (Marlin's 64-wide "
    "tiles).",
    ("a smaller --tensor-parallel-size", "another kernel for the same format (vLLM's advice for Marlin: "
     "--quantization gptq)"), ("retrying unchanged",),
)

MARLIN_TILE = Advice(
    "vLLM's Marlin kernels repack a quantized layer in tiles 64 wide, and this layer's width on one GPU is not a "
    "multiple of 64: tensor parallel splits it so, or at one GPU the layer's own width is. vLLM also runs FP8 and FP4 "
    "checkpoints through Marlin on GPUs without those formats in hardware (before compute capability 8.9 for FP8).",
    ("a --tensor-parallel-size whose share of the layer is a multiple of 64, or --pipeline-parallel-size for the "
     "other GPUs", "a GPU that runs the checkpoint's format natively, where Marlin stands in for it",
     "a checkpoint in another format or an unquantized one"),
    ("retrying unchanged",),
)

QUANT_BLOCK = Advice(
    "The checkpoint is FP8 in blocks (most often 128 x 128), and tensor parallel gives each GPU a share of a layer "
    "that is not a whole number of blocks.",
    ("a --tensor-parallel-size that leaves each share a multiple of the block (fewer GPUs)",
     "for a mixture-of-experts model, --enable-expert-parallel: whole experts on each GPU, not slices of each",
     "--pipeline-parallel-size across the GPUs instead"),
    ("retrying unchanged", "changing vLLM's memory settings"),
)

MMAP_ENOMEM = Advice(
    "The host refused to map a weight shard into memory (ENOMEM): not enough free RAM, a container's memory limit "
    "below the shard, or vm.overcommit_memory=2 counting the mapping against a commit limit.",
    ("a larger memory limit for the container or pod", "`sysctl vm.overcommit_memory` (0 is the default)",
     "fewer vLLM processes loading at once on the host"), ("changing GPU memory settings",),
)
NOT_MULTIMODAL = Advice(
    "vLLM refused a multimodal option because it does not treat this model as multimodal: most often a vision model "
    "newer than this vLLM (its architecture falls back to a text-only class), or a text-only model given the option.",
    ("a vLLM release that lists the model among its multimodal models", "drop --limit-mm-per-prompt for a text-only "
     "model"), ("changing memory settings",),
)
NO_KERNEL = Advice(
    "This vLLM build has no kernel for the checkpoint's weight format on this GPU; its message lists why each "
    "candidate refused.",
    ("a checkpoint in a format this GPU has kernels for (or the unquantized model)", "a vLLM build that has the "
     "kernel, or the environment override the message names"), ("changing memory settings", "retrying unchanged"),
)
CONFIG_CHECK = Advice(
    "vLLM's own settings checks refused the combination it was given (a scheduler, cache, parallel, LoRA or "
    "speculative-decoding setting against another, or against the model): the ValueError's message names both.",
    ("change the setting the message names, in the profile or the command line",
     "the installed vLLM's `vllm serve --help=<group>` for the values it accepts"),
    ("retrying: the same settings are refused the same way",),
)
# vLLM 0.6.5-0.9 (V0's worker.py, V1's gpu_worker.py before CUDA-graph memory profiling) size the KV cache from the
# weights and the dummy batch alone and capture CUDA graphs afterwards; V0 profiles a batch of max(max-model-len,
# 2048) tokens when chunked prefill is off (SchedulerConfig).
BEFORE_GRAPHS = Advice(
    "Weights and the profiling pass's activations used the whole budget: nothing is left for KV cache blocks. This "
    "vLLM measures no CUDA-graph memory at this point: it captures the graphs after sizing the KV cache.",
    ("lower --max-num-batched-tokens (the profiling batch: a smaller activation peak)",
     "lower --max-model-len where chunked prefill is off (V0 then profiles max(max-model-len, 2048) tokens)",
     "raise --gpu-memory-utilization if the GPU has the memory", "a quantized checkpoint, or a GPU with more memory"),
    ("--enforce-eager: CUDA graphs are not in this budget", "retrying unchanged"),
)

DP_PLACEMENT = Advice(
    "Data parallelism on Ray makes one placement group per DP rank, each with that rank's tensor x pipeline GPUs, and "
    "the cluster could not give them all: fewer free GPUs than data x tensor x pipeline parallel (vLLM's message "
    "lists what was available).",
    ("a smaller --data-parallel-size (or tensor/pipeline size)", "more GPU nodes in the Ray cluster; `ray status` "
     "shows the free GPUs each node offers"),
    ("waiting longer", "changing vLLM's memory settings"),
)

FLASHINFER_MOE_MODEL = Advice(
    "FlashInfer's per-tensor FP8 MoE kernels (VLLM_USE_FLASHINFER_MOE_FP8=1) take only Llama 4's expert routing, and "
    "this model routes its experts another way.",
    ("VLLM_USE_FLASHINFER_MOE_FP8=0 (or unset): vLLM's own FP8 MoE kernels",
     "another VLLM_FLASHINFER_MOE_BACKEND (throughput, latency), which takes a different kernel path"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

FLEX_ATTENTION = Advice(
    "vLLM runs attention with FlexAttention, the backend it falls back to where FlashAttention cannot run (compute "
    "capability below 8.0: T4, V100, RTX 20xx) or the one VLLM_ATTENTION_BACKEND names, and FlexAttention lacks a "
    "feature this model's attention needs (sliding window, soft-capping, ALiBi).",
    ("a GPU of compute capability 8.0 or later, where FlashAttention runs it",
     "if VLLM_ATTENTION_BACKEND names FLEX_ATTENTION: another backend", "a newer vLLM, whose backends may cover it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

RAY_GCS = Advice(
    "A Ray process could not reach the cluster's control store (the GCS on the head node): the head stopped or "
    "restarted, a firewall blocks its port, or the node's address is not the one the head knows. In vLLM 0.2, "
    "loading the model from a thread other than the main one did this on a single machine.",
    ("`ray status` on the node: is the head reachable", "RAY_ADDRESS and the head's port (6379) open between nodes",
     "create the engine in the program's main thread"),
    ("retrying unchanged",),
)

OMNI_STAGE = Advice(
    "vllm-omni waited --stage-init-timeout (300 s by default) for one of its stages' engine processes to say READY, "
    "or --init-timeout for its orchestrator and every stage: a stage was still loading, or it stopped without "
    "saying why (incomplete weight files have done this).",
    ("the stage's own lines before the timeout: a stage that failed says why there",
     "check that the model's weight files are complete (download them again if one is short)",
     "a larger --stage-init-timeout and --init-timeout for a big model on slow storage or stages started one "
     "after another on one device"),
    ("changing vLLM's memory settings before the stage's own error is known",),
)


DISK_QUOTA = Advice(
    "A write went past the quota of the user or project on that filesystem (EDQUOT), not a full disk: a cluster's "
    "home directory, most often, where vLLM keeps its torch.compile cache (~/.cache/vllm) and the Hub's cache.",
    ("VLLM_CACHE_ROOT, TRITON_CACHE_DIR and HF_HOME (or --download-dir) on a filesystem with room (scratch or "
     "project space)",
     "`quota -s` (or the site's own tool) shows the limit; free space under it"),
    ("retrying unchanged", "changing vLLM's memory settings"),
)
NUMA_BIND = Advice(
    "--numa-bind asks vLLM to pin each GPU's worker to that GPU's NUMA node, and vLLM 0.32 (utils/numa_utils.py) "
    "does not detect the nodes itself when the machine has one NUMA node, the process's CPU affinity is already "
    "limited (Slurm, taskset: vLLM warns 'CPU affinity is already constrained'), or it may not set a memory policy "
    "(Docker without --cap-add SYS_NICE); a warning just before the error, where vLLM logged one, says which.",
    ("on a one-node machine, or under a scheduler that pins CPUs already: drop --numa-bind",
     "--numa-bind-nodes with each GPU's node (`nvidia-smi topo -m` shows the NUMA affinity), where vLLM may pin",
     "Docker: --cap-add SYS_NICE"), ("retrying unchanged",),
)
PROCESS_GROUP_SIZE = Advice(
    "torch.distributed's group has more processes than tensor x pipeline parallel needs: the script was started "
    "under torchrun (or with WORLD_SIZE set), and every process built its own engine.",
    ("start the script as one process (python, not torchrun) and let vLLM start its workers",
     "or give tensor_parallel_size x pipeline_parallel_size equal to the processes started"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)
QUANT_DTYPE = Advice(
    "The checkpoint's quantization method runs only in the dtypes its message lists, and --dtype asked for another.",
    ("--dtype set to one the message lists, or auto",
     "on a GPU without that dtype (bfloat16 needs compute capability 8.0): a checkpoint quantized another way"),
    ("--dtype half when half is the dtype refused", "retrying unchanged"),
)
QUANT_CONFIG_MISSING = Advice(
    "--quantization names a method, and the checkpoint has no quantization config vLLM can find for it (no "
    "quantization_config in config.json, no quant_config.json or the method's own file): the model is not quantized, "
    "or was quantized another way.",
    ("drop --quantization and let vLLM read the method from the checkpoint",
     "point --model at the checkpoint quantized with that method"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)
OOM_OTHER_PROCESS = Advice(
    "Other processes hold the memory vLLM needed on this GPU (most of it, or, when vLLM had already sized its KV "
    "cache, the part it counted on): PyTorch's out-of-memory message names them and how much they hold, against "
    "what vLLM's process had when it ran out.",
    ("find who holds it (nvidia-smi, or `vllm-guard snapshot`) and free the GPU, or wait for it",
     "give vLLM another GPU (CUDA_VISIBLE_DEVICES)", "stop orphaned VLLM::EngineCore processes you own",
     "lower --gpu-memory-utilization to what is free once vLLM itself has exited"),
    ("raising --gpu-memory-utilization", "--enforce-eager or a smaller batch while the GPU is held"),
)
FORK_CUDA = Advice(
    "CUDA (or an Ascend NPU's runtime) was already initialised in the process that started vLLM (the program "
    "touched the GPU before creating the engine, or a library did at import), and vLLM's workers were forked from "
    "it: the device cannot be used in a forked child.",
    ("VLLM_WORKER_MULTIPROC_METHOD=spawn in the environment",
     "create the engine before any CUDA call, under `if __name__ == \"__main__\":` in a script"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

FP8_E4M3 = Advice(
    "Triton compiles the float8 e4m3 type (its fp8e4nv) only on compute capability 8.9 and later (Ada, Hopper, "
    "Blackwell); this GPU has only the types the message lists. An fp8 KV cache (--kv-cache-dtype fp8 is e4m3) or "
    "an FP8 checkpoint's Triton kernels (block-FP8 matmul, fused MoE) need it.",
    ("--kv-cache-dtype auto, or fp8_e5m2 (which Triton compiles here), when the KV cache is fp8",
     "for an FP8 checkpoint: the model in BF16/FP16 or in INT8/INT4 (AWQ, GPTQ), or a GPU of compute capability "
     "8.9+"),
    ("--dtype: it sets the activations, not the fp8 type", "retrying unchanged"),
)

SLEEP_MODE_PLATFORM = Advice(
    "Sleep mode was asked for on a platform that has no sleep-mode allocator in this vLLM (only CUDA, ROCm and XPU "
    "have one).",
    ("start without --enable-sleep-mode (enable_sleep_mode=False)",), ("retrying unchanged",),
)

NO_ATTENTION_BACKEND = Advice(
    "No attention backend in this vLLM runs the model's attention on this GPU: the message lists each backend and "
    "why it refused (compute capability, head size, MLA or sparse MLA, attention sinks, sliding window). DeepSeek "
    "V3.2's sparse MLA, for one, runs only on Hopper and Blackwell.",
    ("a GPU the listed backends accept (the reasons name the compute capability they need)",
     "a newer vLLM, whose backends may cover this GPU or head size",
     "if a reason is a setting you chose (block_size, a KV connector, batch invariance, DCP/PCP): without it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)
ATTENTION_BACKEND = Advice(
    "The attention backend chosen with --attention-backend (or VLLM_ATTENTION_BACKEND) refuses this model or GPU; "
    "the message says why.",
    ("drop the choice and let vLLM pick a backend", "a backend the reasons do not exclude"), ("retrying unchanged",),
)
BNB_MODEL = Advice(
    "vLLM's bitsandbytes loader needs the model's class to declare how its layers are packed, and this model's "
    "class in the installed vLLM does not yet (support was added model by model).",
    ("a newer vLLM that lists bitsandbytes for the architecture",
     "the model in another format vLLM runs for it (AWQ, GPTQ, FP8) or unquantized"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

NVFP4_MOE_DP = Advice(
    "vLLM's own CUTLASS kernels for NVFP4 mixture-of-experts layers do not run with data parallelism; FlashInfer's "
    "CUTLASS fused-MoE kernels do, and vLLM uses them only when VLLM_USE_FLASHINFER_MOE_FP4=1 is set (and only on "
    "the GPUs FlashInfer's check accepts: compute capability 10.0 in these releases).",
    ("VLLM_USE_FLASHINFER_MOE_FP4=1, as vLLM's message says", "tensor parallelism instead of --data-parallel-size",
     "a newer vLLM, whose MoE backend selection covers more GPUs"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

SOFTCAP_BACKEND = Advice(
    "Gemma-2's attention soft-caps its logits, and in this vLLM only the FlashInfer backend does that: vLLM chose "
    "another because VLLM_ATTENTION_BACKEND was not set when vLLM read it (set in a script after vLLM was imported), "
    "FlashInfer is not installed, or FlashInfer does not run here (ROCm; GPUs before Ampere).",
    ("on an NVIDIA GPU of compute capability 8.0 or later: VLLM_ATTENTION_BACKEND=FLASHINFER in the environment "
     "before the process starts (or before `import vllm`), with flashinfer installed",
     "elsewhere (ROCm, V100, T4): a newer vLLM, whose other backends soft-cap too"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)


DETAIL_ADVICE: dict[str, Advice] = {
    **VERSION_ADVICE,
    **SETTINGS_ADVICE,
    **FILE_ADVICE,
    **NETWORK_ADVICE,
    **CONTAINER_ADVICE,
    **BUILD_ADVICE,
    **PLATFORM_ADVICE,
    **QUANT_ADVICE,
    "profiling_assertion": PROFILING_ASSERTION, "sigkill": KILLED, "ray_head_without_gpu": RAY_HEAD_WITHOUT_GPU,
    "ray_accelerators": RAY_ACCELERATORS,
    "no_error": NO_ERROR,
    "exclusive": EXCLUSIVE_GPU, "model_dtype": MODEL_DTYPE,
    "pp_layers": PP_LAYERS, "batched_tokens": BATCHED_TOKENS, "mm_budget": MM_BUDGET, "tool_parser": TOOL_PARSER,
    "chat_template": CHAT_TEMPLATE, "ranks_missing": RANKS_MISSING, "no_gpu": NO_GPU,
    "pp_unsupported": PP_UNSUPPORTED, "lora_rank": LORA_RANK,
    "inspection_failed": INSPECTION_FAILED, "quant_group": QUANT_SHAPE, "marlin_tile": MARLIN_TILE,
    "config_check": CONFIG_CHECK,
    "mmap_enomem": MMAP_ENOMEM, "not_multimodal": NOT_MULTIMODAL,
    "no_kernel": NO_KERNEL, "before_graphs": BEFORE_GRAPHS,
    "omni_stage": OMNI_STAGE, "flex_attention": FLEX_ATTENTION, "dp_placement": DP_PLACEMENT,
    "flashinfer_moe_model": FLASHINFER_MOE_MODEL,
    "ray_gcs": RAY_GCS, "quota": DISK_QUOTA, "quant_block": QUANT_BLOCK,
    "numa_bind": NUMA_BIND, "fork_cuda": FORK_CUDA, "oom_other_process": OOM_OTHER_PROCESS,
    "quant_config_missing": QUANT_CONFIG_MISSING, "quant_dtype": QUANT_DTYPE,
    "process_group_size": PROCESS_GROUP_SIZE, "fp8_e4m3": FP8_E4M3, "sleep_mode_platform": SLEEP_MODE_PLATFORM,
    "no_attention_backend": NO_ATTENTION_BACKEND, "attention_backend": ATTENTION_BACKEND, "bnb_model": BNB_MODEL,
    "softcap_backend": SOFTCAP_BACKEND, "nvfp4_moe_dp": NVFP4_MOE_DP,
}


def advice_for(d: Diagnosis) -> Advice:
    """The advice for a more specific reading within the class when there is one (a bare SIGKILL)."""
    if d.cls == "startup_hang" and d.stage in HANG_ADVICE:
        return as_started(HANG_ADVICE[d.stage], d.context)
    return as_started(DETAIL_ADVICE.get(d.detail or "", ADVICE[d.cls]), d.context)
