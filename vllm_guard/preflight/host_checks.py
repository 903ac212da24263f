"""Checks of the host: RAM against the weights, /dev/shm, disk, open files, the port and the vLLM executable."""

from __future__ import annotations

import contextlib
import math
from typing import Any

from vllm_guard.preflight.findings import FAIL, PASS, SKIP, WARN, Context, Finding, gib, mib
from vllm_guard.preflight.memory import GIB, MIB

# --- the host -------------------------------------------------------------------

CPU_DEFAULT_UTILIZATION = 0.92  # vLLM 0.32's --gpu-memory-utilization default, the same on the CPU backend


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


def _cpu_node_short(c: Context) -> Finding | None:
    """A CPU build refuses to start when its NUMA node has less available than utilization x the node's memory.

    vLLM 0.32 cpu_worker.py: without --kv-cache-memory-bytes (VLLM_CPU_KVCACHE_SPACE sets it, platforms/cpu.py)
    it requests ceil(total x --gpu-memory-utilization) of the node it binds to and raises "Available memory on
    node 0 (6.88/8.21 GiB) on startup is less than desired CPU memory utilization (0.92, 7.56 GiB)"; both
    figures are clamped to the cgroup's limit (get_memory_node_info). Not a prediction: the same arithmetic."""
    h = c.facts.machine.host
    total, available = h.node_memory_total_bytes, h.node_memory_available_bytes
    if total is None or available is None:
        total, available = h.memory_total_bytes, h.memory_available_bytes  # no NUMA: vLLM uses the host's
    kv, _ = cpu_kv_cache_bytes(c)
    if total is None or available is None or kv is not None:
        return None
    if h.cgroup_memory_limit_bytes is not None and h.cgroup_memory_limit_bytes < total:
        total = h.cgroup_memory_limit_bytes
        available = max(0, min(available, total - (h.cgroup_memory_usage_bytes or 0)))
    util = float(c.profile.value("gpu_memory_utilization") or CPU_DEFAULT_UTILIZATION)  # the table's default
    requested = math.ceil(total * util)
    if requested <= available:
        return None
    fits = math.floor(available / total * 100) / 100
    fix = (f"--gpu-memory-utilization {fits:.2f} (on a CPU build it is the fraction of the node's memory), "
           "or set --kv-cache-memory-bytes (VLLM_CPU_KVCACHE_SPACE), or free host memory") if fits >= 0.05 else \
        "free host memory, or set --kv-cache-memory-bytes (VLLM_CPU_KVCACHE_SPACE)"
    return Finding("host.ram", FAIL, f"the CPU build reserves utilization {util:g} of its NUMA node's memory, "
                   f"{gib(requested)} of {gib(total)}, but {gib(available)} is available: vLLM refuses to start "
                   "(\"less than desired CPU memory utilization\")", fix,
                   {"node_available_bytes": available, "node_total_bytes": total},
                   {"bytes": requested, "utilization": util})


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
        short = _cpu_node_short(c)
        if short is not None:
            return short
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
    measured = {"free_bytes": disk.free_bytes, "path": path, "weights_source": m.weights_source}
    required = {"bytes": need}
    # The size compared is the repository's own when known: the Hub's safetensors metadata (a model not yet
    # in the cache) or its index; "estimate" is the bundled table's, said so in the message.
    said = {"hub-metadata": " (the Hub's safetensors metadata)", "estimate": " (estimated)"}.get(
        m.weights_source or "", "")
    if disk.free_bytes >= need:
        return Finding("host.disk", PASS, f"{gib(disk.free_bytes)} free at {path} for {gib(m.weights_bytes)} "
                       f"of weights{said}", None, measured, required)
    status = FAIL if m.weights_local is False else WARN
    return Finding("host.disk", status, f"{gib(disk.free_bytes)} free at {path}; downloading the weights needs "
                   f"{gib(need)}{said}" + ("" if status == FAIL else " (if they are not there yet)"),
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
