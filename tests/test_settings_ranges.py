"""Every number the guard reads from a profile has a range, both ends tested (issue 28, item 5).

Durations end at a week: `stop-timeout = 1e308` once passed `check`, and `serve` then failed a healthy start,
crashed (OverflowError) or never stopped.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vllm_guard.errors import ProfileError
from vllm_guard.profile.load import load_profile
from vllm_guard.profile.settings import CHECK_SETTINGS, DURATION_MAX_S, GUARD_SETTINGS, LADDER_SETTINGS, Setting

NUMERIC = ("int", "float", "duration", "len")
TABLES = {"guard": GUARD_SETTINGS, "ladder": LADDER_SETTINGS, "checks": CHECK_SETTINGS}
CASES = [(table, key, s) for table, settings in TABLES.items() for key, s in settings.items() if s.kind in NUMERIC]


# The other end of a pair the profile checks together (min <= max), set out of the way.
COMPANION = {"min-gpu-memory-utilization": "max-gpu-memory-utilization = 1.0",
             "max-gpu-memory-utilization": "min-gpu-memory-utilization = 0.01"}


def load(tmp_path: Path, table: str, key: str, literal: str):
    header = "[guard]" if table == "guard" else f"[guard.{table}]"
    path = tmp_path / "p.toml"
    path.write_text(f'[model]\nid = "Qwen/Qwen3-0.6B"\n{header}\n{key} = {literal}\n{COMPANION.get(key, "")}\n')
    return load_profile(path)


def literal(setting: Setting, value: float) -> str:
    return str(int(value)) if setting.kind in ("int", "len") else repr(float(value))


def test_every_numeric_setting_has_both_ends() -> None:
    assert CASES
    for _table, key, s in CASES:
        assert s.minimum is not None, key
        assert s.upper is not None and math.isfinite(s.upper), key
        if s.kind == "duration":
            assert s.upper <= DURATION_MAX_S, key


@pytest.mark.parametrize(("table", "key", "setting"), CASES, ids=[f"{t}.{k}" for t, k, _ in CASES])
def test_each_end_is_accepted_and_beyond_it_refused(tmp_path: Path, table: str, key: str, setting: Setting) -> None:
    assert setting.minimum is not None and setting.upper is not None
    low, high = setting.minimum, setting.upper
    if setting.kind in ("int", "len"):
        low, high = math.ceil(low), math.floor(high)
    for ok in (low, high):
        load(tmp_path, table, key, literal(setting, ok))
    step = 1 if setting.kind in ("int", "len") else max(abs(high) * 1e-3, 1e-3)
    below = low - (1 if setting.kind in ("int", "len") else max(abs(low) * 1e-3, 1e-3))
    for bad in (below, high + step):
        with pytest.raises(ProfileError, match=r"must be at (least|most)"):
            load(tmp_path, table, key, literal(setting, bad))
    huge = "1" + "0" * 400 if setting.kind in ("int", "len") else "1e308"
    with pytest.raises(ProfileError, match="must be at most") as e:
        load(tmp_path, table, key, huge)
    assert len(str(e.value)) < 600  # a 400-digit number is not echoed whole
    if setting.kind in ("float", "duration"):
        for special in ("nan", "inf"):
            with pytest.raises(ProfileError):
                load(tmp_path, table, key, special)


def test_check_refuses_a_stop_timeout_of_1e308_with_a_message_and_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard]\nstop-timeout = 1e308\n')
    r = run_cli("check", "--machine", str(Path(__file__).parents[1] / "profiles/machines/l4-24gb.json"), str(path))
    assert r.code != 0
    assert "stop-timeout" in r.err and "must be at most 604800 (7 days)" in r.err, r.err
    assert "hint:" in r.err


def test_a_duration_in_hours_beyond_a_week_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="7 days"):
        load(tmp_path, "guard", "startup-timeout", '"200h"')
    assert load(tmp_path, "guard", "startup-timeout", '"168h"').setting("startup-timeout") == DURATION_MAX_S
