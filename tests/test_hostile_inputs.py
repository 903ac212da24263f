"""Hostile values and files: NaN, infinity, zero, huge integers, deep nesting. Exit 2 or 3, never 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import L4, run_cli

BASE = '[model]\nid = "Qwen/Qwen3-0.6B"\n'

PROFILES = {
    "startup-timeout nan": BASE + "[guard]\nstartup-timeout = nan\n",
    "stop-timeout inf": BASE + "[guard]\nstop-timeout = inf\n",
    "gpu-poll-interval nan": BASE + "[guard.ladder]\ngpu-poll-interval = nan\n",
    "host-ram-factor inf": BASE + "[guard.checks]\nhost-ram-factor = inf\n",
    "disk-headroom nan": BASE + "[guard.checks]\ndisk-headroom = nan\n",
    "cpu-offload-gb inf": BASE + "[vllm]\ncpu-offload-gb = inf\n",
    "gpu-memory-utilization nan": BASE + "[vllm]\ngpu-memory-utilization = nan\n",
    "tensor-parallel-size 0": BASE + "[vllm]\ntensor-parallel-size = 0\n",
    "max-model-len 0": BASE + "[vllm]\nmax-model-len = 0\n",
    "port 0": BASE + "[vllm]\nport = 0\n",
    "port 65536": BASE + "[vllm]\nport = 65536\n",
    "huge integer": BASE + "[vllm]\nmax-model-len = " + "9" * 5000 + "\n",
    "deep nesting": BASE + "[vllm]\nserved-model-name = " + "[" * 5000 + "]" * 5000 + "\n",
}


@pytest.mark.parametrize("name", list(PROFILES))
def test_a_hostile_profile_value_is_a_profile_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(PROFILES[name])
    r = run_cli("check", "--machine", L4, str(path))
    assert r.code == 3, (name, r.err)
    assert "internal error" not in r.err


@pytest.mark.parametrize("args", [["--gpu-memory-utilization", "nan"], ["--cpu-offload-gb", "inf"], ["-tp", "0"],
                                  ["--max-model-len", "0"], ["--port", "0"], ["--port", "70000"],
                                  ["--max-model-len", "9" * 5000]])
def test_a_hostile_command_line_value_is_a_usage_error(args: list[str]) -> None:
    r = run_cli("check", "--machine", L4, "Qwen/Qwen3-0.6B", *args)
    assert r.code == 2, (args, r.err)
