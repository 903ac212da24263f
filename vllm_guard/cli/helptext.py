"""Examples for each command's --help: what a new user types first. Kept apart from cli.py's parser."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "serve": (
        "vllm-guard serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192   # as `vllm serve` takes it",
        "vllm-guard serve profiles/llama-3.1-8b-l4.toml",
        "vllm-guard serve --dry-run profile.toml                # checks, command line, environment; starts nothing",
        "vllm-guard serve --dry-run --json profile.toml         # the same as JSON (docs/json.md)",
        "vllm-guard serve --status-address 0.0.0.0:9090 profile.toml   # /livez /startupz /readyz /metrics",
    ),
    "check": (
        "vllm-guard check profile.toml",
        "vllm-guard check Qwen/Qwen3-0.6B --max-model-len 32768",
        "vllm-guard check --machine gpu-01.json profile.toml    # plan against a snapshot of another machine",
        "vllm-guard check --json profile.toml | jq .verdict",
        "vllm-guard check --list                                # every check id",
        "vllm-guard check --gpus auto profile.toml              # the idlest GPUs the layout needs",
    ),
    "snapshot": (
        "vllm-guard snapshot                                    # show this machine's GPUs and host",
        "vllm-guard snapshot -o gpu-01.json                     # record it for --machine elsewhere",
    ),
    "explain": (
        "vllm-guard explain vllm.log",
        "journalctl -u my-vllm | vllm-guard explain -",
        "vllm-guard explain --unit vllm-guard@llama --all",
        "exit status 7: the log shows no failure the guard can name (class unknown); 0: diagnosed",
    ),
    "init": (
        "vllm-guard init meta-llama/Llama-3.1-8B-Instruct -o llama.toml",
        "vllm-guard init Qwen/Qwen3-0.6B --users 8 --context 16K",
        "vllm-guard init meta-llama/Llama-3.1-70B-Instruct --machine a100x2.json -tp 2",
    ),
    "attempts": (
        "vllm-guard attempts profile.toml                       # the attempt log of that profile",
        "vllm-guard attempts llama                              # by profile name, in the state directory",
        "vllm-guard attempts /var/lib/vllm-guard/llama.jsonl --json",
        "vllm-guard attempts --forget profile.toml              # drop remembered relaxations",
    ),
    "ps": (
        "vllm-guard ps                                          # every vLLM here: guard, state, GPUs, memory",
        "vllm-guard ps --json | jq '.instances[] | select(.state == \"orphaned\")'",
        "vllm-guard ps --machine gpu-01.json                    # the vLLM processes a snapshot recorded",
        "vllm-guard ps --lock-dir /srv/locks                    # guards whose profile sets guard.lock-dir",
    ),
    "manifest": (
        "vllm-guard manifest profile.toml -o llama.yaml         # ConfigMap, Deployment, Service",
        "vllm-guard manifest profile.toml | kubectl apply -f -",
        "vllm-guard manifest --machine gpu-node.json profile.toml   # and the preflight against that node",
    ),
    "checks": ("vllm-guard checks", "vllm-guard checks --json"),
    "models": ("vllm-guard models", "vllm-guard models --json | jq -r '.models[].id'"),
    "completion": (
        "vllm-guard completion bash > ~/.local/share/bash-completion/completions/vllm-guard",
        "vllm-guard completion zsh > ~/.zfunc/_vllm-guard       # with fpath+=(~/.zfunc) before compinit",
        "vllm-guard completion fish > ~/.config/fish/completions/vllm-guard.fish",
    ),
}


def epilog(command: str) -> str:
    """A command's examples, and where the exit codes are (listed once, in `vllm-guard --help`)."""
    lines = ["examples:", *(f"  {e}" for e in EXAMPLES.get(command, ()))] if command in EXAMPLES else []
    return "\n".join([*lines, "", "exit codes: see `vllm-guard --help`"]).lstrip("\n")
