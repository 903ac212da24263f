"""Every value the guard suggests can be pasted: TOML that parses back, or the `vllm serve` flag."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import tomllib

from tests.conftest import DATA, run_cli
from vllm_guard.profile.load import load_profile
from vllm_guard.report.live import LaunchStatus, ready_line
from vllm_guard.suggest import as_written, flag, previous, toml_line

# (key, value, the profile line, the flag)
CASES = [
    ("enforce-eager", True, "enforce-eager = true", "--enforce-eager"),
    ("enforce-eager", False, "enforce-eager = false", "--no-enforce-eager"),
    ("max-model-len", 8192, "max-model-len = 8192", "--max-model-len 8192"),
    ("gpu-memory-utilization", 0.85, "gpu-memory-utilization = 0.85", "--gpu-memory-utilization 0.85"),
    ("kv-cache-dtype", "fp8", 'kv-cache-dtype = "fp8"', "--kv-cache-dtype fp8"),
]


@pytest.mark.parametrize(("key", "value", "line", "option"), CASES)
def test_suggestions_parse_back(key: str, value: object, line: str, option: str, tmp_path: Path) -> None:
    assert toml_line(key, value) == line and flag(key, value) == option
    assert tomllib.loads(line) == {key: value}
    assert as_written(key, value, command_line=True) == option
    # The line is a valid [vllm] entry of a real profile.
    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "meta-llama/Llama-3.1-8B-Instruct"\n[vllm]\n{line}\n')
    assert load_profile(path).value(key.replace("-", "_")) == value


def test_previous_value_wording() -> None:
    assert previous("enforce-eager", False, set_by_user=False, command_line=False) == \
        "not set; vLLM's default is false"
    assert previous("max-model-len", 32768, set_by_user=True, command_line=True) == \
        "the command line says --max-model-len 32768"
    assert previous("max-model-len", 32768, set_by_user=True, command_line=False) == \
        "the profile says max-model-len = 32768"


def test_explain_next_step_is_toml_and_a_flag() -> None:
    r = run_cli("explain", str(DATA / "logs" / "oom_cudagraph_after_kv_sizing.log"))
    line = next(x for x in r.out.splitlines() if x.startswith("next step: "))
    assert "True" not in line
    profile_part = line.removeprefix("next step: ").split(" in a profile")[0]
    assert tomllib.loads(profile_part) == {"enforce-eager": True}
    assert "--enforce-eager on the command line" in line
    doc = run_cli("explain", "--json", str(DATA / "logs" / "oom_cudagraph_after_kv_sizing.log")).out
    assert '"toml": "enforce-eager = true"' in doc and '"flag": "--enforce-eager"' in doc


def relaxed_message(profile: str | None, set_by_user: frozenset[str]) -> str:
    err = io.StringIO()
    status = LaunchStatus(io.StringIO(), err)
    status.ready(2, {"kv_cache_tokens": 40544, "time_to_ready_s": 41.2}, {"enforce-eager": [False, True],
                 "max-model-len": [32768, 8192]}, profile, url="http://127.0.0.1:8000", set_by_user=set_by_user)
    return err.getvalue()


def test_relaxed_start_in_a_profile_is_toml() -> None:
    err = relaxed_message("p.toml", frozenset({"max-model-len"}))
    text = err[err.index("is written: ") + len("is written: "):err.index(". Put these")]
    items = re.findall(r"(?:^|; )([a-z-]+ = [^ ]+) \(", text)
    assert tomllib.loads("\n".join(items)) == {"enforce-eager": True, "max-model-len": 8192}
    assert "(not set; vLLM's default is false)" in err
    assert "(the profile says max-model-len = 32768)" in err and " in p.toml " in err


def test_relaxed_start_from_a_command_line_is_flags() -> None:
    err = relaxed_message(None, frozenset({"max-model-len"}))
    assert "--enforce-eager (not set; vLLM's default is false)" in err
    assert "--max-model-len 8192 (the command line says --max-model-len 32768)" in err
    assert "the profile" not in err and "on the command line to start this way" in err


def test_ready_line_has_the_url_and_the_time() -> None:
    line = ready_line(1, {"kv_cache_tokens": 40544, "max_concurrency": 1.0, "model_loading_gib": 14.99,
                          "time_to_ready_s": 41.2}, "http://127.0.0.1:8000")
    assert line == ("vLLM is ready on http://127.0.0.1:8000 after 1 attempt(s), 41.2 s: KV cache 40,544 tokens "
                    "(1.00x concurrency), weights 14.99 GiB")
    assert "vLLM is ready on http://127.0.0.1:8000 after 2 attempt(s), 41.2 s" in relaxed_message(None, frozenset())


def test_the_one_fix_is_spelled_as_the_user_wrote_the_settings() -> None:
    from tests.conftest import L4, ROOT

    profile = ROOT / "profiles" / "llama-3.1-8b-full-context.toml"
    r = run_cli("check", "--machine", L4, str(profile))
    line = next(x for x in r.out.splitlines() if x.startswith("one fix that passes every check: "))
    lines = line.split(f"in {profile}: [vllm] ", 1)[1].split(" (", 1)[0]
    assert tomllib.loads(lines.replace(", ", "\n"))["max-model-len"] > 0
    r = run_cli("check", "--machine", L4, "meta-llama/Llama-3.1-8B-Instruct")
    assert "one fix that passes every check: --max-model-len " in r.out


def test_a_list_is_one_pasteable_line() -> None:
    import tomllib

    from vllm_guard.suggest import toml_line

    line = toml_line("gpus", [1, 2])
    assert line == "gpus = [1, 2]" and tomllib.loads(line) == {"gpus": [1, 2]}
