"""How the guard's reports read: on a real terminal of 80 and 100 columns, and in a pipe."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import L4, ROOT, run_cli

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
BASE_ENV = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "PYTHONPATH": str(ROOT),
            "TERM": "xterm-256color"}


def on_terminal(columns: int, *argv: str) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a real pseudo-terminal of ``columns`` columns."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "vllm_guard", *argv], stdin=slave, stdout=slave, stderr=slave,
                            env=BASE_ENV, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    code = proc.wait(timeout=60)
    return code, ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def in_pipe(*argv: str) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "vllm_guard", *argv], capture_output=True, text=True, env=BASE_ENV,
                       timeout=60)
    return r.returncode, r.stdout


def words_whole(text: str, sentence: str) -> bool:
    """The sentence is in the text with every word whole, however the lines were wrapped."""
    flat = " ".join(re.sub(r"[│┃]", " ", text).split())
    return " ".join(sentence.split()) in flat


@pytest.fixture(scope="module")
def l4_json() -> dict:
    r = run_cli("check", "--json", "--machine", L4, MODEL)
    return json.loads(r.out)


@pytest.mark.parametrize("columns", [80, 100])
def test_terminal_wraps_at_word_boundaries(columns: int, l4_json: dict) -> None:
    code, out = on_terminal(columns, "check", "--machine", L4, MODEL)
    assert code == 4
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns
    # Prose outside the table never breaks a word: each fix line and note reads whole when unwrapped.
    verdict = out[out.index("verdict: FAIL"):]
    kv = next(c for c in l4_json["checks"] if c["id"] == "model.kv_fit")
    assert words_whole(verdict, f"FAIL model.kv_fit: {kv['fix']}")
    # The check ids in the table are never cut inside.
    for check in l4_json["checks"]:
        assert check["id"] in out


def test_pipe_never_hard_wraps(l4_json: dict) -> None:
    code, out = in_pipe("check", "--machine", L4, MODEL)
    assert code == 4
    kv = next(c for c in l4_json["checks"] if c["id"] == "model.kv_fit")
    # grep finds the whole sentence on one line.
    assert any(kv["message"] in line for line in out.splitlines())
    assert any("The largest max-model-len that fits is 38,112" in line for line in out.splitlines())
    for note in l4_json["notes"]:
        assert f"note: {note}" in out.splitlines()


def test_table_shows_sentences_and_skip_reasons(l4_json: dict) -> None:
    out = run_cli("check", "--machine", L4, MODEL).out
    for check in l4_json["checks"]:
        row = next(line for line in out.splitlines() if f" {check['id']} " in line)
        assert check["message"].splitlines()[0] in row, check["id"]
    assert "port availability is not part of a machine snapshot" in out
    assert "bytes:" not in out and "factor:" not in out  # no key dumps


def test_memory_bar_reads_without_colour() -> None:
    out = run_cli("check", "--machine", L4, MODEL, env={"NO_COLOR": "1"}).out
    legend = next(line for line in out.splitlines() if "weights" in line and "KV cache" in line and "█" in line)
    glyphs = re.findall(r"(\S) (weights|non-torch|activations|CUDA graphs|KV cache|rest of budget) ", legend)
    assert len({g for g, _ in glyphs}) == 6  # one distinct glyph per part
    bar = out.splitlines()[out.splitlines().index(legend) - 1]
    assert {g for g, _ in glyphs if g in bar} >= {"█", "="}  # weights and KV cache both visible


def test_verdict_counts_failures_and_gives_each_fix(tmp_path) -> None:
    snap = json.loads(Path(L4).read_text())
    snap["host"]["memory_available_bytes"] = 8 * 2**30
    snap["host"]["shm_free_bytes"] = 32 * 2**20
    path = tmp_path / "small.json"
    path.write_text(json.dumps(snap))
    r = run_cli("check", "--machine", str(path), MODEL, "--tensor-parallel-size", "2")
    doc = json.loads(run_cli("check", "--json", "--machine", str(path), MODEL, "--tensor-parallel-size", "2").out)
    failed = [c for c in doc["checks"] if c["status"] == "fail"]
    assert len(failed) >= 2
    assert f"verdict: FAIL ({len(failed)} checks failed" in r.out
    for c in failed:
        assert f"  FAIL {c['id']}: {c['fix']}" in r.out


def test_gpu_count_fix_for_one_gpu_says_no_or_fewer() -> None:
    r = run_cli("check", "--json", "--machine", L4, MODEL, "--tensor-parallel-size", "2")
    count = next(c for c in json.loads(r.out)["checks"] if c["id"] == "gpu.count")
    # Issue 23: the value offered is one that passes when applied: tensor parallel 1, with the length that fits.
    assert count["fix"].startswith("--tensor-parallel-size 1 --max-model-len ") and "or fewer" not in count["fix"]


def test_attempts_read_at_100_columns(tmp_path: Path) -> None:
    from vllm_guard.state import attempts

    log = tmp_path / "p.jsonl"
    attempts.append(log, {"attempt": 1, "started_at": "2026-11-30T10:00:00+00:00", "duration_s": 12.4,
                          "argv": ["vllm", "serve", MODEL], "changed": {}, "preflight": "forced",
                          "outcome": "failed", "failure": {"class": "kv_cache_too_small", "stage": "kv_cache"},
                          "next": {"param": "max-model-len", "value": 33728, "reason": "vLLM's estimate"}})
    attempts.append(log, {"attempt": 2, "started_at": "2026-11-30T10:00:13+00:00", "duration_s": 3.5,
                          "argv": ["vllm", "serve", MODEL], "changed": {"max-model-len": [131072, 33728]},
                          "preflight": "forced", "outcome": "ready", "failure": None, "next": None,
                          "reported": {"kv_cache_tokens": 40544, "max_concurrency": 1.2, "time_to_ready_s": 3.5},
                          "phases": {"imports": 1.0, "weights": 2.5, "health": 3.5}})
    code, out = on_terminal(100, "attempts", str(log))
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    # Short phrases stay on one line of their cell; longer cells wrap between words, never inside one.
    for phrase in ("ready after 3.5 s", "failed after 12.4 s", "preflight: forced", "kv_cache_too_small",
                   "KV 40,544 tokens"):
        assert any(phrase in line for line in out.splitlines()), phrase
    tokens = out.split()
    for word in ("max-model-len:", "131072", "33728", "next:", "max-model-len"):
        assert word in tokens, word


def test_no_memory_figures_for_gpus_that_are_not_there() -> None:
    r = run_cli("check", "--machine", L4, MODEL, "--tensor-parallel-size", "2")
    assert r.code == 4 and "memory per GPU" not in r.out and "KV cache:" not in r.out
    doc = json.loads(run_cli("check", "--json", "--machine", L4, MODEL, "--tensor-parallel-size", "2").out)
    for check_id in ("model.weights_fit", "model.kv_fit"):
        finding = next(c for c in doc["checks"] if c["id"] == check_id)
        assert finding["status"] == "skip" and "needs 2 GPUs and vLLM will see 1" in finding["message"]


@pytest.mark.parametrize("log", ["quant_unsupported_min_capability.log", "dtype_bfloat16_on_t4.log"])
def test_explain_shows_compute_capability_as_major_dot_minor(log: str) -> None:
    from tests.conftest import DATA

    r = run_cli("explain", str(DATA / "logs" / log))
    assert "numbers: min_capability 8.0, current_capability 7.5" in r.out
