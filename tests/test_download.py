"""guard.download (issue 24 item 6): the decision, the progress lines, the cache measure, the fetch under a
watcher, and the huggingface_hub boundary in a real offline process. No test touches the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_guard.errors import GuardError
from vllm_guard.facts.model import ModelFacts
from vllm_guard.probes.download import ProgressLines, blobs_bytes, decide, fetch_with_lines

GIB = 2**30
HUB = ModelFacts("Qwen/Qwen3-8B", "hub", weights_bytes=16 * GIB, weights_source="hub-metadata", weights_local=False)


@pytest.mark.parametrize(
    ("model", "enabled", "environ", "local_path", "fetch", "words"),
    [
        (HUB, True, {}, False, True, "fetching 16.00 GiB"),
        (HUB, False, {}, False, False, "guard.download = false"),
        (HUB, True, {}, True, False, "local path"),
        (ModelFacts("Qwen/Qwen3-8B", "cache", weights_local=True), True, {}, False, False, "already in"),
        (HUB, True, {"HF_HUB_OFFLINE": "1"}, False, False, "HF_HUB_OFFLINE"),
        (ModelFacts("x/y", "hub", weights_local=False), True, {}, False, False, "no safetensors metadata"),
        (ModelFacts("x/y", "bundled", weights_bytes=GIB, weights_source="estimate"), True, {}, False, False,
         "vLLM downloads it itself"),
    ],
    ids=["hub id not cached", "switched off", "local path", "cached", "offline", "no metadata", "bundled only"],
)
def test_decision(model: ModelFacts, enabled: bool, environ: dict, local_path: bool, fetch: bool,
                  words: str) -> None:
    d = decide(model, enabled, environ, local_path=local_path)
    assert d.fetch is fetch and words in d.reason


def test_progress_lines_every_interval_then_a_last_one() -> None:
    lines = ProgressLines("Qwen/Qwen3-8B", 16 * GIB, 0, start_s=100.0, interval_s=10.0)
    assert lines.line(1 * GIB, 105.0) is None  # too soon
    assert lines.line(2 * GIB, 110.0) == ("vllm-guard: downloading Qwen/Qwen3-8B: 2.00 GiB of about 16.00 GiB "
                                          "(12%), 204.8 MiB/s")
    assert lines.line(3 * GIB, 115.0) is None  # 5 s after the last line
    # Tensor bytes understate the files: the share stays below 100 until the fetch returns.
    assert "(99%)" in (lines.line(17 * GIB, 120.0) or "")
    assert lines.line(17 * GIB, 121.0, final=True) == ("vllm-guard: downloaded Qwen/Qwen3-8B: 17.00 GiB of about "
                                                       "16.00 GiB (100%), 829.0 MiB/s")


def test_progress_lines_with_unknowns() -> None:
    lines = ProgressLines("x/y", None, None, start_s=0.0, interval_s=1.0)
    assert lines.line(None, 2.0) == "vllm-guard: downloading x/y: nothing on disk yet (2s)"
    assert lines.line(3 * 2**20, 3.0) == "vllm-guard: downloading x/y: 3.0 MiB, 1.0 MiB/s"  # no total: no share
    started = ProgressLines("x/y", 10 * GIB, 4 * GIB, start_s=0.0, interval_s=1.0)  # a download resumed
    assert (started.line(5 * GIB, 10.0) or "").endswith("(50%), 102.4 MiB/s")


def _blobs(cache: Path, model: str) -> Path:
    blobs = cache / ("models--" + model.replace("/", "--")) / "blobs"
    blobs.mkdir(parents=True)
    return blobs


def test_blobs_bytes_counts_whole_and_incomplete_files(tmp_path: Path) -> None:
    assert blobs_bytes("x/y", str(tmp_path)) is None  # nothing yet: unknown, not 0
    blobs = _blobs(tmp_path, "x/y")
    (blobs / "aa").write_bytes(b"1" * 1000)
    (blobs / "bb.incomplete").write_bytes(b"2" * 24)
    assert blobs_bytes("x/y", str(tmp_path)) == 1024


def test_fetch_runs_under_the_watcher_and_ends_with_a_line(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path, "x/y")
    written: list[str] = []

    def fetch() -> str:  # a fetcher that lands bytes in the cache as huggingface_hub does
        (blobs / "cc.incomplete").write_bytes(b"3" * 2**20)
        (blobs / "cc.incomplete").rename(blobs / "cc")
        return str(tmp_path / "snapshot")

    lines = ProgressLines("x/y", 2**20, blobs_bytes("x/y", str(tmp_path)), start_s=0.0, interval_s=0.0)
    path = fetch_with_lines(fetch, lambda: blobs_bytes("x/y", str(tmp_path)), written.append, lines,
                            clock=lambda: 1.0, look_s=0.01)
    assert path == str(tmp_path / "snapshot")
    assert written[-1] == "vllm-guard: downloaded x/y: 1.0 MiB of about 1.0 MiB (100%), 1.0 MiB/s"
    assert all("\n" not in w and "\r" not in w for w in written)  # the writer adds the newline, never a \r


def test_a_failed_fetch_raises_and_stops_the_watcher() -> None:
    def fetch() -> str:
        raise GuardError("downloading x/y: the Hub says it needs a token (HF_TOKEN)")

    lines = ProgressLines("x/y", None, None, start_s=0.0)
    with pytest.raises(GuardError, match="needs a token"):
        fetch_with_lines(fetch, lambda: None, lambda _: None, lines, look_s=0.01)


SCRIPT = """
import json, sys
from vllm_guard.errors import GuardError
from vllm_guard.probes.download import ALLOW_PATTERNS, IGNORE_PATTERNS
from vllm_guard.probes.model import download_snapshot
try:
    print(json.dumps({"path": download_snapshot(sys.argv[1], None, sys.argv[2], {}, allow=ALLOW_PATTERNS,
                                                ignore=IGNORE_PATTERNS, bars=False)}))
except GuardError as e:
    print(json.dumps({"error": e.message}))
"""


def _download_offline(model: str, cache: Path) -> dict:
    """The real huggingface_hub call, in a process of its own with HF_HUB_OFFLINE=1 (read at its import)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, model, str(cache)], capture_output=True, text=True,
                         env=env, timeout=120, check=True, cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.stdout)


def test_download_snapshot_offline_finds_a_cached_snapshot(tmp_path: Path) -> None:
    repo = tmp_path / "models--x--y"
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    assert _download_offline("x/y", tmp_path) == {"path": str(snap)}


def test_download_snapshot_offline_without_the_model_is_a_guard_error(tmp_path: Path) -> None:
    got = _download_offline("x/y", tmp_path)
    assert got.get("error", "").startswith("downloading x/y"), got


def test_moved_hears_bytes_that_arrive(tmp_path: Path) -> None:
    """serve extends systemd's start timeout on `moved`: it must hear growth, and only growth."""
    import threading

    blobs = _blobs(tmp_path, "x/y")
    heard: list[int] = []
    seen = threading.Event()

    def moved(n: int) -> None:
        heard.append(n)
        seen.set()

    def fetch() -> str:
        (blobs / "dd.incomplete").write_bytes(b"4" * 4096)
        assert seen.wait(30), "the watcher never saw the bytes arrive"
        return "done"

    lines = ProgressLines("x/y", None, 0, start_s=0.0)
    assert fetch_with_lines(fetch, lambda: blobs_bytes("x/y", str(tmp_path)), lambda _: None, lines,
                            look_s=0.01, moved=moved) == "done"
    assert heard == [4096]  # once: the bytes did not grow again
