"""Profiles: parsing, every error path, precedence, rendering, secrets — through the real CLI."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import L4, run_cli
from vllm_guard.profile.load import load_profile

GOOD = """\
[model]
id = "meta-llama/Llama-3.1-8B-Instruct"
revision = "main"

[vllm]
max-model-len = 16384
gpu-memory-utilization = 0.9
enforce-eager = true
enable-prefix-caching = false
limit-mm-per-prompt = { image = 1 }
served-model-name = ["llama", "llama-8b"]
api-key = "sk-profile-secret"

[env]
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"
HF_TOKEN = "hf_profile_secret"

[guard]
vllm = "/opt/vllm/bin/vllm"
"""


def command_of(out: str) -> list[str]:
    lines = out.splitlines()
    return shlex.split(lines[lines.index("command") + 1])


def test_good_profile_renders_every_type(write_profile) -> None:
    r = run_cli("serve", "--dry-run", "--machine", L4, str(write_profile(GOOD)))
    assert r.code == 0, r.out + r.err
    assert command_of(r.out) == [
        "/opt/vllm/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--revision", "main",
        "--max-model-len", "16384", "--gpu-memory-utilization", "0.9", "--enforce-eager",
        "--disable-prefix-caching", "--limit-mm-per-prompt", '{"image":1}',
        "--served-model-name", "llama", "llama-8b",
    ]  # the API key goes to vLLM through VLLM_API_KEY, out of `ps`
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in r.out
    assert "VLLM_API_KEY=***" in r.out
    assert "HF_TOKEN=***" in r.out


def test_secrets_never_printed(write_profile) -> None:
    r = run_cli("serve", "--dry-run", "--machine", L4, str(write_profile(GOOD)), "--api-key=sk-cli-secret",
                "--hf-token", "hf_cli", env={"VLLMGUARD_VLLM_BIN": "vllm", "MY_PASSWORD": "pw12345"})
    assert r.code == 0
    for secret in ("sk-profile-secret", "hf_profile_secret", "sk-cli-secret", "hf_cli"):
        assert secret not in r.out + r.err
    assert not any("api-key" in t or "hf-token" in t for t in command_of(r.out))
    assert "VLLM_API_KEY=***" in r.out and "HF_TOKEN=***" in r.out


def test_cli_overrides_profile_and_keeps_order(write_profile) -> None:
    r = run_cli("serve", "--dry-run", "--machine", L4, str(write_profile(GOOD)), "--max-model-len", "8k",
                "--no-enforce-eager",
                "--trust-remote-code")
    argv = command_of(r.out)
    assert argv.count("--max-model-len") == 1 and argv[argv.index("--max-model-len") + 1] == "8k"
    assert "--enforce-eager" not in argv and "--no-enforce-eager" in argv
    assert argv[-4:] == ["--max-model-len", "8k", "--no-enforce-eager", "--trust-remote-code"]


def test_precedence_cli_over_env_over_profile(write_profile, tmp_path: Path) -> None:
    path = write_profile(GOOD)
    assert command_of(run_cli("serve", "--dry-run", "--machine", L4, str(path)).out)[0] == "/opt/vllm/bin/vllm"
    env = {"VLLMGUARD_VLLM_BIN": "/env/vllm"}
    assert command_of(run_cli("serve", "--dry-run", str(path), env=env).out)[0] == "/env/vllm"
    env["VLLMGUARD_PROFILE"] = str(path)
    r = run_cli("serve", "--dry-run", "--machine", L4, env=env)
    assert r.code == 0 and "meta-llama/Llama-3.1-8B-Instruct" in r.out
    # An explicit TARGET wins over VLLMGUARD_PROFILE.
    r = run_cli("serve", "--dry-run", "Qwen/Qwen3-0.6B", env=env)
    assert command_of(r.out)[1:] == ["serve", "Qwen/Qwen3-0.6B"]
    # Issue 23: only options (`docker run IMAGE --max-model-len 4096`): the container's profile plus them.
    r = run_cli("serve", "--dry-run", "--machine", L4, "--max-model-len", "4096", env=env)
    assert r.code == 0, r.err
    argv = command_of(r.out)
    assert argv[2] == "meta-llama/Llama-3.1-8B-Instruct" and argv[argv.index("--max-model-len") + 1] == "4096"


def test_guard_variables_are_removed_from_vllm_env(write_profile) -> None:
    r = run_cli("serve", "--dry-run", "Qwen/Qwen3-0.6B", env={"VLLMGUARD_LOCK_DIR": "/tmp/x"})
    assert "unset VLLMGUARD_LOCK_DIR" in r.out


def test_drop_in_prints_exactly_what_was_asked() -> None:
    r = run_cli("serve", "--dry-run", "--machine", L4, "Qwen/Qwen3-0.6B", "--max-model-len", "4096", "--enforce-eager")
    assert r.code == 0, r.out
    assert "\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096 --enforce-eager\n" in r.out


def test_dry_run_prints_the_command_even_when_preflight_fails() -> None:
    # This machine (and CI's) has no GPU: the preflight fails, the command line is still shown.
    r = run_cli("serve", "--dry-run", "Qwen/Qwen3-0.6B", "--max-model-len", "4096")
    assert r.code == 4
    assert "\nvllm serve Qwen/Qwen3-0.6B --max-model-len 4096\n" in r.out
    assert "gpu.present" in r.out


def test_drop_in_passes_unknown_to_guard_options_untouched() -> None:
    argv = ["--max_model_len", "32K", "-tp", "2", "--tool-call-parser", "hermes", "-cc.mode=3", "-O3",
            "--chat-template", "/t.jinja", "--hf-overrides", '{"a": 1}']
    r = run_cli("serve", "--dry-run", "org/model", *argv)
    assert command_of(r.out) == ["vllm", "serve", "org/model", *argv]


PROFILE_ERRORS = [
    ("typo in a vLLM key", '[model]\nid = "m"\n\n[vllm]\nmax-model-lenght = 4096\n', 5,
     "[vllm] max-model-lenght: not a vLLM 0.33.0 option", "did you mean `max-model-len`?"),
    ("unknown guard key", '[model]\nid = "m"\n[guard]\nvlm = "x"\n', 4, "[guard] vlm: unknown key", "`vllm`"),
    ("unknown check key", '[model]\nid = "m"\n[guard.checks]\nmin-concurency = 2\n', 4,
     "[guard.checks] min-concurency: unknown key", "`min-concurrency`"),
    ("wrong type", '[model]\nid = "m"\n[vllm]\nmax-model-len = "lots"\n', 4,
     "[vllm] max-model-len: expected an integer", None),
    ("utilization out of range", '[model]\nid = "m"\n[vllm]\ngpu-memory-utilization = 1.5\n', 4,
     "must be in (0, 1]", None),
    ("bool for number", '[model]\nid = "m"\n[vllm]\ntensor-parallel-size = true\n', 4, "expected an integer", None),
    ("bad TOML", '[model]\nid = "m"\n[vllm]\nmax-model-len = = 3\n', None, "invalid TOML", None),
    ("no model", '[vllm]\nenforce-eager = true\n', None, "the [model] table is missing", "[model]"),
    ("unknown table", '[model]\nid = "m"\n[vlm]\nx = 1\n', 3, "[vlm]: unknown table", "did you mean [vllm]?"),
    ("model in vllm", '[model]\nid = "m"\n[vllm]\nmodel = "x"\n', 4, "goes in [model]", None),
    ("two keys for one option", '[model]\nid = "m"\n[vllm]\nenable-prefix-caching = true\n'
     'disable-prefix-caching = true\n', 5, "sets the same option", None),
    ("env not a string", '[model]\nid = "m"\n[env]\nX = true\n', 4, "[env] X: expected a string", None),
    ("guard var in env", '[model]\nid = "m"\n[env]\nVLLMGUARD_X = "1"\n', 4, "not passed to vLLM", None),
    ("gpus not a list", '[model]\nid = "m"\n[guard]\ngpus = [-1]\n', 4, "GPU indices", None),
]


@pytest.mark.parametrize(("case", "text", "line", "message", "hint"), PROFILE_ERRORS,
                         ids=[c[0] for c in PROFILE_ERRORS])
def test_profile_errors(write_profile, case: str, text: str, line: int | None, message: str,
                        hint: str | None) -> None:
    path = write_profile(text)
    r = run_cli("serve", "--dry-run", str(path))
    assert r.code == 3, (case, r.err)
    assert "Traceback" not in r.err
    assert message in r.err
    assert str(path) in r.err
    if line is not None:
        assert f"{path}:{line}:" in r.err
    if hint:
        assert "hint:" in r.err and hint in r.err
    assert r.out == ""


def test_bad_toml_reports_its_line(write_profile) -> None:
    r = run_cli("check", str(write_profile('[model]\nid = "m"\n[vllm]\nmax-model-len = = 3\n')))
    assert r.code == 3 and "line 4" in r.err


def test_missing_and_unreadable_profiles(tmp_path: Path) -> None:
    assert run_cli("serve", "--dry-run", str(tmp_path / "nope.toml")).code == 3
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    r = run_cli("serve", "--dry-run", str(binary))
    assert r.code == 3 and "UTF-8" in r.err


def test_allow_unknown_vllm_options(write_profile) -> None:
    text = '[model]\nid = "m"\n[guard]\nallow-unknown-vllm-options = true\n[vllm]\nfuture-knob = 3\n'
    r = run_cli("serve", "--dry-run", str(write_profile(text)), "--another-future", "x")
    assert r.code == 4, r.err  # "m" is no model the guard knows: preflight fails, the command is printed
    assert command_of(r.out)[3:] == ["--future-knob", "3", "--another-future", "x"]


def test_profile_hash_and_name(write_profile) -> None:
    p = load_profile(write_profile(GOOD, name="llama.toml"))
    assert p.name == "llama" and p.sha256 is not None and len(p.sha256) == 64
    assert p.value("max_model_len") == 16384
    assert p.value("tensor_parallel_size") == 1  # vLLM's default
    assert p.with_value("max_model_len", 4096).value("max_model_len") == 4096


def test_max_model_len_auto_is_understood(write_profile) -> None:
    p = load_profile(write_profile('[model]\nid = "m"\n[vllm]\nmax-model-len = "auto"\n'))
    assert p.value("max_model_len") == -1
