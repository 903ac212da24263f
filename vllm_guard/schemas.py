"""The names and versions of every JSON document the guard prints or writes (docs/json.md describes each).

A consumer checks the ``schema`` key; a new version means a key changed meaning or went away,
while added keys keep the version.
"""

from __future__ import annotations

CHECK = "vllm-guard.check/1"  # check --json
EXPLAIN = "vllm-guard.explain/1"  # explain --json (with --all: a list of these)
ATTEMPTS = "vllm-guard.attempts/1"  # attempts --json
INIT = "vllm-guard.init/1"  # init --json
DRY_RUN = "vllm-guard.dry-run/1"  # serve --dry-run --json
CHECKS = "vllm-guard.checks/1"  # checks --json
MODELS = "vllm-guard.models/1"  # models --json
PS = "vllm-guard.ps/1"  # ps --json
INSTANCE = "vllm-guard.instance/1"  # a running guard's registry entry, read by ps (registry.py)
ERROR = "vllm-guard.error/1"  # any command's error under --json
MACHINE = "vllm-guard.machine/1"  # snapshot --json and the snapshot file
CLUSTER = "vllm-guard.cluster/1"  # snapshot --cluster: every node of a Ray cluster (docs/ray.md)
CLUSTER_CHECK = "vllm-guard.cluster-check/1"  # check --json when the target runs on a Ray cluster
ATTEMPT = "vllm-guard.attempt/1"  # one line of the attempt log
STATUS = "vllm-guard.status/1"  # the status endpoint's /livez, /startupz and /readyz (docs/kubernetes.md)
# The guard's own state file of remembered relaxations (remember.py, docs/serve.md): read back by the guard only,
# so not among the documents of docs/json.md.
REMEMBERED = "vllm-guard.remembered/1"

ALL = (CHECK, EXPLAIN, ATTEMPTS, INIT, DRY_RUN, CHECKS, MODELS, PS, INSTANCE, ERROR, MACHINE, ATTEMPT, CLUSTER,
       CLUSTER_CHECK, STATUS)
