"""Pure: a classified failure + the settings of the failed start -> the one change to try next.

One parameter per failed start, in the direction the failure calls for, within
the profile's floors and ceilings (issue 6's table). Failures no setting can fix
stop the ladder with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vllm_guard.diagnose.ladder_reasons import NOT_RELAXABLE, NOT_RELAXABLE_DETAIL

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


# Readings where eager mode starts what graph capture cannot: why, and what else helps
_EAGER_RUNS = {
    "nccl_graph": ("this NCCL or driver cannot be captured in a CUDA graph", "a newer NCCL or driver"),
    "acl_graph": ("vllm-ascend's ACL graph mode does not run DeepSeek models", "torchair graph mode"),
}


# ports a start picks for itself, which another process can take between the pick and the bind: one more start picks
# again (internal: torch's store; zmq: vLLM's own, though some are fixed by a setting, hence once)
_PICKED_PORT_RETRY = {
    "internal_port": "an internal port was taken between being picked and bound: start once more unchanged (another "
                     "free port is picked)",
    "zmq_port": "a ZMQ port vLLM picks itself may have been taken between being picked and bound: start once more "
                "unchanged (failing again, it is one a setting fixes)",
}


def next_step(d: Diagnosis, s: Settings, limits: Limits | None = None, *, fp8_supported: bool | None = None,
              guard_set_kv_dtype: bool = False, unchanged_retries: int = 0) -> Step | Stop:
    """The single change that the failure calls for, or why none can help."""
    limits = limits or Limits()
    n = d.numbers
    if d.cls == "kv_cache_too_small":
        return _kv_too_small(n, s, limits, fp8_supported, d)
    # NVML, which the wait for a busy GPU polls, sees none of these accelerators
    if d.cls == "gpu_busy" and d.detail in ("tpu_busy", "hpu_acquired", "neuron_busy"):
        return Stop(NOT_RELAXABLE_DETAIL[d.detail])
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
    if d.detail == "rbln_blocks":  # the blocks vllm-rbln allocated: a count the guard does not set
        return Stop(NOT_RELAXABLE_DETAIL["rbln_blocks"])
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
        if s.max_num_seqs is None:  # (a review: "cannot be halved further" where it is only unknown)
            return Stop("already eager, and the log does not show max-num-seqs: halve the one the profile sets, or "
                        "set it explicitly and start again")
        return _halve_seqs(s) or Stop("already eager, and max-num-seqs cannot be halved further")
    # a hybrid model's state blocks: vLLM's own count is the most max-num-seqs can be (config/compilation.py, 0.20+)
    # (each step is lower than the last: a later start that counts fewer blocks steps again)
    if d.detail == "mamba_blocks":
        blocks = n.get("mamba_blocks")
        if not blocks:
            return Stop("vLLM found room for no Mamba cache block after the weights: more GPU memory (a higher "
                        "gpu-memory-utilization, more GPUs) is what helps")
        if any(v is not None and blocks >= v for v in (n.get("max_num_seqs"), s.max_num_seqs)):
            return Stop(NOT_RELAXABLE_DETAIL["mamba_blocks"])
        return Step("max-num-seqs", int(blocks), f"vLLM counted {blocks} Mamba cache blocks, one per decode "
                    "sequence: max-num-seqs no higher")
    # Graph capture that cannot run here, where eager mode captures none and starts slower but serves: NCCL built
    # for CUDA before 11.3 or a driver before R465 (the library or driver is the fix the advice names), and
    # vllm-ascend 0.9-0.10's ACL graph mode with a DeepSeek model (its own message's advice: enforce_eager=True)
    if d.detail in _EAGER_RUNS and not s.enforce_eager:
        why, otherwise = _EAGER_RUNS[d.detail]
        if limits.allow_enforce_eager:
            return Step("enforce-eager", True, f"{why}: run without graphs")
        return Stop(f"{why}, and ladder.allow-enforce-eager is false: {otherwise}, or allow eager mode")
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
    # the kubelet or the platform restarts it, not the guard
    if d.cls == "startup_timeout" and d.detail not in ("startup_probe", "platform_start"):
        if unchanged_retries == 0:
            return Step(None, None, "start once more unchanged: a slow download or a cold cache can time out once")
        return Stop("the start timed out twice")
    if d.cls == "port_in_use" and unchanged_retries == 0 and (picked := _PICKED_PORT_RETRY.get(d.detail or "")):
        return Step(None, None, picked)
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
