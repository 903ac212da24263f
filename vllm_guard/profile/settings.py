"""The guard's own settings ([guard], [ladder], [guard.checks]): names, defaults, types, and their parsers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vllm_guard.options.values import ValueProblem

ENV_PREFIX = "VLLMGUARD_"
MISSING: Any = object()


@dataclass(frozen=True)
class Setting:
    """One key of ``[guard]`` or its sub-tables: its type, default and meaning."""

    kind: str  # str | bool | int | float | gpus | str_list | len | duration | choice | address
    default: Any
    help: str
    env: str | None = None
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    maximum: float | None = None

    @property
    def upper(self) -> float | None:
        """The largest value accepted: ``maximum``, else a week for a duration (1e308 s passed once, and then an
        OverflowError or a wait that never ends), else a bound far above any use for the other numbers."""
        if self.maximum is not None:
            return self.maximum
        return {"duration": DURATION_MAX_S, "int": INT_MAX, "len": INT_MAX, "float": FLOAT_MAX}.get(self.kind)


DURATION_MAX_S = 7 * 86400.0  # a week: above any start-up, wait or stop a person would set, far below overflow
INT_MAX = 2**31 - 1  # what a C int (and vLLM's own int options) hold
FLOAT_MAX = 1e6


# The guard's own settings. Each later capability adds the keys it uses, here.
GUARD_SETTINGS: dict[str, Setting] = {
    "vllm": Setting("str", "vllm", "vLLM executable: a name on PATH or a path", env="VLLMGUARD_VLLM_BIN"),
    "gpus": Setting("gpus", None, 'GPUs to use: NVML indices or UUIDs, or "auto" (the idlest the layout needs, '
                    "chosen under the launch locks); default: all that vLLM would see", env="VLLMGUARD_GPUS"),
    "allow-unknown-vllm-options": Setting(
        "bool", False, "pass [vllm] keys that vLLM 0.33 does not know (for a newer vLLM)"
    ),
    "max-model-len-cap": Setting("len", None, 'upper bound for max-model-len = "auto"', minimum=1),
    "mode": Setting("choice", "supervise", "supervise (ladder, supervision) or exec (replace the guard by vLLM)",
                    choices=("supervise", "exec")),
    "startup-timeout": Setting("duration", 1800.0, "seconds (or \"30m\") from launch until /health must answer",
                               minimum=1),
    "stall-timeout": Setting("duration", None, "seconds without progress (a new phase, a new kind of log line, a "
                             "bar that moves, download bytes, GPU memory) after which a start is hung; default per "
                             "stage: 300, downloads 600, graph capture 600, weights and compile 900",
                             minimum=1),
    "download": Setting("bool", True, "fetch a Hub model that is not in the cache before vLLM starts, with "
                        "progress lines off a terminal; meaningless for a local path"),
    "stop-timeout": Setting("duration", 30.0, "seconds between SIGTERM and SIGKILL when stopping vLLM", minimum=0),
    "attempt-log": Setting("str", None, "the attempt log (JSON lines)", env="VLLMGUARD_ATTEMPT_LOG"),
    "lock-dir": Setting("str", None, "where the per-GPU launch locks live", env="VLLMGUARD_LOCK_DIR"),
    "lock-timeout": Setting("duration", 1800.0, "while waiting for another start's launch lock: how long the guard "
                            "keeps extending systemd's start timeout (it still waits after that)", minimum=0),
    "heartbeat-interval": Setting("duration", 10.0, "while a start waits (a launch lock, a busy GPU): seconds "
                                  "between the status lines and systemd's EXTEND_TIMEOUT_USEC", minimum=0.1,
                                  maximum=600),
    "first-request": Setting("bool", True, "ready only once a first real request (one token) is answered"),
    "first-request-timeout": Setting("duration", 120.0, "seconds the first request may take", minimum=1),
    "health-interval": Setting("duration", 10.0, "while ready: seconds between looks at /health", minimum=0.1),
    "health-timeout": Setting("duration", 5.0, "seconds one look at /health may take, the whole answer (a server "
                              "that trickles bytes is a miss)", minimum=0.1),
    "health-failures": Setting("int", 3, "while ready: /health misses in a row after which vLLM is stopped "
                               "(exit 6, so systemd restarts it); never fewer than 2", minimum=2, maximum=1000),
    # Ray (docs/ray.md). The guard's own key, never env VLLMGUARD_*: RAY_ADDRESS is already Ray's own variable.
    "ray-address": Setting("str", None, "the Ray cluster (host:port or ray://...); default RAY_ADDRESS, else the "
                           "cluster started on this machine"),
    "ray-node-timeout": Setting("duration", 5.0, "seconds each Ray node has to answer the preflight probe",
                                minimum=0.1),
    # Kubernetes (docs/kubernetes.md): the guard's own /livez, /startupz, /readyz and /metrics; off by default.
    "status-address": Setting("address", None, 'HOST:PORT of the guard\'s status endpoint (/livez, /startupz, '
                              '/readyz, /metrics); default: none', env="VLLMGUARD_STATUS_ADDRESS"),
    "termination-log": Setting("str", None, "where a failed exit's summary goes when /dev/termination-log (the "
                               "kubelet's) is absent; default: nowhere", env="VLLMGUARD_TERMINATION_LOG"),
    "ray-tensor-parallel-across-nodes": Setting("bool", False, "let a tensor-parallel group span nodes (slow "
                                                "without a fast interconnect); default: within a node"),
}
LADDER_SETTINGS: dict[str, Setting] = {
    "max-attempts": Setting("int", 5, "starts in all, the first included", minimum=1, maximum=100),
    "min-max-model-len": Setting("len", 1024, "never lower max-model-len below this", minimum=1),
    "min-gpu-memory-utilization": Setting("float", 0.5, "never lower utilization below this", minimum=0.01,
                                          maximum=1),
    "max-gpu-memory-utilization": Setting("float", 0.95, "never raise utilization above this", minimum=0.01,
                                          maximum=1),
    "allow-lower-utilization": Setting("bool", True, "gpu_busy: lower utilization to what is free"),
    "allow-fp8-kv-cache": Setting("bool", True, "kv_cache_too_small at the floor: try kv-cache-dtype fp8"),
    "allow-enforce-eager": Setting("bool", True, "OOM in graph capture or profiling: try enforce-eager"),
    "wait-for-gpu": Setting("duration", 600.0, "gpu_busy: how long to wait for the GPU to free up", minimum=0),
    "gpu-poll-interval": Setting("duration", 5.0, "gpu_busy: seconds between looks at the GPU", minimum=0.05),
    "remember": Setting("bool", True, "start from the relaxations that worked last time (same profile, GPUs "
                        "and vLLM); `vllm-guard attempts --forget PROFILE` drops them"),
}
CHECK_SETTINGS: dict[str, Setting] = {
    "skip": Setting("str_list", (), "check ids not to run"),
    "warn-only": Setting("str_list", (), "check ids whose failure is only a warning"),
    "min-concurrency": Setting("float", None, "warn when full-length requests that fit at once are fewer", minimum=0),
    "host-ram-factor": Setting("float", 2.0, "host memory needed, as a multiple of the weight size", minimum=0,
                                maximum=100),
    "free-memory-margin-mib": Setting(
        "int", 512, "free GPU memory wanted above the budget: vLLM measures after its own CUDA context",
        minimum=0,
    ),
    "shm-fail-mib": Setting("int", 200, "/dev/shm free below this fails with tensor parallel > 1", minimum=0),
    "shm-warn-mib": Setting("int", 1024, "/dev/shm free below this warns", minimum=0),
    "disk-headroom": Setting("float", 0.10, "free disk wanted above the weight size, as a fraction", minimum=0,
                              maximum=100),
    "nofile-min": Setting("int", 65536, "warn when the open-files soft limit is below this", minimum=0),
}
SUBTABLES: dict[str, dict[str, Setting]] = {"checks": CHECK_SETTINGS, "ladder": LADDER_SETTINGS}


AUTO_GPUS = "auto"


def parse_gpus(value: Any) -> tuple[int | str, ...] | str:
    """guard.gpus: "auto", a list of NVML indices or UUIDs, or one string read as CUDA_VISIBLE_DEVICES is
    ("0,1"); the same rule for the profile, VLLMGUARD_GPUS and --gpus."""
    if isinstance(value, str) and value.strip().lower() == AUTO_GPUS:
        return AUTO_GPUS
    if isinstance(value, str):
        value = [int(v) if v.isdigit() else v for v in (part.strip() for part in value.split(","))]
    items = value if isinstance(value, list) else [value]
    shown = ", ".join(repr(v) for v in items)
    if any(isinstance(v, str) and v.strip().lower() == AUTO_GPUS for v in items):
        raise ValueProblem(f'"auto" stands alone (gpus = "auto"), not in a list of GPUs: got {shown}')
    if not items or not all(
        (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or (isinstance(v, str) and v)
        for v in items
    ):
        raise ValueProblem(f'expected "auto", or a list of GPU indices (0, 1, ...) or UUIDs, got {shown}')
    return tuple(items)


ADDRESS_MAX_CHARS = 262  # a DNS name (253), brackets, a colon and a port


def parse_address(value: Any) -> tuple[str, int]:
    """guard.status-address: "HOST:PORT" (an IPv6 host in brackets, "[::]:9090"), port 1-65535."""
    if not isinstance(value, str) or not value or len(value) > ADDRESS_MAX_CHARS:
        raise ValueProblem(f'expected "HOST:PORT" (for example "0.0.0.0:9090"), got {str(value)[:40]!r}')
    host, sep, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535 or not re.fullmatch(
            r"[A-Za-z0-9.:_-]+", host):
        raise ValueProblem(f'expected "HOST:PORT" with a port from 1 to 65535 (for example "0.0.0.0:9090"), '
                           f"got {value!r}")
    return host, int(port)


def parse_duration(text: str) -> float:
    """Seconds from "90", "90s", "30m" or "1h"."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if m is None:
        raise ValueProblem(f'expected seconds, or a duration such as "90s", "30m" or "1h", got {text!r}')
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
