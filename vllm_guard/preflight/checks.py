"""Pure: (profile, facts, memory estimate) -> findings. Every check runs; the CLI renders once.

Each check has a stable id, a status (pass, warn, fail, skip), what it measured,
what was required, and a one-line fix. Thresholds come from ``[guard.checks]``;
a profile may skip a check or downgrade its failure to a warning.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from vllm_guard.checkids import CHECK_IDS, GPU_DEPENDENT
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.preflight.memory import DEFAULT_UTILIZATION, GIB, MIB, Estimate, Params, estimate
from vllm_guard.proctitles import PRELOAD_NAME
from vllm_guard.profile.load import Profile, world_size

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

# Minimum compute capability of weight quantization methods, vLLM 0.33
# get_min_capability() (vllm-reference §2f); Marlin kernels need 8.0.
QUANT_MIN_CAPABILITY = {
    "fp8": 75, "awq": 75, "auto_awq": 75, "gptq": 60, "auto_gptq": 60, "moe_wna16": 70, "fbgemm_fp8": 80,
    "experts_int8": 80, "mxfp4": 80, "fp_quant": 100, "awq_marlin": 80, "gptq_marlin": 80,
}


@dataclass(frozen=True)
class Finding:
    id: str
    status: str
    message: str
    fix: str | None = None
    measured: dict[str, Any] = field(default_factory=dict)
    required: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # e.g. "downgraded by guard.checks.warn-only"

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "status": self.status, "message": self.message, "fix": self.fix,
             "measured": self.measured, "required": self.required}
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Context:
    profile: Profile
    facts: Facts
    params: Params
    estimate: Estimate | None

    @property
    def world_size(self) -> int:
        return world_size(self.profile)

    @property
    def target_gpus(self) -> tuple[Gpu, ...]:
        return self.facts.gpus[: self.world_size]

    def setting(self, key: str) -> Any:
        return self.profile.check_setting(key)


def gib(n: float | None) -> str:
    return "unknown" if n is None else f"{n / GIB:.2f} GiB"


def mib(n: float | None) -> str:
    return "unknown" if n is None else f"{n / MIB:,.0f} MiB"


# --- GPUs ---------------------------------------------------------------------


def check_gpu_present(c: Context) -> Finding:
    m = c.facts.machine
    build = c.facts.vllm_build
    if build is not None and build.is_cpu:
        return Finding("gpu.present", PASS, f"vLLM is a CPU build ({build.version or 'version unknown'}, from "
                       f"{build.source}): it runs on this host's CPUs, no GPU needed",
                       measured={"vllm_device": "cpu", "vllm_version": build.version})
    if not m.gpus:
        reason = "; ".join(m.notes) or "no NVIDIA GPU found"
        return Finding("gpu.present", FAIL, f"no GPU on {c.facts.machine_origin}: {reason}",
                       "install the NVIDIA driver, or plan against a GPU machine with --machine FILE",
                       {"gpus": 0}, {"gpus": ">= 1"})
    if not c.facts.gpus:
        wanted = c.profile.setting("gpus")
        joined = [w for w in wanted or () if isinstance(w, str) and "," in w]
        if joined:
            # gpus = "0,1" is one GPU name (a UUID would be a string), not CUDA_VISIBLE_DEVICES' list.
            items = ", ".join(v.strip() for v in joined[0].split(","))
            return Finding("gpu.present", FAIL, f"guard.gpus = {joined[0]!r} names one GPU called {joined[0]!r}; "
                           "no GPU has that name", f"write a list: gpus = [{items}]", {"visible_gpus": 0},
                           {"gpus": ">= 1"})
        return Finding("gpu.present", FAIL, "none of the machine's GPUs is selected for vLLM",
                       "check guard.gpus and CUDA_VISIBLE_DEVICES", {"visible_gpus": 0}, {"gpus": ">= 1"})
    names = sorted({g.name or "unknown GPU" for g in c.facts.gpus})
    return Finding("gpu.present", PASS, f"{len(c.facts.gpus)} GPU(s) visible to vLLM: {', '.join(names)}",
                   measured={"visible_gpus": len(c.facts.gpus)})


def check_gpu_count(c: Context) -> Finding:
    have, need = len(c.facts.gpus), c.world_size
    measured, required = {"visible_gpus": have}, {"world_size": need}
    if need <= have:
        unused = [g.index for g in c.facts.gpus[need:]]
        # vLLM uses the first world-size GPUs it sees; the others stay idle (say so: a listed GPU is not used).
        idle = f"; GPU {', '.join(map(str, unused))} stay{'s' if len(unused) == 1 else ''} unused" if unused else ""
        return Finding("gpu.count", PASS, f"world size {need} fits {have} visible GPU(s){idle}", None, measured,
                       required)
    return Finding(
        "gpu.count", FAIL,
        f"tensor x pipeline x data parallel = {need} GPUs, but vLLM will see {have}",
        (f"use --tensor-parallel-size {have} or fewer" if have > 1 else "use --tensor-parallel-size 1")
        + " (tensor x pipeline x data parallel at most the visible GPUs), or run multi-node with Ray "
        "(--distributed-executor-backend ray)", measured, required,
    )


def check_gpu_free_memory(c: Context) -> Finding:
    util = c.params.utilization or DEFAULT_UTILIZATION  # what vLLM will ask for, not what the estimate used
    margin = int(c.setting("free-memory-margin-mib")) * MIB
    short: list[tuple[Gpu, int, int]] = []
    measured: dict[str, Any] = {}
    for gpu in c.target_gpus:
        if gpu.memory_total_bytes is None or gpu.memory_free_bytes is None:
            return Finding("gpu.free_memory", SKIP, f"GPU {gpu.index}: free memory unknown", None)
        need = math.ceil(gpu.memory_total_bytes * util)  # vLLM 0.33 v1/worker/utils.py:761-770
        measured[f"gpu{gpu.index}_free_bytes"] = gpu.memory_free_bytes
        if gpu.memory_free_bytes < need + margin:
            short.append((gpu, need, gpu.memory_free_bytes))
    if not c.target_gpus:
        return Finding("gpu.free_memory", SKIP, "no target GPU")
    required = {"utilization": util, "margin_bytes": margin}
    if not short:
        return Finding("gpu.free_memory", PASS,
                       f"free memory covers utilization {util:g} on {len(c.target_gpus)} GPU(s)", None,
                       measured, required)
    fit_now = min(math.floor((free - margin) / g.memory_total_bytes * 100) / 100  # type: ignore[operator]
                  for g, _, free in short)
    lines = []
    for gpu, need, free in short:
        lines.append(f"GPU {gpu.index} has {gib(free)} free of {gib(gpu.memory_total_bytes)}, "
                     f"utilization {util:g} needs {gib(need)} + {mib(margin)} margin")
        holders = [p for p in gpu.processes or ()]
        holders.sort(key=lambda p: -(p.used_memory_bytes or 0))
        for p in holders:
            tag = " [orphaned VLLM::EngineCore: its unit needs KillMode=mixed]" if p.orphaned_vllm else (
                " [vLLM's weight daemon: it keeps weights resident on purpose; vllm serve --load-format "
                "ipc_cache maps them instead of loading a second copy]" if p.name == PRELOAD_NAME else "")
            lines.append(f"  pid {p.pid} {p.user or '?'} {p.name or '?'} {mib(p.used_memory_bytes)}{tag}")
        if gpu.processes is None:
            lines.append("  (the driver did not list the processes holding it)")
    fixes = []
    if fit_now > 0.05:
        fixes.append(f"--gpu-memory-utilization {fit_now:.2f} fits what is free now")
    own_orphans = [p for g, _, _ in short for p in g.processes or () if p.orphaned_vllm and c.facts.live
                   and p.user is not None and p.user == c.facts.user]
    if own_orphans:
        fixes.append("your orphaned vLLM engine(s) hold memory: kill " + " ".join(str(p.pid) for p in own_orphans))
    fixes.append("or wait until the other processes finish; never stop processes you do not own")
    measured["max_utilization_now"] = fit_now
    return Finding("gpu.free_memory", FAIL, "\n".join(lines), "; ".join(fixes), measured, required)


def check_gpu_dtype(c: Context) -> Finding:
    cc = _min_capability(c)
    if cc is None:
        return Finding("gpu.dtype", SKIP, "compute capability unknown")
    dtype = c.params.dtype
    model_dtype = c.facts.model.torch_dtype
    measured = {"compute_capability": f"{cc[0]}.{cc[1]}", "dtype": dtype}
    if cc >= (8, 0):
        return Finding("gpu.dtype", PASS, f"dtype {dtype} runs on compute capability {cc[0]}.{cc[1]}",
                       measured=measured)
    if dtype == "bfloat16":
        return Finding("gpu.dtype", FAIL, f"bfloat16 needs compute capability 8.0; this GPU has {cc[0]}.{cc[1]}",
                       "use --dtype half", measured, {"compute_capability": "8.0"})
    if dtype == "auto" and model_dtype == "bfloat16":
        return Finding("gpu.dtype", WARN, f"the model is bfloat16; on compute capability {cc[0]}.{cc[1]} vLLM "
                       "falls back to float16", "set --dtype half to make it explicit", measured)
    return Finding("gpu.dtype", PASS, f"dtype {dtype} runs on compute capability {cc[0]}.{cc[1]}",
                   measured=measured)


def check_gpu_kv_cache_dtype(c: Context) -> Finding:
    kv = c.params.kv_cache_dtype
    if not kv.startswith("fp8"):
        return Finding("gpu.kv_cache_dtype", PASS, f"KV cache dtype {kv}", measured={"kv_cache_dtype": kv})
    cc = _min_capability(c)
    if cc is None:
        return Finding("gpu.kv_cache_dtype", SKIP, "compute capability unknown")
    measured = {"kv_cache_dtype": kv, "compute_capability": f"{cc[0]}.{cc[1]}"}
    # vLLM 0.33 picks the attention backend; fp8 KV works natively from SM89 (vllm-reference §2f).
    if cc >= (8, 9):
        return Finding("gpu.kv_cache_dtype", PASS, f"{kv} KV cache is native on {cc[0]}.{cc[1]}", None, measured)
    if cc >= (8, 0):
        return Finding("gpu.kv_cache_dtype", WARN, f"{kv} KV cache on {cc[0]}.{cc[1]} works only through the "
                       "FlashInfer backend", "keep flashinfer installed, or use --kv-cache-dtype auto", measured,
                       {"compute_capability": "8.9 (native)"})
    return Finding("gpu.kv_cache_dtype", FAIL, f"{kv} KV cache needs compute capability 8.0; this GPU has "
                   f"{cc[0]}.{cc[1]}", "use --kv-cache-dtype auto", measured, {"compute_capability": "8.0"})


def check_gpu_quantization(c: Context) -> Finding:
    method = c.profile.value("quantization") or c.facts.model.quant_method
    if not method:
        return Finding("gpu.quantization", PASS, "no weight quantization")
    minimum = QUANT_MIN_CAPABILITY.get(str(method).lower())
    cc = _min_capability(c)
    if minimum is None or cc is None:
        return Finding("gpu.quantization", SKIP, f"{method}: minimum compute capability not known to the guard"
                       if minimum is None else "compute capability unknown")
    have = cc[0] * 10 + cc[1]
    # The table keeps vLLM's integer form (get_min_capability() returns 75 for 7.5); people read 7.5.
    shown_have, shown_min = f"{cc[0]}.{cc[1]}", f"{minimum // 10}.{minimum % 10}"
    measured, required = {"method": method, "compute_capability": shown_have}, {"compute_capability": shown_min}
    if have >= minimum:
        return Finding("gpu.quantization", PASS, f"{method} runs on compute capability {shown_have} "
                       f"(needs {shown_min})", None, measured, required)
    return Finding("gpu.quantization", FAIL, f"{method} needs compute capability {shown_min}; this GPU has "
                   f"{shown_have}",
                   "use a checkpoint in a format this GPU supports (e.g. GPTQ on older GPUs)", measured, required)


def _min_capability(c: Context) -> tuple[int, int] | None:
    caps = [g.compute_capability for g in c.target_gpus if g.compute_capability]
    return min(caps) if caps else None


# --- the model ----------------------------------------------------------------


def check_model_known(c: Context) -> Finding:
    m = c.facts.model
    if m.source == "unknown":
        local = m.model.startswith(("/", "./", "../", "~"))
        fix = ("give the directory that holds the model's config.json" if local else
               "check the id (and HF_TOKEN for a gated model); offline, give a directory holding its config.json")
        return Finding("model.facts", FAIL, f"nothing is known about {m.model}: " + "; ".join(m.notes), fix)
    return Finding("model.facts", PASS, f"{m.architecture or 'model'} from {m.source}"
                   + (f"; weights {gib(m.weights_bytes)} ({m.weights_source})" if m.weights_bytes else ""),
                   measured={"source": m.source, "weights_bytes": m.weights_bytes})


def _missing_gpus(c: Context) -> Finding | None:
    """A layout over more GPUs than vLLM will see has no per-GPU figures: they would be for GPUs not there."""
    have = len(c.facts.gpus)
    if c.world_size <= have:
        return None
    return Finding("", SKIP, f"the layout needs {c.world_size} GPUs and vLLM will see {have}: per-GPU memory is not "
                   "judged for GPUs that are not there (see gpu.count)")


def check_model_weights_fit(c: Context) -> Finding:
    if (missing := _missing_gpus(c)) is not None:
        return replace(missing, id="model.weights_fit")
    e = c.estimate
    if e is None or e.weights_bytes_per_gpu is None:
        return Finding("model.weights_fit", SKIP, "weight size or GPU memory unknown")
    room = e.budget_bytes - e.non_torch_bytes
    measured = {"weights_bytes_per_gpu": e.weights_bytes_per_gpu}
    required = {"budget_bytes": e.budget_bytes}
    if e.weights_bytes_per_gpu < room:
        return Finding("model.weights_fit", PASS, f"weights take {gib(e.weights_bytes_per_gpu)} of the "
                       f"{gib(e.budget_bytes)} budget per GPU", None, measured, required)
    total = c.facts.model.weights_bytes or 0
    tp_needed = next((t for t in (2, 4, 8) if total / t < room and t <= len(c.facts.gpus)), None)
    fix = "use a quantized checkpoint (AWQ, GPTQ or FP8)"
    if tp_needed:
        fix += f", or spread it over {tp_needed} GPUs with --tensor-parallel-size {tp_needed}"
    return Finding("model.weights_fit", FAIL, f"weights alone need {gib(e.weights_bytes_per_gpu)} per GPU; the "
                   f"budget is {gib(e.budget_bytes)}", fix, measured, required)


def check_model_kv_fit(c: Context) -> Finding:
    if (missing := _missing_gpus(c)) is not None:
        return replace(missing, id="model.kv_fit")
    e = c.estimate
    m = c.facts.model
    if e is None or e.kv_budget_bytes is None or e.kv_bytes_per_token is None or e.max_model_len is None:
        return Finding("model.kv_fit", SKIP, "KV budget unknown: " + ("; ".join(e.notes) if e else "no GPU"))
    need = e.kv_needed_bytes(m, c.params, e.max_model_len) or 0
    layer_page = need / max(math.ceil(e.max_model_len / e.block_size), 1)
    available = e.kv_budget_bytes - layer_page  # vLLM keeps one block back (the null block)
    measured = {"kv_budget_bytes": e.kv_budget_bytes, "kv_needed_bytes": need, "kv_tokens": e.kv_tokens,
                "max_concurrency": round(e.max_concurrency, 2) if e.max_concurrency is not None else None}
    required = {"max_model_len": e.max_model_len}
    if e.kv_budget_bytes <= 0:
        return Finding("model.kv_fit", FAIL, f"no memory left for the KV cache: weights, activations and CUDA "
                       f"graphs take all of the {gib(e.budget_bytes)} budget",
                       _no_kv_fix(c), measured, required)
    if need > available:
        fit = e.max_fitting_model_len or 0
        fix = f"--max-model-len {fit}" if fit > 0 else "no length fits"
        alternatives = _kv_alternatives(c, need)
        return Finding(
            "model.kv_fit", FAIL,
            f"one request of max-model-len {e.max_model_len:,} needs {gib(need)} of KV cache; "
            f"{gib(e.kv_budget_bytes)} is available. The largest max-model-len that fits is {fit:,}",
            "; ".join([fix, *alternatives]), {**measured, "max_fitting_model_len": fit}, required)
    concurrency = e.max_concurrency or 0.0
    message = (f"KV cache {gib(e.kv_budget_bytes)} = {e.kv_tokens:,} tokens; "
               f"{concurrency:.2f}x requests of {e.max_model_len:,} tokens fit at once")
    minimum = c.setting("min-concurrency")
    if minimum is not None and concurrency < minimum:
        return Finding("model.kv_fit", WARN, message + f", below guard.checks.min-concurrency {minimum:g}",
                       "lower --max-model-len, raise utilization, or use --kv-cache-dtype fp8 where supported",
                       measured, {**required, "min_concurrency": minimum})
    return Finding("model.kv_fit", PASS, message, None, measured, required)


def _kv_alternatives(c: Context, need: int) -> list[str]:
    e = c.estimate
    assert e is not None and e.kv_budget_bytes is not None
    out = []
    gpu = c.target_gpus[0] if c.target_gpus else None
    if gpu and gpu.memory_total_bytes and not e.kv_cache_memory_fixed:
        wanted = (e.budget_bytes + need - e.kv_budget_bytes) / gpu.memory_total_bytes
        wanted = math.ceil(wanted * 100) / 100
        free_util = (gpu.memory_free_bytes or 0) / gpu.memory_total_bytes
        if wanted <= min(0.95, free_util):
            out.append(f"or --gpu-memory-utilization {wanted:.2f} (the GPU has the memory free)")
    cc = _min_capability(c)
    if c.params.kv_cache_dtype == "auto" and cc is not None and cc >= (8, 9) and not c.facts.model.is_mla:
        out.append("or --kv-cache-dtype fp8 (halves the KV cache)")
    return out


def _no_kv_fix(c: Context) -> str:
    steps = ["lower --max-num-batched-tokens"]
    if not c.params.enforce_eager:
        steps.append("--enforce-eager (no CUDA graphs)")
    steps.append("or a quantized checkpoint")
    return ", ".join(steps)


def check_model_max_len(c: Context) -> Finding:
    m = c.facts.model
    length = c.estimate.max_model_len if c.estimate else c.params.max_model_len
    derived = m.derived_max_len
    if derived is None or length is None or length == -1:
        return Finding("model.max_len", SKIP, "derived maximum length unknown")
    measured, required = {"max_model_len": length}, {"derived_max_len": derived}
    if length <= derived:
        return Finding("model.max_len", PASS, f"max-model-len {length:,} <= the model's {derived:,} "
                       f"({m.derived_max_len_key})", None, measured, required)
    if c.facts.environ_allows_long_len:
        return Finding("model.max_len", WARN, f"max-model-len {length:,} exceeds the model's {derived:,}; allowed "
                       "by VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "expect poor quality past the trained length",
                       measured, required)
    return Finding("model.max_len", FAIL, f"max-model-len {length:,} exceeds the model's derived maximum {derived:,} "
                   f"({m.derived_max_len_key}); vLLM refuses it", f"--max-model-len {derived}", measured, required)


def check_model_tp_divisible(c: Context) -> Finding:
    m = c.facts.model
    tp = c.params.tensor_parallel_size
    if m.num_attention_heads is None:
        return Finding("model.tp_divisible", SKIP, "attention head count unknown")
    measured = {"attention_heads": m.num_attention_heads, "kv_heads": m.num_kv_heads, "tensor_parallel": tp}
    valid = [t for t in (1, 2, 4, 8, 16) if m.num_attention_heads % t == 0]
    if m.num_attention_heads % tp:
        return Finding("model.tp_divisible", FAIL, f"attention heads ({m.num_attention_heads}) are not divisible "
                       f"by tensor parallel size ({tp})",
                       f"use --tensor-parallel-size in {valid}", measured)
    kv = m.num_kv_heads
    if kv and not m.is_mla and ((tp >= kv and tp % kv) or (tp < kv and kv % tp)):
        return Finding("model.tp_divisible", FAIL, f"KV heads ({kv}) can be neither split nor replicated over "
                       f"{tp} GPUs", f"use --tensor-parallel-size in {valid}", measured)
    group = m.quant_group_size
    if group and group > 0 and m.intermediate_size and (m.intermediate_size // tp) % group:
        return Finding("model.tp_divisible", FAIL, f"the MLP input per GPU ({m.intermediate_size // tp}) is not a "
                       f"whole number of quantization groups ({group})", "use a smaller --tensor-parallel-size",
                       measured)
    return Finding("model.tp_divisible", PASS, f"heads split evenly over tensor parallel size {tp}", None, measured)


# --- the host -------------------------------------------------------------------


def cpu_kv_cache_bytes(c: Context) -> tuple[int | None, str]:
    """The KV cache a CPU build of vLLM allocates in host memory, and where that figure comes from.

    vLLM 0.32's CPU worker (cpu_worker.py) takes VLLM_CPU_KVCACHE_SPACE (GiB) over --kv-cache-memory-bytes
    when both are set (seen with the real engine); without either it reserves --gpu-memory-utilization of
    the NUMA node's memory, which the guard does not model.
    """
    space = c.profile.env.get("VLLM_CPU_KVCACHE_SPACE") or c.facts.environ_cpu_kvcache_space
    with contextlib.suppress(ValueError):
        if space and float(space) > 0:
            return int(float(space) * GIB), f"VLLM_CPU_KVCACHE_SPACE={space}"
    explicit = c.profile.value("kv_cache_memory_bytes")
    if explicit:
        return int(explicit), f"--kv-cache-memory-bytes {explicit}"
    return None, "vLLM reserves --gpu-memory-utilization of the NUMA node's memory"


def check_host_ram(c: Context) -> Finding:
    h = c.facts.machine.host
    weights = c.facts.model.weights_bytes
    have = h.effective_memory_available_bytes
    if weights is None or have is None:
        return Finding("host.ram", SKIP, "weight size or host memory unknown")
    factor = float(c.setting("host-ram-factor"))
    need = int(weights * factor)
    build = c.facts.vllm_build
    if build is not None and build.is_cpu:
        # A CPU build keeps the weights and the KV cache in host memory for as long as it serves.
        kv, where = cpu_kv_cache_bytes(c)
        need = max(need, weights + (kv or 0))
        cpu_required: dict[str, Any] = {"bytes": need, "kv_cache_bytes": kv}
        measured = {"available_bytes": have}
        text = f"weights {gib(weights)} + KV cache {gib(kv) if kv is not None else 'not counted'} ({where})"
        if have >= need:
            return Finding("host.ram", PASS, f"{gib(have)} available >= {text}", None, measured, cpu_required)
        return Finding("host.ram", FAIL, f"{gib(have)} host memory available; a CPU build of vLLM holds {text} "
                       f"= {gib(need)}", "lower --kv-cache-memory-bytes (or VLLM_CPU_KVCACHE_SPACE), or free "
                       "host memory", measured, cpu_required)
    limited = h.cgroup_memory_limit_bytes is not None and have < (h.memory_available_bytes or 0)
    where = " (cgroup limit: Docker --memory or systemd MemoryMax=)" if limited else ""
    # Graded: vLLM 0.33 memory-maps safetensors by default (--safetensors-load-strategy unset = lazy mmap,
    # config/load.py; vllm-project/vllm#24469), so loading needs the weights' pages plus the processes' own
    # memory, not two copies. A whole file that cannot be mapped fails with "unable to mmap ... Cannot allocate
    # memory" (vllm-project/vllm#759). Below that: fail. Between that and factor x weights (the seed guide's
    # rule): warn, loading works but leaves no room for the page cache or a neighbour's growth.
    floor = weights + HOST_RAM_LOAD_MARGIN_BYTES
    why_floor = f"the weights plus {gib(HOST_RAM_LOAD_MARGIN_BYTES)} for the processes themselves"
    if c.profile.value("safetensors_load_strategy") == "eager":
        # Eager loading reads the files into memory instead of mapping them: no graded band.
        floor, why_floor = max(floor, need), f"{factor:g} x weights: --safetensors-load-strategy eager reads them"
    measured = {"available_bytes": have}
    required = {"bytes": need, "factor": factor, "minimum_bytes": floor}
    fix = "raise the limit (docker run --memory, systemd MemoryMax=), add swap, or free host memory"
    if have >= need:
        return Finding("host.ram", PASS, f"{gib(have)} available{where} >= {factor:g} x weights {gib(weights)}",
                       None, measured, required)
    if have >= floor:
        return Finding("host.ram", WARN, f"{gib(have)} available{where}: enough to load {gib(weights)} of "
                       f"safetensors weights, which vLLM memory-maps ({gib(floor)} with the processes' own "
                       f"memory), but below {factor:g} x weights = {gib(need)}: no room left for the page cache "
                       "or another process", fix, measured, required)
    return Finding("host.ram", FAIL, f"{gib(have)} host memory available{where}; loading {gib(weights)} of "
                   f"weights needs at least {gib(floor)} ({why_floor}); the kernel OOM killer ends vLLM without a "
                   "message", fix,
                   measured, required)


# Host memory of vLLM's processes besides the mapped weights: the API server and the engine core, each with
# Python, torch and the CUDA runtime loaded. An allowance, not a measurement of vLLM 0.33.
HOST_RAM_LOAD_MARGIN_BYTES = 3 * GIB


def check_host_shm(c: Context) -> Finding:
    free = c.facts.machine.host.shm_free_bytes
    if free is None:
        return Finding("host.shm", SKIP, "/dev/shm not found")
    parallel = c.params.tensor_parallel_size * c.params.pipeline_parallel_size > 1
    fail_at, warn_at = int(c.setting("shm-fail-mib")) * MIB, int(c.setting("shm-warn-mib")) * MIB
    measured = {"shm_free_bytes": free}
    fix = "docker run --ipc=host, or --shm-size=8g"
    if parallel and free < fail_at:
        return Finding("host.shm", FAIL, f"/dev/shm has {mib(free)} free; tensor parallel needs about 200 MiB for "
                       "vLLM's ring buffers plus NCCL (Docker's default is 64 MiB)", fix, measured,
                       {"shm_free_bytes": fail_at})
    if free < (warn_at if parallel else fail_at):
        return Finding("host.shm", WARN, f"/dev/shm has only {mib(free)} free", fix, measured,
                       {"shm_free_bytes": warn_at})
    return Finding("host.shm", PASS, f"/dev/shm has {mib(free)} free", None, measured)


def check_host_disk(c: Context) -> Finding:
    m = c.facts.model
    if m.weights_local:
        return Finding("host.disk", PASS, "the weights are already on local disk")
    disks = c.facts.machine.host.disks
    path = c.profile.value("download_dir") or (disks[0].path if disks else None)
    disk = c.facts.machine.host.disk_for(path) if path else None
    if m.weights_bytes is None or disk is None or disk.free_bytes is None:
        return Finding("host.disk", SKIP, "weight size or free disk unknown")
    need = int(m.weights_bytes * (1 + float(c.setting("disk-headroom"))))
    measured, required = {"free_bytes": disk.free_bytes, "path": path}, {"bytes": need}
    if disk.free_bytes >= need:
        return Finding("host.disk", PASS, f"{gib(disk.free_bytes)} free at {path} for {gib(m.weights_bytes)} "
                       "of weights", None, measured, required)
    status = FAIL if m.weights_local is False else WARN
    return Finding("host.disk", status, f"{gib(disk.free_bytes)} free at {path}; downloading the weights needs "
                   f"{gib(need)}" + ("" if status == FAIL else " (if they are not there yet)"),
                   "free disk space, or point --download-dir (or HF_HOME) at a larger disk", measured, required)


def check_host_nofile(c: Context) -> Finding:
    soft = c.facts.machine.host.nofile_soft_limit
    minimum = int(c.setting("nofile-min"))
    if soft is None:
        return Finding("host.nofile", PASS, "no limit on open files")
    if soft < minimum:
        return Finding("host.nofile", WARN, f"the open-files soft limit is {soft:,}; many concurrent connections "
                       f"need more", "LimitNOFILE=65536 in the unit, or ulimit -n 65536",
                       {"nofile": soft}, {"nofile": minimum})
    return Finding("host.nofile", PASS, f"open-files soft limit {soft:,}", None, {"nofile": soft})


def check_net_port(c: Context) -> Finding:
    if not c.facts.live:
        return Finding("net.port", SKIP, "port availability is not part of a machine snapshot")
    uds = c.profile.value("uds")
    where = uds or f"{c.profile.value('host') or '0.0.0.0'}:{c.profile.value('port') or 8000}"
    if c.facts.port_free is None:
        return Finding("net.port", SKIP, f"could not tell whether {where} is free")
    if c.facts.port_free:
        return Finding("net.port", PASS, f"{where} is free", measured={"address": where})
    return Finding("net.port", FAIL, f"{where} is already in use", "choose another --port, or stop the server "
                   "that holds it (`ss -ltnp` shows it)", {"address": where})


def check_vllm_executable(c: Context) -> Finding:
    name = str(c.profile.setting("vllm"))
    if not c.facts.live:
        return Finding("vllm.executable", SKIP, "the vLLM executable is checked on the machine that runs it")
    if c.facts.vllm_path is None:
        return Finding("vllm.executable", FAIL, f"the vLLM executable {name!r} was not found",
                       "pip install vllm, or set guard.vllm (or VLLMGUARD_VLLM_BIN) to its path")
    return Finding("vllm.executable", PASS, f"vLLM at {c.facts.vllm_path}", measured={"path": c.facts.vllm_path})


CHECKS: tuple[Callable[[Context], Finding], ...] = (
    check_gpu_present, check_gpu_count, check_gpu_free_memory, check_model_known, check_model_weights_fit,
    check_model_kv_fit, check_model_max_len, check_model_tp_divisible, check_gpu_dtype, check_gpu_kv_cache_dtype,
    check_gpu_quantization, check_host_ram, check_host_shm, check_host_disk, check_net_port, check_host_nofile,
    check_vllm_executable,
)


def run_checks(profile: Profile, facts: Facts, params: Params, estimate: Estimate | None) -> list[Finding]:
    """Run every check, then apply the profile's skip and warn-only lists."""
    ctx = Context(profile, facts, params, estimate)
    skip = set(profile.check_setting("skip"))
    warn_only = set(profile.check_setting("warn-only"))
    findings = []
    cpu_build = facts.vllm_build is not None and facts.vllm_build.is_cpu
    no_gpu = not facts.gpus or cpu_build
    for check, check_id in zip(CHECKS, CHECK_IDS, strict=True):
        if no_gpu and check_id in GPU_DEPENDENT and check_id not in skip:
            why = "a CPU build of vLLM uses no GPU" if cpu_build else "no GPU to check against"
            findings.append(Finding(check_id, SKIP, why))
            continue
        findings.append(settle(check_id, partial(check, ctx), skip, warn_only))
    return findings


def settle(check_id: str, run: Callable[[], Finding], skip: set[str], warn_only: set[str]) -> Finding:
    """One check under the profile's guard.checks lists: not run when skipped, a warning when warn-only."""
    if check_id in skip:
        return Finding(check_id, SKIP, "skipped by guard.checks.skip")
    finding = run()
    if finding.status == FAIL and check_id in warn_only:
        finding = replace(finding, status=WARN, note="downgraded from fail by guard.checks.warn-only")
    return finding


def verdict(findings: list[Finding]) -> str:
    statuses = {f.status for f in findings}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else PASS


@dataclass(frozen=True)
class Preflight:
    profile: Profile  # with max-model-len = "auto" resolved to a number
    params: Params
    estimate: Estimate | None
    findings: list[Finding]
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return verdict(self.findings)


def preflight(profile: Profile, facts: Facts) -> Preflight:
    """Estimate memory, resolve max-model-len "auto", and run every check."""
    notes: list[str] = []
    params = Params.from_values(profile.value, profile.is_set)
    target = facts.gpus[: world_size(profile)]
    sized = [g for g in target if g.memory_total_bytes]
    gpu = min(sized, key=lambda g: g.memory_total_bytes or 0) if sized else None
    requested = params.utilization
    can_have = available_utilization(target, int(profile.check_setting("free-memory-margin-mib")) * MIB)
    if can_have is not None and can_have < (requested or DEFAULT_UTILIZATION):
        # Other processes hold memory: vLLM would refuse to start at the requested utilization, so every
        # memory check (weights, activations, graphs, KV) is judged at what can be had.
        params = replace(params, utilization=max(can_have, 0.0))
        notes.append(f"other processes hold GPU memory: the memory checks use utilization {max(can_have, 0.0):.2f}, "
                     f"what is free now, not {requested or DEFAULT_UTILIZATION:g}")
    est = estimate(facts.model, gpu, params) if gpu is not None else None
    if params.max_model_len == -1:
        profile, params, est, note = _resolve_auto(profile, facts, params, est, gpu)
        notes.append(note)
    params = replace(params, utilization=requested)
    return Preflight(profile, params, est, run_checks(profile, facts, params, est), tuple(notes))


def available_utilization(gpus: tuple[Gpu, ...], margin_bytes: int) -> float | None:
    """The highest --gpu-memory-utilization (in hundredths) that the free memory of every GPU allows, less the
    margin; None when a GPU's memory is unknown. Can be 0 or below when a GPU is full."""
    fractions = []
    for g in gpus:
        if not g.memory_total_bytes or g.memory_free_bytes is None:
            return None
        fractions.append(math.floor((g.memory_free_bytes - margin_bytes) / g.memory_total_bytes * 100) / 100)
    return min(fractions) if fractions else None


def _resolve_auto(
    profile: Profile, facts: Facts, params: Params, est: Estimate | None, gpu: Gpu | None
) -> tuple[Profile, Params, Estimate | None, str]:
    """max-model-len "auto" (or -1) stays vLLM's: vLLM fits it exactly after loading. The checks judge
    the length the guard predicts vLLM will choose; only guard.max-model-len-cap below that prediction
    makes the guard pass vLLM a number (the cap)."""
    derived = facts.model.derived_max_len
    if est is None or gpu is None or est.max_model_len is None:
        return profile, params, est, 'max-model-len "auto": vLLM will fit it; the guard could not predict it here'
    length = est.max_model_len
    why = f"the longest that fits the predicted KV cache ({est.max_fitting_model_len})"
    if derived is not None and length >= derived:
        why = f"the model's own maximum ({derived})"
    cap = profile.setting("max-model-len-cap")
    if cap is not None and length > cap:
        profile = profile.with_value("max_model_len", cap)
        params = replace(params, max_model_len=cap)
        return (profile, params, estimate(facts.model, gpu, params),
                f'max-model-len "auto": vLLM would choose about {length} ({why}); guard.max-model-len-cap passes '
                f"{cap} instead")
    params = replace(params, max_model_len=length)
    return (profile, params, estimate(facts.model, gpu, params),
            f'max-model-len "auto" passed to vLLM, which fits it after loading; the guard predicts about {length}: '
            f"{why}")
