"""Pure: (Profile, resolved facts) -> LaunchPlan, the exact vLLM command and environment.

The single place that turns the guard's view of a deployment into vLLM's argv.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from vllm_guard.options.argv import VllmArg
from vllm_guard.profile.model import Profile
from vllm_guard.profile.settings import AUTO_GPUS, ENV_PREFIX
from vllm_guard.redact import (
    MASK,
    SECRET_OPTION_DESTS,
    is_secret_name,
    mask_url_credentials,
    redact_env,
    url_credentials,
)


@dataclass(frozen=True)
class LaunchPlan:
    argv: tuple[str, ...]
    secret_indices: frozenset[int]
    env_set: Mapping[str, str]  # variables the guard sets or changes for vLLM, with the reason
    env_reasons: Mapping[str, str]
    env_unset: tuple[str, ...]  # the guard's own variables, removed from vLLM's environment
    health_url: str
    uds: str | None = None
    notes: tuple[str, ...] = ()

    def redacted_argv(self) -> list[str]:
        out = list(self.argv)
        for i in self.secret_indices:
            head, eq, _ = out[i].partition("=")
            out[i] = f"{head}={MASK}" if eq and head.startswith("-") else MASK
        return [mask_url_credentials(token) for token in out]

    def command_line(self) -> str:
        return shlex.join(self.redacted_argv())

    def redacted_env_set(self) -> dict[str, str]:
        return redact_env(self.env_set)

    def secrets(self) -> list[str]:
        values = [self.argv[i].partition("=")[2] or self.argv[i] for i in self.secret_indices]
        values += [v for k, v in self.env_set.items() if is_secret_name(k)]
        # A password in a URL (DATABASE_URL=postgres://app:pw@db) may also appear alone in vLLM's output.
        return values + [c for text in (*self.argv, *self.env_set.values()) for c in url_credentials(text)]

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        env = {k: v for k, v in environ.items() if k not in self.env_unset}
        env.update(self.env_set)
        return env


def build_plan(
    profile: Profile,
    *,
    environ: Mapping[str, str],
    cuda_visible_devices: str | None = None,
) -> LaunchPlan:
    """Render the profile into vLLM's command line and environment changes."""
    # The model first (vLLM moves `--model X` there too); one named only in the --config file stays there.
    from_file = profile.config_file is not None and profile.model_origin == profile.config_file
    argv: list[str] = [str(profile.setting("vllm")), "serve", *([] if from_file else [profile.model])]
    secret: set[int] = set()
    if profile.config_file is not None:
        argv += ["--config", profile.config_file]  # vLLM reads it again; the command line wins over it
    if profile.revision is not None and not profile.is_set("revision"):
        argv += ["--revision", profile.revision]
    handed: dict[str, tuple[str, str]] = {}
    notes: list[str] = []
    for arg in profile.args:
        tokens = arg.argv()
        via_env = _secret_to_environment(arg, tokens, notes)
        if via_env is not None:
            handed[via_env[0]] = (via_env[1], f"from --{arg.key}: in the environment, which other users cannot "
                                              "read; a command line is visible to all of them (ps)")
            continue
        is_secret = (arg.spec is not None and arg.spec.dest in SECRET_OPTION_DESTS) or (
            arg.spec is None and is_secret_name(arg.key)
        )
        for j, token in enumerate(tokens):
            # The value tokens, and the `--api-key=VALUE` form; the bare `--hf-token` flag is no secret.
            if is_secret and (j > 0 or "=" in token):
                secret.add(len(argv) + j)
        argv += tokens

    env_set: dict[str, str] = {}
    reasons: dict[str, str] = {}
    # NVML numbers GPUs by PCI bus id; CUDA's default order is fastest-first. The same
    # order makes the guard's GPU indices and vLLM's agree (vLLM 0.33 platforms/cuda.py:996).
    env_set["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    reasons["CUDA_DEVICE_ORDER"] = "so CUDA numbers GPUs as NVML does"
    if cuda_visible_devices is not None:
        env_set["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices
        auto = profile.setting("gpus") == AUTO_GPUS
        reasons["CUDA_VISIBLE_DEVICES"] = 'the idlest GPUs (guard.gpus = "auto")' if auto else "the GPUs in guard.gpus"
    for key, value in profile.env.items():
        env_set[key] = value
        reasons[key] = "from the profile's [env]"
    for key, (value, reason) in handed.items():
        env_set[key] = value
        reasons[key] = reason
    env_set = {k: v for k, v in env_set.items() if environ.get(k) != v}
    unset = tuple(sorted(k for k in environ if k.startswith(ENV_PREFIX)))

    uds = profile.value("uds")
    host = profile.value("host") or ""
    # vLLM binds "" (all interfaces) by default; readiness is asked locally.
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    port = profile.value("port") or 8000
    health_url = f"http://{host}:{port}/health" if uds is None else f"http+unix://{uds}/health"
    return LaunchPlan(
        argv=tuple(argv),
        secret_indices=frozenset(secret),
        env_set=env_set,
        env_reasons={k: reasons[k] for k in env_set},
        env_unset=unset,
        health_url=health_url,
        uds=uds,
        notes=tuple(notes),
    )


# vLLM reads these when the option is not given: `--api-key` falls back to VLLM_API_KEY (vLLM 0.33
# entrypoints/openai/api_server.py), `--hf-token` to huggingface_hub's HF_TOKEN.
SECRET_ENVIRONMENT = {"api_key": "VLLM_API_KEY", "hf_token": "HF_TOKEN"}


def _secret_to_environment(arg: VllmArg, tokens: list[str], notes: list[str]) -> tuple[str, str] | None:
    """(variable, value) for a secret option that can go through vLLM's environment instead of its argv."""
    if arg.spec is None or arg.spec.dest not in SECRET_ENVIRONMENT or not tokens:
        return None
    _, eq, inline = tokens[0].partition("=")
    values = [inline] if eq else tokens[1:]
    if len(values) != 1:
        if len(values) > 1:
            notes.append(f"--{arg.key} has {len(values)} values: only one fits in "
                         f"{SECRET_ENVIRONMENT[arg.spec.dest]}, so they stay on vLLM's command line, where "
                         "every local user can read them (ps); give one key to keep it private")
        return None  # a bare `--hf-token` (use the stored login) holds no secret
    return SECRET_ENVIRONMENT[arg.spec.dest], values[0]
