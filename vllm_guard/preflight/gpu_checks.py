"""Checks of the GPUs: present, enough of them, free memory, compute capability for dtype, fp8 KV, quantization."""

from __future__ import annotations

import math
from typing import Any

from vllm_guard.facts.machine import Gpu
from vllm_guard.preflight.findings import FAIL, PASS, SKIP, WARN, Context, Finding, gib, mib
from vllm_guard.preflight.memory import DEFAULT_UTILIZATION, MIB
from vllm_guard.preflight.memory_params import FLOAT32
from vllm_guard.proctitles import PRELOAD_NAME

# Minimum compute capability of weight quantization methods, vLLM 0.33
# get_min_capability() (vllm-reference §2f); Marlin kernels need 8.0.
QUANT_MIN_CAPABILITY = {
    "fp8": 75, "awq": 75, "auto_awq": 75, "gptq": 60, "auto_gptq": 60, "moe_wna16": 70, "fbgemm_fp8": 80,
    "experts_int8": 80, "mxfp4": 80, "fp_quant": 100, "awq_marlin": 80, "gptq_marlin": 80,
}


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
    tp = c.params.tensor_parallel_size
    others = max(need // max(tp, 1), 1)  # pipeline x data parallel, kept as written
    sizes = [t for t in (16, 8, 4, 2, 1) if t < tp and t * others <= have]
    return Finding(
        "gpu.count", FAIL,
        f"tensor x pipeline x data parallel = {need} GPUs, but vLLM will see {have}",
        (f"use --tensor-parallel-size {have} or fewer" if have > 1 else "use --tensor-parallel-size 1")
        + " (tensor x pipeline x data parallel at most the visible GPUs), or run multi-node with Ray "
        "(--distributed-executor-backend ray)", measured, required,
        options=tuple(({"tensor_parallel_size": t}, "fits the visible GPUs") for t in sizes),
        advice="or more GPUs (guard.gpus, or \"auto\"), or run multi-node with Ray "
        "(--distributed-executor-backend ray)",
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
    fixes, advice = [], []
    options: tuple[tuple[dict[str, Any], str], ...] = ()
    if fit_now > 0.05:
        fixes.append(f"--gpu-memory-utilization {fit_now:.2f} fits what is free now")
        options = (({"gpu_memory_utilization": fit_now}, "fits what is free now"),)
    own_orphans = [p for g, _, _ in short for p in g.processes or () if p.orphaned_vllm and c.facts.live
                   and p.user is not None and p.user == c.facts.user]
    if own_orphans:
        advice.append("your orphaned vLLM engine(s) hold memory: kill " + " ".join(str(p.pid) for p in own_orphans))
    advice.append("or wait until the other processes finish; never stop processes you do not own")
    measured["max_utilization_now"] = fit_now
    return Finding("gpu.free_memory", FAIL, "\n".join(lines), "; ".join(fixes + advice), measured, required,
                   options=options, advice="; ".join(advice))


def check_gpu_dtype(c: Context) -> Finding:
    method = c.params.quantization or c.facts.model.quant_method
    if refuses_float32(c.params.dtype, method):
        # vLLM checks quant_config.get_supported_act_dtypes() before loading: "torch.float32 is not supported for
        # quantization method fp8. Supported dtypes: [torch.bfloat16, torch.float16]"
        return Finding("gpu.dtype", FAIL, f"{method} runs with bfloat16 or float16 activations only; vLLM refuses "
                       f"--dtype {c.params.dtype} with it", "drop --dtype float32 (the model's own 16 bits)",
                       {"method": method, "dtype": c.params.dtype}, {"dtype": "bfloat16 or float16"},
                       options=(({"dtype": "auto"}, "the model's own 16 bits"),))
    cc = min_capability(c)
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
                       "use --dtype half", measured, {"compute_capability": "8.0"},
                       options=(({"dtype": "half"}, "float16 runs there"),))
    if dtype == "auto" and model_dtype == "bfloat16":
        return Finding("gpu.dtype", WARN, f"the model is bfloat16; on compute capability {cc[0]}.{cc[1]} vLLM "
                       "falls back to float16", "set --dtype half to make it explicit", measured)
    return Finding("gpu.dtype", PASS, f"dtype {dtype} runs on compute capability {cc[0]}.{cc[1]}",
                   measured=measured)


# KV dtypes every GPU vLLM runs on stores: the model's own (auto; gpu.dtype checks it) and float16. bfloat16 needs
# compute capability 8.0, as a bfloat16 model does (vllm-reference §2e).
PLAIN_KV_DTYPES = ("auto", "float16", "half")


def check_gpu_kv_cache_dtype(c: Context) -> Finding:
    kv = c.params.kv_cache_dtype
    if kv in PLAIN_KV_DTYPES:
        return Finding("gpu.kv_cache_dtype", PASS, f"KV cache dtype {kv}", measured={"kv_cache_dtype": kv})
    if kv != "bfloat16" and not kv.startswith("fp8"):
        # 4-bit and per-token-head caches (nvfp4, int4_per_token_head, turboquant_*): which GPUs and attention
        # backends run them is not in the guard's table, so it says so rather than pass them
        return Finding("gpu.kv_cache_dtype", SKIP, f"KV cache dtype {kv}: the GPUs and attention backends it runs "
                       "on are not known to the guard", measured={"kv_cache_dtype": kv})
    cc = min_capability(c)
    if cc is None:
        return Finding("gpu.kv_cache_dtype", SKIP, "compute capability unknown")
    measured = {"kv_cache_dtype": kv, "compute_capability": f"{cc[0]}.{cc[1]}"}
    if kv == "bfloat16":
        if cc >= (8, 0):
            return Finding("gpu.kv_cache_dtype", PASS, f"bfloat16 KV cache on {cc[0]}.{cc[1]}", None, measured)
        return Finding("gpu.kv_cache_dtype", WARN, f"a bfloat16 KV cache on compute capability {cc[0]}.{cc[1]}: "
                       "bfloat16 needs 8.0", "use --kv-cache-dtype auto or float16", measured,
                       {"compute_capability": "8.0"})
    # vLLM 0.33 picks the attention backend; fp8 KV works natively from SM89 (vllm-reference §2f).
    if cc >= (8, 9):
        return Finding("gpu.kv_cache_dtype", PASS, f"{kv} KV cache is native on {cc[0]}.{cc[1]}", None, measured)
    if cc >= (8, 0):
        return Finding("gpu.kv_cache_dtype", WARN, f"{kv} KV cache on {cc[0]}.{cc[1]} works only through the "
                       "FlashInfer backend", "keep flashinfer installed, or use --kv-cache-dtype auto", measured,
                       {"compute_capability": "8.9 (native)"})
    return Finding("gpu.kv_cache_dtype", FAIL, f"{kv} KV cache needs compute capability 8.0; this GPU has "
                   f"{cc[0]}.{cc[1]}", "use --kv-cache-dtype auto", measured, {"compute_capability": "8.0"},
                   options=(({"kv_cache_dtype": "auto"}, "the model's own dtype"),))


def check_gpu_quantization(c: Context) -> Finding:
    method = c.profile.value("quantization") or c.facts.model.quant_method
    if not method:
        return Finding("gpu.quantization", PASS, "no weight quantization")
    minimum = QUANT_MIN_CAPABILITY.get(str(method).lower())
    cc = min_capability(c)
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


# Weight quantizations whose config answers get_supported_act_dtypes() with bfloat16 and half only (vLLM 0.33:
# Fp8Config, ExpertsInt8Config and the online shorthands' OnlineQuantizationConfig, online/base.py).
HALF_ACTIVATIONS_ONLY = frozenset(("fp8", "experts_int8", "online", "fp8_per_tensor", "fp8_per_block",
                                   "fp8_per_channel", "int8_per_channel_weight_only", "mxfp8", "nvfp4_per_token"))


def refuses_float32(dtype: str, method: str | None) -> bool:
    """Whether vLLM refuses this --dtype with this weight quantization (float32 activations: see above)."""
    return dtype in FLOAT32 and str(method or "").lower() in HALF_ACTIVATIONS_ONLY


def min_capability(c: Context) -> tuple[int, int] | None:
    caps = [g.compute_capability for g in c.target_gpus if g.compute_capability]
    return min(caps) if caps else None


# vLLM's custom all-reduce writes into the other GPUs' memory over CUDA peer access; where P2P is missing
# or broken, its initialisation (and NCCL's P2P transport) is where PCIe boxes hang at start-up (vllm
# issues #31276, #33041). The guard's ladder retries such a hang once with both switched off.
P2P_FIX = ("start with --disable-custom-all-reduce (vLLM's custom all-reduce needs P2P between every pair of GPUs), "
           "and set NCCL_P2P_DISABLE=1 if NCCL hangs at init; on an nccl_init or custom_allreduce hang the guard "
           "retries once with both")


def check_gpu_p2p(c: Context) -> Finding:
    build = c.facts.vllm_build
    if build is not None and build.is_cpu:
        return Finding("gpu.p2p", SKIP, "a CPU build of vLLM uses no GPU")
    layout = [g.index for g in c.target_gpus]
    if c.world_size < 2:
        return Finding("gpu.p2p", SKIP, "one GPU in the layout: no peer-to-peer traffic")
    if len(layout) < 2:
        return Finding("gpu.p2p", SKIP, "peer-to-peer unknown: fewer than two GPUs to check against")
    if c.facts.machine.p2p is None:
        why = "; ".join(n for n in c.facts.machine.notes if "peer-to-peer" in n) or "not recorded"
        return Finding("gpu.p2p", SKIP, f"peer-to-peer unknown on {c.facts.machine_origin}: {why}")
    pairs = [(a, b) for n, a in enumerate(layout) for b in layout[n + 1:]]
    links = {pair: c.facts.machine.p2p_link(*pair) for pair in pairs}
    measured: dict[str, Any] = {f"gpu{a}_gpu{b}": link.read if link else None for (a, b), link in links.items()}
    missing = [(pair, link) for pair, link in links.items() if link is not None and link.read == "not supported"]
    unknown = [pair for pair, link in links.items() if link is None or link.read is None]
    if missing:
        said = ", ".join(f"GPU {a}-{b} ({link.reason or 'not supported'})" for (a, b), link in missing)
        return Finding("gpu.p2p", WARN, f"no peer-to-peer between {said}", P2P_FIX, measured,
                       {"p2p_read": "ok between every pair of the layout"})
    if unknown:
        said = ", ".join(f"GPU {a}-{b}" for a, b in unknown)
        return Finding("gpu.p2p", SKIP, f"peer-to-peer unknown between {said}", None, measured)
    nvlink = all(link is not None and link.nvlink == "ok" for link in links.values())
    # Without NVLink between all pairs, vLLM turns custom all-reduce off itself beyond two GPUs
    # (custom_all_reduce.py: "not supported on more than two PCIe-only GPUs").
    over = "NVLink" if nvlink else "PCIe (no NVLink between every pair)"
    return Finding("gpu.p2p", PASS, f"peer-to-peer between all {len(layout)} GPUs of the layout, over {over}",
                   None, {**measured, "nvlink_all_pairs": nvlink})
