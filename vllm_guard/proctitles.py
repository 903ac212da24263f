"""How vLLM's processes look from outside: titles and command lines (pure; shared by probes and `ps`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

# Processes that adopt orphans: init, systemd (also --user), container inits.
REAPERS = frozenset({"systemd", "init", "tini", "docker-init", "dumb-init", "containerd-shim", "s6-svscan",
                     "catatonit", "runsv"})
# vLLM 0.33 sets these process titles (v1/engine/utils.py:286-292); comm keeps 15 characters.
VLLM_CHILD_PREFIXES = ("VLLM::EngineCor", "VLLM::Worker")
VLLM_MODULES = {"vllm.entrypoints.openai.api_server": "serve", "vllm.entrypoints.api_server": "serve"}
PRELOAD_NAME = "vllm preload (weight daemon)"


def vllm_command(argv: Sequence[str]) -> str | None:
    """"serve" or "preload" when the command line is a vLLM CLI start of one; None otherwise.

    `vllm serve` runs as ``python .../bin/vllm serve`` (the console script) or ``python -m
    vllm.entrypoints.openai.api_server``; vLLM 0.31+'s ``vllm preload`` starts the weight daemon.
    """
    for i, word in enumerate(argv[:4]):
        if word in VLLM_MODULES:
            return VLLM_MODULES[word]
        if (os.path.basename(word) == "vllm" or word == "vllm.entrypoints.cli.main") and i + 1 < len(argv):
            nxt = argv[i + 1]
            if nxt in ("serve", "preload"):
                return nxt
    return None
