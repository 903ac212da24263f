"""Pure: a classified failure + the settings of the failed start -> the one change to try next.

One parameter per failed start, in the direction the failure calls for, within
the profile's floors and ceilings (issue 6's table). Failures no setting can fix
stop the ladder with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the ladder is imported by a dry run, which needs no classifier
    from vllm_guard.diagnose.classify import Diagnosis

BLOCK = 16  # vLLM 0.33's default block size: lengths are rounded down to it
GPU_BUSY_MARGIN_GIB = 0.5  # vLLM measures free memory after its own CUDA context
GIB_ROUNDING = 0.005  # vLLM's format_gib rounds to two decimals (vllm-reference §2a)


@dataclass(frozen=True)
class Settings:
    """What the failed start ran with; None where not known."""

    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    kv_cache_dtype: str = "auto"
    enable_chunked_prefill: bool | None = None
    kv_cache_memory_bytes: int | None = None  # set: the KV cache has this size whatever the utilization
    world_size: int | None = None  # GPUs of one replica (tensor x pipeline parallel)
    disable_custom_all_reduce: bool = False


@dataclass(frozen=True)
class Limits:
    """Floors, ceilings and allowed steps (the profile's [guard.ladder])."""

    min_max_model_len: int = 1024
    min_gpu_memory_utilization: float = 0.5
    max_gpu_memory_utilization: float = 0.95
    allow_lower_utilization: bool = True
    allow_fp8_kv: bool = True
    allow_enforce_eager: bool = True


@dataclass(frozen=True)
class Step:
    param: str | None  # None: start again unchanged (after waiting, for gpu_busy)
    value: Any
    reason: str
    wait_for_gpu: bool = False

    @property
    def change(self) -> bool:
        """A value to set: a parameter and its value (a step without a value is a start unchanged)."""
        return self.param is not None and self.value is not None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"param": self.param, "value": self.value, "reason": self.reason}
        if self.wait_for_gpu:
            d["wait_for_gpu"] = True
        return d


@dataclass(frozen=True)
class Stop:
    reason: str


NOT_RELAXABLE = {
    "oom_loading": "the weights do not fit the GPU: no context or batch setting shrinks them",
    "host_oom": "host memory ran out while loading: no vLLM option changes that",
    "shm_exhausted": "/dev/shm is too small: that is the container's or host's setting, not vLLM's",
    "tp_indivisible": "the tensor-parallel layout is invalid for this model: change -tp in the profile",
    "dtype_unsupported": "the dtype is not supported on this GPU: change --dtype in the profile",
    "quant_unsupported": "the checkpoint's quantization is not supported on this GPU",
    "too_few_gpus": "the layout needs more GPUs than vLLM can see (or the Ray cluster can give)",
    "network": "NCCL or Gloo could not connect the workers: a network or interface setting on the nodes",
    "version_mismatch": "the installed versions do not fit together (vLLM, torch, transformers, CUDA or, on a "
                        "cluster, the nodes'): install matching ones, no setting helps",
    "port_in_use": "the API port is taken by another process",
    "disk_full": "the disk (or the quota) is full where vLLM writes its caches and the weights",
    "model_access": "the model cannot be read: a wrong id, a gated repository or a missing token",
    "remote_code_required": "the model needs --trust-remote-code, which the guard never adds on its own",
    "unsupported_architecture": "this vLLM does not support the model's architecture",
    "gpu_oom": "the GPU ran out of memory at a stage the log does not show: the change depends on the stage",
    "preflight_failed": "the guard's preflight refused to start vLLM: apply the failed checks' fixes to the profile",
    "first_request_failed": "vLLM answered /health but not its first request (see the evidence): no setting "
                            "the ladder changes fixes that",
    "usage_error": "vLLM refused its command line (an unknown option or a bad value): fix the profile or the "
                   "command line",
    "unknown": "the failure is not understood well enough to change anything safely",
}
# A reading within a class (Diagnosis.detail) whose reason differs from the class's own.
NOT_RELAXABLE_DETAIL = {
    "ray_node_ip": "vLLM's Ray executor did not find one IP address per node: VLLM_HOST_IP and Ray's node address, "
                   "set per node, not a vLLM option",
    "remote_gguf": "the model is a .gguf file in a Hub repository: a local .gguf path (REPO:QUANT_TYPE on vLLM 0.13+)",
    "dp_placement": "the Ray cluster has fewer free GPUs than data x tensor x pipeline parallel asks",
    "flashinfer_moe_model": "FlashInfer's FP8 MoE kernels take only Llama 4: VLLM_USE_FLASHINFER_MOE_FP8=0",
    "aiter_mla_heads": "AITER's MLA kernel needs 16 or 128 heads per GPU: another tensor-parallel size, or "
                       "VLLM_ROCM_USE_AITER_MLA=0",
    "second_engine": "a second engine in one process: one engine per process",
    "lora_vocab": "the model's vocabulary is larger than this vLLM's LoRA kernels take: a merged adapter or a newer "
                  "vLLM",
    "backend_name": "VLLM_ATTENTION_BACKEND names no backend of this vLLM: unset it or use a listed name",
    "batch_invariant": "VLLM_BATCH_INVARIANT=1 where this vLLM has no batch-invariant kernel for the model or backend",
    "cdi_device": "the container runtime knows no CDI device of that name: generate the node's CDI spec",
    "hpu_lazy_collectives": "Gaudi's HPU graphs with tensor parallelism need PT_HPU_ENABLE_LAZY_COLLECTIVES=true in "
                            "vLLM's environment",
    "window_layers": "the model's config puts a sliding window on some layers, which this vLLM's class for it "
                     "does not run",
    "v1_unsupported": "VLLM_USE_V1=1 with a feature or device this vLLM's V1 does not run: unset it, or set it to 0",
    "engine_choice": "the engine built is not the one VLLM_USE_V1 names in its process: set it there explicitly",
    "encoder_attention": "the attention backend vLLM chose has no encoder attention, which this model needs",
    "moe_act_platform": "this vLLM runs the model's ungated MoE experts only on the platforms it names",
    "softcap_xformers": "vLLM 0.5.5's XFormers backend cannot soft-cap Gemma-2: a dtype or GPU FlashAttention runs",
    "env_choice": "an environment variable of vLLM's holds a value it does not take: unset it or use a listed value",
    "cli_flags": "vllm serve refused a combination of its flags: the profile's flags, as the message names them",
    "mooncake_master": "Mooncake's store client cannot reach its master service: no vLLM setting changes that",
    "ray_local_node": "no Ray node of the cluster runs on this host (or under its address): no vLLM setting changes "
                      "that",
    "nccl_internal": "NCCL's internal error as it connected the workers (NCCL_DEBUG=INFO names the call): no vLLM "
                     "memory setting changes that",
    "nccl_unhandled": "NCCL failed a system or CUDA call (a socket, /dev/shm or P2P; NCCL_DEBUG=INFO names which): no "
                      "vLLM memory setting changes that",
    "hub": "the Hugging Face Hub cannot be reached (offline mode, the network or a proxy): no vLLM setting "
           "changes that",
    "config_missing": "the model has no config.json at the revision asked for: a wrong id, path or revision",
    "hccl_port": "HCCL's port is held by another process on the node: give each instance its own HCCL_IF_BASE_PORT",
    # not the ladder's own step: its disable-custom-all-reduce also sets NCCL_P2P_DISABLE (launch/remembered.py,
    # for a P2P hang), which a failed CUDA IPC call does not call for
    "custom_allreduce": "vLLM's custom all-reduce failed a CUDA call between the GPUs: disable-custom-all-reduce "
                        "in the profile (NCCL's all-reduce instead)",
    "deep_gemm": "the deep_gemm package is missing or too old: install it (a model without FP8 layers can skip "
                 "it with VLLM_DEEP_GEMM_WARMUP=skip in the profile's [env] table)",
    "extension_abi": "a compiled extension does not match the installed torch or CUDA: reinstall, no setting "
                     "helps",
    "gpu_arch": "the installed build has no kernels for this GPU: install one built for it",
    "driver": "the NVIDIA driver is older than the CUDA the build needs: update the driver or the build",
    "process_group_size": "the script runs as several processes (torchrun) against one engine's parallel sizes: "
                          "start it as one process",
    "quant_dtype": "the quantization method refuses this --dtype: set one it lists in the profile",
    "model_dtype": "this model type refuses the dtype asked for: change --dtype in the profile",
    "quantization_mismatch": "--quantization contradicts the checkpoint's own method: fix the profile",
    "pp_layers": "the layer count is not divisible by --pipeline-parallel-size: change it in the profile",
    "batched_tokens": "vLLM's scheduler refuses --max-num-batched-tokens against max-model-len or max-num-seqs: fix "
                      "the profile",
    "mm_budget": "one multimodal item needs more tokens than --max-num-batched-tokens: raise it in the profile",
    "tool_parser": "the tool-call or reasoning parser options are refused: fix the profile",
    "chat_template": "--chat-template names no file vLLM can read: fix the profile",
    "ranks_missing": "some ranks never joined the rendezvous: their own error comes first, no setting here helps",
    "unknown_method": "this vLLM does not know the quantization method named: fix --quantization",
    "no_gpu": "the process sees no GPU: the container's or host's GPU set-up, not a vLLM setting",
    "python_package": "an installed package does not match this vLLM or model: reinstall, no setting helps",
    "numba_numpy": "numba refuses the installed NumPy: install one in its range, no setting helps",
    "vllm_module": "code importing vLLM (or vLLM's own CLI, partly installed) asks for a module this vLLM does not "
                   "have: install matching releases, no setting helps",
    "mistral_tokenizer": "the Mistral tokenizer found no tekken.json: the model's files, or --tokenizer-mode in the "
                         "profile",
    "quant_config_missing": "--quantization names a method the checkpoint has no config for: fix the profile",
    "plugin_version": "a vLLM plugin was written for another vLLM release: install the pair it pins",
    "fork_cuda": "CUDA was initialised before vLLM forked its workers: VLLM_WORKER_MULTIPROC_METHOD=spawn, not a "
                 "setting the ladder changes",
    "tokenizer_missing": "the model's files lack the tokenizer its class reads: add them, or point --tokenizer at "
                         "the base model",
    "fp8_e4m3": "this GPU cannot compile Triton's fp8 e4m3: an fp8 KV cache goes back to auto, and an FP8 "
                "checkpoint's kernels need a GPU of compute capability 8.9+",
    "package_missing": "an installed package imports a module that is not installed: install it, no setting "
                       "helps",
    "shards_missing": "the checkpoint's index names shards the folder does not hold: download them, no setting "
                      "helps",
    "no_attention_backend": "no attention backend of this vLLM runs the model on this GPU: another GPU or vLLM",
    "attention_backend": "the attention backend chosen refuses this model or GPU: drop it from the profile",
    "bnb_model": "this vLLM has no bitsandbytes support for the model's class: another format or vLLM",
    "nvfp4_moe_dp": "vLLM's NVFP4 MoE kernels refuse data parallelism: VLLM_USE_FLASHINFER_MOE_FP4=1 or tensor "
                    "parallelism, not a setting the ladder changes",
    "torch_schema": "this vLLM was written for another torch release: install the torch it pins, no setting helps",
    "softcap_backend": "this vLLM soft-caps Gemma-2's logits only on FlashInfer (VLLM_ATTENTION_BACKEND, Ampere or "
                       "later) or in a newer vLLM: not a setting the ladder changes",
    "download_integrity": "a downloaded weight file failed its checksum: download the model again, no setting helps",
    "package_required": "vLLM needs a package this environment lacks or has at another version: the message names "
                        "it",
    "libcuda_missing": "Triton finds no libcuda.so.1 (the driver's library): a linker cache or container set-up, not a "
                       "vLLM setting",
    "nccl_graph": "the NCCL library or the driver is too old for NCCL in a CUDA graph, even in eager mode: a newer one",
    "glibc": "a compiled extension needs a newer glibc than this OS has: no vLLM setting changes that",
    "nixl_missing": "the KV connector needs NIXL, which does not import in vLLM's environment",
    "sleep_allocator": "this build lacks the allocator sleep mode needs: a build with it, or no sleep mode in the "
                       "profile",
    "sleep_mode_platform": "this platform has no sleep-mode allocator: drop --enable-sleep-mode from the profile",
    "flash_attn_build": "this flash-attention build leaves out a case the model needs: another attention backend "
                        "or a full build, not a setting the ladder changes",
    "no_c_compiler": "Triton finds no C compiler to build its kernels: install one (gcc) where vLLM runs",
    "numa_bind": "vLLM did not detect the GPUs' NUMA nodes for --numa-bind: drop it, or give --numa-bind-nodes",
    "quota": "the disk quota is full where vLLM writes its caches or the weights: move them or free space",
    "pp_unsupported": "this model cannot run with pipeline parallelism: use tensor parallelism in the profile",
    "lora_rank": "--max-lora-rank is not a rank vLLM supports: fix the profile",
    "platform": "this platform's vLLM does not run the checkpoint's quantization method",
    "inspection_failed": "vLLM could not import the model's class: the install (or this vLLM's support), not a "
                         "setting",
    "hub_refused": "the Hugging Face Hub refused or timed out: a token, a wait or a longer Hub timeout, not a vLLM "
                   "setting",
    "quant_group": "a quantized layer does not split evenly at this tensor-parallel size: change -tp or the kernel "
                   "in the profile",
    "vllm_api": "the program driving vLLM was written for another vLLM release: install the one it pins",
    "tpu_busy": "another process holds the TPU: the guard cannot see it, so it does not wait for it",
    "tpu_onchip": "XLA ran out of the TPU core's on-chip memory compiling a kernel: not the HBM a setting frees",
    "k8s_unschedulable": "no node of the cluster has the pod's GPUs free: the scheduler never starts the container",
    "startup_probe": "the kubelet killed the container before vLLM was ready: the pod's startupProbe budget, not a "
                     "vLLM setting",
    "config_check": "vLLM's settings checks refused the combination given: change the setting the message names",
    "no_weights": "the model has no weight file vLLM can load: download it whole, no setting helps",
    "weights_unreadable": "a weight file is truncated or not the file itself (a git-lfs pointer): download it again",
    "internal_port": "an internal port was taken twice: set VLLM_PORT (or MASTER_PORT) to a free range",
    "mmap_enomem": "the host refused to map the weights into memory: raise the memory limit, no vLLM option helps",
    "not_multimodal": "this vLLM does not treat the model as multimodal: a newer vLLM, or no multimodal option",
    "weights_missing": "the checkpoint lacks weights its config declares: download it whole",
    "tower_weights_missing": "the checkpoint has no tower for the media still accepted: --language-model-only or "
                             "every medium at 0 in the profile",
    "no_kernel": "this build has no kernel for the checkpoint's format on this GPU: another checkpoint or build",
    "rope_format": "this vLLM (or the transformers beside it) does not know the model's rope_scaling: install a "
                   "matching pair",
}


def next_step(d: Diagnosis, s: Settings, limits: Limits | None = None, *, fp8_supported: bool | None = None,
              guard_set_kv_dtype: bool = False, unchanged_retries: int = 0) -> Step | Stop:
    """The single change that the failure calls for, or why none can help."""
    limits = limits or Limits()
    n = d.numbers
    if d.cls == "kv_cache_too_small":
        return _kv_too_small(n, s, limits, fp8_supported, d)
    if d.cls == "gpu_busy" and d.detail == "tpu_busy":  # NVML, which the wait polls, does not see a TPU
        return Stop(NOT_RELAXABLE_DETAIL["tpu_busy"])
    if d.cls == "gpu_busy":
        free, total = n.get("free_gib"), n.get("total_gib")
        if d.detail == "oom_other_process" and free is not None and n.get("process_gib"):
            free = round(free + n["process_gib"], 3)  # an OOM's free excludes what vLLM held, freed when it exits
        if limits.allow_lower_utilization and free and total:
            util = math.floor((free - GPU_BUSY_MARGIN_GIB) / total * 100) / 100
            util = min(util, limits.max_gpu_memory_utilization)
            lower = s.gpu_memory_utilization is None or util < s.gpu_memory_utilization  # never the same or higher
            if util >= limits.min_gpu_memory_utilization and lower:
                return Step("gpu-memory-utilization", util, f"{free} GiB of {total} GiB is free: use what is free, "
                            f"less a {GPU_BUSY_MARGIN_GIB} GiB margin")
        return Step(None, None, "wait until the other processes free the GPU, then start unchanged",
                    wait_for_gpu=True)
    if d.cls in ("no_kv_memory", "oom_profiling"):
        # vLLM's own advice: the sampler's warm-up (and the first real batch) runs max-num-seqs requests.
        if d.detail in ("sampler_warmup", "first_request"):
            step = _halve_seqs(s)
            if step is not None:
                return step
        # a vLLM that sizes the KV cache before capturing CUDA graphs: eager mode frees nothing in that budget
        return _shrink_batch(s, limits, eager_helps=d.detail != "before_graphs")
    if d.cls == "oom_cudagraph":
        if not s.enforce_eager and limits.allow_enforce_eager:
            return Step("enforce-eager", True, "CUDA-graph capture ran out of memory: run without CUDA graphs")
        return _halve_seqs(s) or Stop("already eager, and max-num-seqs cannot be halved further")
    # NCCL that cannot be captured in a CUDA graph (an NCCL built for CUDA before 11.3, a driver before R465): eager
    # mode captures none, a slower start that serves; the library or driver is the fix the advice names
    if d.detail == "nccl_graph" and not s.enforce_eager:
        if limits.allow_enforce_eager:
            return Step("enforce-eager", True, "this NCCL or driver cannot be captured in a CUDA graph: run without "
                        "CUDA graphs")
        return Stop("this NCCL or driver cannot be captured in a CUDA graph, and ladder.allow-enforce-eager is false: "
                    "a newer NCCL or driver, or allow eager mode")
    if d.cls == "max_len_exceeds_model" and n.get("derived_max_len"):
        return Step("max-model-len", n["derived_max_len"], "the model's own maximum length")
    if d.cls == "quant_unsupported" and d.detail == "kv_cache_dtype" and (guard_set_kv_dtype or
                                                                         s.kv_cache_dtype != "auto"):
        return Step("kv-cache-dtype", "auto", "this GPU cannot run the fp8 KV cache: back to the model's dtype")
    # Triton's fp8e4nv refusal names no kernel: an e4m3 KV cache may be the cause (fp8_e5m2 is not e4m3), an FP8
    # checkpoint's own kernels otherwise; the KV cache is the one thing a setting changes, tried once
    if d.cls == "dtype_unsupported" and d.detail == "fp8_e4m3" and s.kv_cache_dtype in ("fp8", "fp8_e4m3"):
        return Step("kv-cache-dtype", "auto", "this GPU cannot compile Triton's fp8 e4m3 for the KV cache: back to "
                    "the model's dtype")
    if d.cls == "first_request_failed" and d.detail == "timeout":
        if unchanged_retries == 0:
            return Step(None, None, "the first request timed out: start once more unchanged (a cold cache)")
        return Stop("the first request timed out twice")
    if d.cls == "startup_timeout" and d.detail != "startup_probe":  # the kubelet restarts it, not the guard
        if unchanged_retries == 0:
            return Step(None, None, "start once more unchanged: a slow download or a cold cache can time out once")
        return Stop("the start timed out twice")
    if d.cls == "port_in_use" and d.detail == "internal_port" and unchanged_retries == 0:
        return Step(None, None, "an internal port was taken between being picked and bound: start once more "
                    "unchanged (another free port is picked)")
    if d.cls == "startup_hang":
        return _hang(d, s)
    if d.detail == "profiling_assertion":
        return Step(None, None, "another process released GPU memory during profiling: start once more unchanged")
    return Stop(NOT_RELAXABLE_DETAIL.get(d.detail or "") or NOT_RELAXABLE.get(d.cls, NOT_RELAXABLE["unknown"]))


# startup_hang stages where one change is known to help on several GPUs: NCCL's P2P transport and vLLM's custom
# all-reduce (CUDA IPC peer-to-peer) hang where P2P is reported but broken (PCIe boxes, ACS, some VMs;
# vllm #31276, #33041, NVIDIA/nccl#2079). The step's relaxation also sets NCCL_P2P_DISABLE=1 (remembered.py).
P2P_HANG_STAGES = ("nccl_init", "custom_allreduce")


def _hang(d: Diagnosis, s: Settings) -> Step | Stop:
    """One retry where it helps (peer-to-peer off), never a second start of the same hang."""
    if d.stage in P2P_HANG_STAGES and (s.world_size or 1) > 1:
        if not s.disable_custom_all_reduce:
            return Step("disable-custom-all-reduce", True, f"the start hung in {d.stage} on {s.world_size} GPUs: "
                        "once more without custom all-reduce and with NCCL_P2P_DISABLE=1 (no GPU peer-to-peer)")
        return Stop(f"the start hung in {d.stage} again with custom all-reduce and NCCL peer-to-peer off: "
                    "look at the stacks and NCCL_DEBUG=INFO")
    if d.stage == "download":
        return Stop("the download stopped: no bytes arrived within the stall timeout (a slow download that moves "
                    "is never called hung)")
    return Stop(f"a start that hung in {d.stage} would hang the same way again: see the stage's advice")


def _kv_too_small(n: dict[str, Any], s: Settings, limits: Limits, fp8: bool | None, d: Diagnosis) -> Step | Stop:
    target: int | None = None
    how = ""
    if n.get("estimated_max_len"):
        target, how = n["estimated_max_len"], "vLLM's own estimate of the longest length that fits"
    elif n.get("kv_tokens"):
        target, how = n["kv_tokens"], "the tokens the KV cache holds"
    elif n.get("needed_gib") and n.get("available_gib") and n.get("max_seq_len"):
        # vLLM prints GiB rounded to 0.01: assume the unfavourable side of the rounding, or the
        # computed length can land a few tokens too long, again and again.
        available, needed = n["available_gib"] - GIB_ROUNDING, n["needed_gib"] + GIB_ROUNDING
        target = int(n["max_seq_len"] * max(available, 0) / needed)
        how = "the length the available KV memory holds, computed from vLLM's figures"
    if target is not None:
        target = target // BLOCK * BLOCK
        current = n.get("max_seq_len") or s.max_model_len
        if current is not None and target >= current:
            target = current - BLOCK  # always a step down: the same length would fail the same way
        if target >= limits.min_max_model_len:
            return Step("max-model-len", target, how)
        at_floor = (f"{how} is {target} tokens, below ladder.min-max-model-len ({limits.min_max_model_len}): "
                    "a shorter context is not accepted")
    else:
        at_floor = "vLLM's log gives no figure to compute a max-model-len that fits"
    util = s.gpu_memory_utilization
    why_not: list[str] = []
    if s.kv_cache_memory_bytes is not None:
        why_not.append("--kv-cache-memory-bytes fixes the KV cache's size, so utilization does not change it")
    elif util is None or util >= limits.max_gpu_memory_utilization:
        why_not.append(f"utilization is at its ceiling ({limits.max_gpu_memory_utilization})")
    elif n.get("needed_gib") and n.get("available_gib") is not None:
        return Step("gpu-memory-utilization", limits.max_gpu_memory_utilization,
                    f"{at_floor}; raise utilization if the GPU has the memory free")
    if s.kv_cache_dtype != "auto":
        why_not.append(f"the KV cache is already {s.kv_cache_dtype}")
    elif not limits.allow_fp8_kv:
        why_not.append("an fp8 KV cache is not allowed (ladder.allow-fp8-kv-cache)")
    elif fp8 is not True:
        # Unknown counts as no: on a machine with no GPU (a CPU build) there is nothing to run it natively.
        why_not.append("an fp8 KV cache needs a GPU of compute capability 8.9 or newer")
    else:
        return Step("kv-cache-dtype", "fp8", "halve the KV cache per token (native at compute capability 8.9+)")
    return Stop(f"{at_floor}; " + "; ".join(why_not) + ". Give the KV cache more memory, or lower "
                "ladder.min-max-model-len to accept a shorter context")


def _shrink_batch(s: Settings, limits: Limits, *, eager_helps: bool = True) -> Step | Stop:
    tokens, seqs = s.max_num_batched_tokens, s.max_num_seqs
    if tokens is not None:
        floor = max(seqs or 1, s.max_model_len if s.enable_chunked_prefill is False and s.max_model_len else 1)
        half = tokens // 2
        if half >= floor and half >= 1:
            return Step("max-num-batched-tokens", half, "halve the profiling batch: a smaller activation peak")
    step = _halve_seqs(s)
    if step is not None:
        return step
    if eager_helps and not s.enforce_eager and limits.allow_enforce_eager:
        return Step("enforce-eager", True, "no CUDA-graph memory in the budget")
    if tokens is None and s.max_num_seqs is None:
        # A step is a value the guard can set: "half of a number the log does not show" is none (and a
        # None value has no TOML spelling). Say what to halve instead.
        return Stop("the log shows neither --max-num-batched-tokens nor --max-num-seqs: halve the one the "
                    "profile sets, or set --max-num-batched-tokens explicitly and start again")
    if not eager_helps:
        return Stop("the batch is at its smallest, and this vLLM's budget holds no CUDA-graph memory: a smaller or "
                    "quantized model, or a higher --gpu-memory-utilization, is needed")
    return Stop("the batch is at its smallest and vLLM is already eager: a smaller or quantized model is needed")


def _halve_seqs(s: Settings) -> Step | None:
    if s.max_num_seqs is not None and s.max_num_seqs >= 2:
        return Step("max-num-seqs", s.max_num_seqs // 2, "halve the concurrent sequences: smaller sampler warm-up "
                    "and fewer CUDA-graph sizes")
    return None


def settings_from_log(d: Diagnosis) -> Settings:
    c = d.context
    return Settings(
        max_model_len=c.get("max_model_len"),
        gpu_memory_utilization=c.get("gpu_memory_utilization"),
        max_num_batched_tokens=c.get("max_num_batched_tokens"),
        max_num_seqs=c.get("max_num_seqs"),
        enforce_eager=bool(c.get("enforce_eager", False)),
        kv_cache_dtype=str(c.get("kv_cache_dtype", "auto")),
    )
