"""Kubernetes objects for a profile (`vllm-guard manifest`): a ConfigMap, a Deployment and a Service.

Every figure comes from the profile (docs/kubernetes.md explains each choice): the GPUs from its layout
(``world_size``), /dev/shm from what the preflight's host.shm check wants, the start-up probe's budget from the
ladder's (every attempt's start-up timeout, first request and stop, the waits between them), the grace period from
the stop grace (``stop_grace_s``) plus the guard's own margins. The probes ask the guard's status endpoint, never
vLLM's port, which refuses or hangs while the model loads.
"""

from __future__ import annotations

import math
import re
from typing import Any

from vllm_guard.launch.process import KEEPER_MARGIN_S
from vllm_guard.profile.model import Profile, stop_grace_s, world_size

IMAGE = "vllm-guard:0.33.0"  # docker/Dockerfile's tag (docs/docker.md)
STATUS_PORT = 9090
PROFILE_DIR = "/etc/vllm-guard"
PROFILE_FILE = "profile.toml"
HF_HOME = "/root/.cache/huggingface"  # the vLLM image runs as root; Hugging Face's default cache under it
PERIOD_S = 10  # seconds between the kubelet's start-up and liveness looks
PROBE_TIMEOUT_S = 5
EXIT_MARGIN_S = 5  # after the keeper's margin: the guard's attempt log, termination message and exit
MULTI_GPU_SHM_MIB = 8192  # the preflight's fix for a small /dev/shm under tensor parallel: --shm-size=8g
NAME_MAX = 63 - len("-profile")  # DNS-1123 labels are at most 63 characters; the ConfigMap adds a suffix


def object_name(profile: Profile) -> str:
    """A DNS-1123 name from the profile's name: lower case, letters, digits and dashes."""
    text = re.sub(r"[^a-z0-9-]+", "-", profile.name.lower()).strip("-")
    return ("vllm-" + text)[:NAME_MAX].rstrip("-") if text else "vllm-guard"


def startup_budget_s(profile: Profile) -> float:
    """The longest the ladder can take before it serves or gives up: each attempt's start-up timeout, its first
    request and its stop, the GPU waits between attempts, and one wait for the launch lock."""
    attempts = int(profile.ladder_setting("max-attempts"))
    first = float(profile.setting("first-request-timeout")) if profile.setting("first-request") else 0.0
    per_attempt = float(profile.setting("startup-timeout")) + first + stop_grace_s(profile)
    waits = (attempts - 1) * float(profile.ladder_setting("wait-for-gpu")) + float(profile.setting("lock-timeout"))
    return attempts * per_attempt + waits


def grace_period_s(profile: Profile) -> int:
    """terminationGracePeriodSeconds: the stop grace, the guard's wait for its keeper beyond it, and its exit."""
    return math.ceil(stop_grace_s(profile) + KEEPER_MARGIN_S + EXIT_MARGIN_S)


def shm_mib(profile: Profile) -> int:
    """/dev/shm for the pod: above what the preflight warns below; 8 GiB with more than one GPU (NCCL)."""
    warn = int(profile.check_setting("shm-warn-mib"))
    return max(warn, MULTI_GPU_SHM_MIB) if world_size(profile) > 1 else max(warn, 1024)


def objects(profile: Profile, profile_text: str, *, image: str = IMAGE) -> list[dict[str, Any]]:
    name = object_name(profile)
    labels = {"app.kubernetes.io/name": "vllm-guard", "app.kubernetes.io/instance": name}
    api_port = int(profile.value("port") or 8000)
    status_port = _status_port(profile)
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": f"{name}-profile", "labels": labels},
                  "data": {PROFILE_FILE: profile_text}}
    budget = startup_budget_s(profile)

    def probe(path: str, period_s: int, failures: int) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": "status"}, "periodSeconds": period_s,
                "timeoutSeconds": PROBE_TIMEOUT_S, "failureThreshold": failures}

    container = {
        "name": "vllm-guard",
        "image": image,
        # Guard options before TARGET; after it, vLLM's: listen on the pod's address, whatever the profile says.
        "command": ["vllm-guard", "serve", "--status-address", f"0.0.0.0:{status_port}",
                    f"{PROFILE_DIR}/{PROFILE_FILE}", "--host", "0.0.0.0", "--port", str(api_port)],
        "ports": [{"name": "http", "containerPort": api_port, "protocol": "TCP"},
                  {"name": "status", "containerPort": status_port, "protocol": "TCP"}],
        "env": [{"name": "HF_HOME", "value": HF_HOME}],
        "resources": {"limits": {"nvidia.com/gpu": world_size(profile)}},
        "startupProbe": probe("/startupz", PERIOD_S, max(math.ceil(budget / PERIOD_S), 1)),
        "livenessProbe": probe("/livez", PERIOD_S, 3),
        "readinessProbe": probe("/readyz", 5, 2),
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"name": "profile", "mountPath": PROFILE_DIR, "readOnly": True},
                         {"name": "dshm", "mountPath": "/dev/shm"},
                         {"name": "hf-cache", "mountPath": HF_HOME}],
    }
    pod = {
        "terminationGracePeriodSeconds": grace_period_s(profile),
        "containers": [container],
        "volumes": [{"name": "profile", "configMap": {"name": f"{name}-profile"}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_mib(profile)}Mi"}},
                    {"name": "hf-cache", "emptyDir": {}}],
    }
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
                  "spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": labels},
                           "template": {"metadata": {"labels": labels}, "spec": pod}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
               "spec": {"selector": labels, "ports": [
                   {"name": "http", "port": api_port, "targetPort": "http", "protocol": "TCP"},
                   {"name": "status", "port": status_port, "targetPort": "status", "protocol": "TCP"}]}}
    return [config_map, deployment, service]


def _status_port(profile: Profile) -> int:
    address = profile.setting("status-address")
    if address:
        from vllm_guard.profile.settings import parse_address

        return parse_address(address)[1]
    return STATUS_PORT
