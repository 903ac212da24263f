"""Issue 11: every `vllm serve` command line works as a drop-in, with the right exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from vllm_guard.cli.parser import GUARD_OPTIONS
from vllm_guard.options.table import choose_table, load_table, table_versions

MACHINE = str(ROOT / "profiles" / "machines" / "l4-24gb.json")


def test_options_before_the_model_and_model_option() -> None:
    for argv in (["--max-model-len", "4096", "Qwen/Qwen3-0.6B"],
                 ["--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"]):
        r = run_cli("serve", "--dry-run", "--machine", MACHINE, *argv)
        assert r.code == 0, r.err
        assert "vllm serve Qwen/Qwen3-0.6B --max-model-len 4096" in r.out


def test_config_yaml_takes_part_in_the_preflight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tp2.yaml").write_text("tensor-parallel-size: 2\n")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--json", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--config", "tp2.yaml")
    assert r.code == 4 and '"gpu.count"' in r.out and "from tp2.yaml" in r.out
    r = run_cli("serve", "--dry-run", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--config", "tp2.yaml", "-tp", "1")
    assert r.code == 0, r.err  # the command line wins over the file, as in vLLM
    assert "vllm serve Qwen/Qwen3-0.6B --config tp2.yaml -tp 1" in r.out
    # vLLM itself wants the model first (or in the file) when --config is used: a usage error, exit 2.
    r = run_cli("check", "--machine", MACHINE, "--config", "tp2.yaml", "Qwen/Qwen3-0.6B")
    assert r.code == 2 and "no model" in r.err


def test_config_yaml_errors_are_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.yaml").write_text("kv-cache-dtype: fp9\n")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--config", "bad.yaml")
    assert r.code == 3 and "bad.yaml" in r.err and "fp8" in r.err


def test_auto_stays_vllms() -> None:
    r = run_cli("serve", "--dry-run", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--max-model-len", "auto")
    assert r.code == 0 and "--max-model-len auto" in r.out and "predicts about" in r.out


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--kv-cache-dtype", "fp9"], "did you mean 'fp8'"),
    (["--gpu-memory-utilization", "1.5"], "(0, 1]"),
    (["--max-num-seqs", "-4"], "at least 1"),
    (["--max-model-lenght", "4"], "did you mean --max-model-len"),
])
def test_bad_command_line_values_are_exit_2(argv: list[str], fragment: str) -> None:
    r = run_cli("check", "--machine", MACHINE, "Qwen/Qwen3-0.6B", *argv)
    assert r.code == 2 and fragment in r.err + r.out


def test_same_value_in_a_profile_is_exit_3(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\ngpu-memory-utilization = 1.5\n')
    assert run_cli("check", "--machine", MACHINE, str(p)).code == 3
    p.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard.ladder]\nmax-gpu-memory-utilization = 1.6\n')
    assert run_cli("check", "--machine", MACHINE, str(p)).code == 3
    p.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[guard.ladder]\nmin-gpu-memory-utilization = 0.9\n'
                 "max-gpu-memory-utilization = 0.8\n")
    r = run_cli("check", "--machine", MACHINE, str(p))
    assert r.code == 3 and "min <= max" in r.err
    p.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nconfig = "x.yaml"\n')
    assert run_cli("check", "--machine", MACHINE, str(p)).code == 3


def test_unknown_option_one_letter_off_is_still_reported(tmp_path: Path) -> None:
    p = tmp_path / "p.toml"
    p.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nmax-model-lenght = 4096\n'
                 "[guard]\nallow-unknown-vllm-options = true\n")
    r = run_cli("check", "--machine", MACHINE, str(p))
    assert "close to `max-model-len`" in r.out + r.err


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_trailing_guard_options_are_never_vllm_spellings(version: str) -> None:
    """The rule of item 5, checked from each table: after TARGET, a guard option is the guard's only
    where vLLM has no option of that spelling or starting with it; these all qualify today."""
    table = load_table(version)
    for options in GUARD_OPTIONS.values():
        for name in (n for n, o in options.items() if o.after_target):
            assert not table.claims(name), (version, name)


def test_guard_options_after_target() -> None:
    r = run_cli("serve", "Qwen/Qwen3-0.6B", "--dry-run", "--exec", "--machine", MACHINE)
    assert r.code == 0 and "vllm serve Qwen/Qwen3-0.6B" in r.out
    r = run_cli("check", "Qwen/Qwen3-0.6B", "--dry-run", "--machine", MACHINE)
    assert r.code == 2 and "not an option of `vllm-guard check`" in r.err


def test_table_by_version() -> None:
    assert table_versions() == ("0.32.0", "0.33.0")
    assert choose_table("0.32.0+cpu", "x").table.vllm_version == "0.32.0"
    assert choose_table("0.33.1", "x").table.vllm_version == "0.33.0"
    newer = choose_table("0.35.0", "x")
    assert newer.newer and newer.warning and newer.table.vllm_version == "0.33.0"
    assert choose_table(None, "x").table.vllm_version == "0.33.0"
    assert load_table("0.32.0").resolve("--disable-prefix-caching") is None
    assert load_table("0.33.0").resolve("--disable-prefix-caching") is not None


def test_snapshot_version_picks_the_table_for_planning(tmp_path: Path) -> None:
    import json

    snap = json.loads(Path(MACHINE).read_text())
    snap["vllm_version"] = "0.32.0"
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    r = run_cli("check", "--json", "--machine", str(path), "Qwen/Qwen3-0.6B", "--spec-method", "medusa")
    assert r.code == 0, r.err  # medusa is a vLLM 0.32 choice ...
    assert json.loads(r.out)["vllm"]["option_table"] == "vllm-0.32.0-serve-options.json"
    r = run_cli("check", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--spec-method", "medusa")
    assert r.code == 2  # ... and not one of 0.33's, the newest table, used when the snapshot records none


def test_an_option_overriding_the_config_file_is_not_said_to_come_from_it(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: after -tp 1 over the file's 2, the report said "tensor-parallel-size = 2 from tp2.yaml"."""
    (tmp_path / "tp2.yaml").write_text("tensor-parallel-size: 2\nmax-model-len: 4096\n")
    monkeypatch.chdir(tmp_path)
    r = run_cli("check", "--machine", MACHINE, "Qwen/Qwen3-0.6B", "--config", "tp2.yaml", "-tp", "1")
    assert r.code == 0, r.out + r.err
    assert "tensor-parallel-size = 2 from tp2.yaml" not in r.out + r.err
    assert "max-model-len = 4096 from tp2.yaml" in r.out + r.err  # what the file still decides is said


def test_machine_after_the_model_takes_the_snapshots_table(tmp_path: Path) -> None:
    """Issue 23: where --machine stands decided the option table (after the model: the local vLLM's)."""
    import json

    doc = json.loads(Path(MACHINE).read_text())
    doc["vllm_version"] = "0.32.0"
    snap = tmp_path / "m.json"
    snap.write_text(json.dumps(doc))
    before = run_cli("check", "--machine", str(snap), "Qwen/Qwen3-0.6B", "--max-model-len", "4096")
    after = run_cli("check", "Qwen/Qwen3-0.6B", "--max-model-len", "4096", "--machine", str(snap))
    for r in (before, after):
        assert r.code == 0, r.err
        assert "vLLM 0.32.0 (snapshot" in r.out and "vllm-0.32.0-serve-options.json" in r.out
