"""The names and versions of every JSON document the guard prints or writes (docs/json.md describes each).

A consumer checks the ``schema`` key; a new version means a key changed meaning or went away,
while added keys keep the version.
"""

from __future__ import annotations

from vllm_guard.facts.cluster import CLUSTER_CHECK_SCHEMA, CLUSTER_SCHEMA
from vllm_guard.facts.machine import MACHINE_SCHEMA
from vllm_guard.state.attempts import ATTEMPT_SCHEMA
from vllm_guard.state.instances import SCHEMA as PS_SCHEMA
from vllm_guard.state.registry import SCHEMA as INSTANCE_SCHEMA

CHECK = "vllm-guard.check/1"  # check --json
EXPLAIN = "vllm-guard.explain/1"  # explain --json (with --all: a list of these)
ATTEMPTS = "vllm-guard.attempts/1"  # attempts --json
INIT = "vllm-guard.init/1"  # init --json
DRY_RUN = "vllm-guard.dry-run/1"  # serve --dry-run --json
CHECKS = "vllm-guard.checks/1"  # checks --json
MODELS = "vllm-guard.models/1"  # models --json
PS = PS_SCHEMA  # ps --json
INSTANCE = INSTANCE_SCHEMA  # a running guard's registry entry, read by ps (registry.py)
ERROR = "vllm-guard.error/1"  # any command's error under --json
MACHINE = MACHINE_SCHEMA  # snapshot --json and the snapshot file
CLUSTER = CLUSTER_SCHEMA  # snapshot --cluster: every node of a Ray cluster (docs/ray.md)
CLUSTER_CHECK = CLUSTER_CHECK_SCHEMA  # check --json when the target runs on a Ray cluster
ATTEMPT = ATTEMPT_SCHEMA  # one line of the attempt log

ALL = (CHECK, EXPLAIN, ATTEMPTS, INIT, DRY_RUN, CHECKS, MODELS, PS, INSTANCE, ERROR, MACHINE, ATTEMPT, CLUSTER,
       CLUSTER_CHECK)
