"""Property: any profile text ends in a valid profile or a clean error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import L4, run_cli
from tests.test_profile import GOOD

KEYS = ["id", "revision", "max-model-len", "gpu-memory-utilization", "enforce-eager", "tensor-parallel-size",
        "limit-mm-per-prompt", "served-model-name", "api-key", "dtype", "kv-cache-dtype", "vllm", "gpus",
        "skip", "min-concurrency", "allow-unknown-vllm-options", "max-model-len-cap", "x", "max_model_len",
        "enable-prefix-caching", "disable-prefix-caching", "device-ids", "hf-token", "HF_TOKEN"]
scalars = st.one_of(st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12), st.sampled_from(["auto", "32k", "32K", "fp8", "bfloat16", "1.5K"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                      max_leaves=6)
tables = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)
documents = st.dictionaries(
    st.sampled_from(["model", "vllm", "env", "guard", "gaurd", "checks"]),
    st.one_of(tables, scalars,
              st.fixed_dictionaries({"checks": tables}, optional={"vllm": scalars})),
    max_size=5,
)

_DIRS: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One directory for the module, under pytest's own temp root (a mkdtemp of its own was left behind)."""
    _DIRS[:] = [tmp_path_factory.mktemp("fuzz")]


def _run(text: str | bytes) -> None:
    path = _DIRS[0] / "fuzz.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    r = run_cli("serve", "--dry-run", "--machine", L4, str(path))
    assert r.code in (0, 2, 3, 4), (r.code, r.err)
    assert "Traceback" not in r.err and "internal error" not in r.err
    if r.code in (2, 3):
        assert "error:" in r.err
    if r.code == 4:
        assert "verdict: FAIL" in r.out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_profiles_never_crash(doc: dict) -> None:
    _run(tomli_w.dumps(doc))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(GOOD)), st.integers(0, 8), st.text(max_size=4)), max_size=4))
def test_mutated_profiles_never_crash(edits: list[tuple[int, int, str]]) -> None:
    text = GOOD
    for at, cut, insert in edits:
        text = text[:at] + insert + text[at + cut:]
    _run(text)
