"""`explain` on logs as they are really pasted (tests/data/real-logs) and on journals of several starts.

The real logs are users' pastes from public issue reports, labelled in their index.json; they are read
as they are, never edited. They live in the repository (copied from the team's shared set), so a clone
runs these tests as they are.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, blind_log, run_cli
from vllm_guard.cli import main as cli
from vllm_guard.diagnose import logread
from vllm_guard.diagnose.classify import classify, starts

LOGS = DATA / "logs"
REAL = DATA / "real-logs"

# Logs whose failure is not in the paste (their index notes say so): `unknown` is the honest answer.
NOT_IN_THE_LOG = {
    "025-oom_cudagraph.log": "the excerpt ends before the exception line; the class is the issue's title",
    "026-host_oom.log": "the log simply stops; the OOM kill is known from the author's write-up, not the log",
    "055-startup_timeout.log": "the excerpt ends before the exception line; the class is from the issue thread",
}


def _benchmark():  # the same evaluation as benchmarks/classify_real_logs.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import classify_real_logs
    finally:
        sys.path.pop(0)
    return classify_real_logs


def test_accuracy_on_the_shared_real_failures() -> None:
    """The threshold is what the classifier reaches with no label bent: every log whose paste holds
    its failure is right, and a wrong class is never given with confidence."""
    failures, startups = _benchmark().evaluate(REAL)
    failures = [r for r in failures if r.part == "failures"]
    assert len(failures) == 48
    wrong = [(r.file, r.label, r.got) for r in failures if not r.right]
    assert not [w for w in wrong if w[2] != "unknown"], wrong  # no confident error
    assert sum(r.right for r in failures) >= 45, wrong
    assert {w[0] for w in wrong} <= set(NOT_IN_THE_LOG), wrong
    assert [r.file for r in startups if r.got != "unknown"] == []  # a success never gets a failure class


@pytest.mark.parametrize(("name", "cls", "stage", "numbers"), [
    # terminal-wrapped by its author, on a unified-memory GB10
    ("004-gpu_busy.log", "gpu_busy", "before_start", {"free_gib": 110.73, "total_gib": 121.63, "requested_gib": 111.9}),
    ("014-no_kv_memory.log", "no_kv_memory", "kv_cache", {"available_kv_gib": -0.53}),
    # V0 0.2: no stage lines at all; the frames (create_weights) place the OOM; PyTorch's older wording
    ("016-oom_loading.log", "oom_loading", "weight_loading", {"tried_to_allocate_gib": 0.209, "free_gib": 0.131}),
    # the OOM line comes before the loading bar (stderr and stdout interleaved); another process holds the GPU
    ("018-oom_loading.log", "oom_loading", "weight_loading", {"total_gib": 139.72, "other_process_gib": 139.65}),
    # a worker's traceback (VllmWorkerProcess, V0): profile_run in the frames
    ("020-oom_profiling.log", "oom_profiling", "profiling", {"tried_to_allocate_gib": 1.95, "gpu_index": 1}),
    # the OOM inside Inductor's autotuning error message, during the profile run
    ("021-oom_profiling.log", "oom_profiling", "profiling", {"total_gib": 15.47}),
    ("027-host_oom.log", "host_oom", "weight_loading", {"node_used_gb": 12.49, "node_total_gb": 13.15}),
    ("037-quant_unsupported.log", "quant_unsupported", "before_start", {"min_capability": 75,
                                                                         "current_capability": 70}),
    ("041-too_few_gpus.log", "too_few_gpus", "before_start", {}),  # Windows paths, Ray placement group
    ("044-port_in_use.log", "port_in_use", "before_start", {"port": 8080}),  # uvicorn's lines only
    ("045-disk_full.log", "disk_full", "weight_loading", {"free_disk_mb": 0.0, "expected_file_mb": 4988.44}),
])
def test_real_shapes(name: str, cls: str, stage: str, numbers: dict) -> None:
    d = classify((REAL / "failures" / name).read_text())
    assert (d.cls, d.stage) == (cls, stage)
    for key, value in numbers.items():
        assert d.numbers.get(key) == value, (key, d.numbers)


def test_supporting_evidence_is_marked() -> None:
    d = classify((REAL / "failures/045-disk_full.log").read_text())
    assert any(e.startswith("supporting: ") and "free disk space" in e for e in d.evidence)


@pytest.mark.parametrize("name", sorted(NOT_IN_THE_LOG))
def test_a_log_without_its_failure_stays_unknown(name: str) -> None:
    assert classify((REAL / "failures" / name).read_text()).cls == "unknown", NOT_IN_THE_LOG[name]


# --- structure -------------------------------------------------------------------------------


def test_nested_prefixes_are_taken_off() -> None:
    raw = ("2025-03-07T05:56:13.899Z stdout F vllm-1  | \x1b[36m(RayWorkerWrapper pid=5280, ip=10.0.0.2)\x1b[0m "
           "INFO 03-07 05:56:13 [x.py:1] hello\n"
           "[rank0]: Traceback (most recent call last):\n"
           "> ValueError: quoted\n")
    assert [(line.proc, line.text) for line in logread.read(raw)] == [
        ("RayWorkerWrapper pid=5280", "INFO 03-07 05:56:13 [x.py:1] hello"), ("", "Traceback (most recent call last):"),
        ("", "ValueError: quoted")]


def test_tracebacks_are_kept_per_process() -> None:
    text = "\n".join([
        "(Worker_TP1 pid=2) ERROR 01-01 00:00:00 [w.py:1] Traceback (most recent call last):",
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [c.py:1] Traceback (most recent call last):",
        '(Worker_TP1 pid=2) ERROR 01-01 00:00:00 [w.py:1]   File "/v/gpu_model_runner.py", line 9, in capture_model',
        '(EngineCore pid=1) ERROR 01-01 00:00:00 [c.py:1]   File "/v/core.py", line 3, in __init__',
        "(Worker_TP1 pid=2) ERROR 01-01 00:00:00 [w.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.50 GiB is free.",
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [c.py:1] Exception: WorkerProc initialization failed due to an "
        "exception in a background process. See stack trace for root cause.",
    ])
    tbs = logread.tracebacks(logread.read(text))
    assert [(t.proc, [f.func for f in t.frames], t.exception) for t in tbs] == [
        ("Worker_TP1 pid=2", ["capture_model"], 4), ("EngineCore pid=1", ["__init__"], 5)]
    d = classify(text)  # no stage line at all: the worker's frames place the OOM
    assert (d.cls, d.stage, d.numbers["tried_to_allocate_gib"], d.numbers["free_gib"]) == (
        "oom_cudagraph", "cuda_graph", 2.0, 1.5)


def test_a_wrapped_line_is_read_whole() -> None:
    text = ("ValueError: Free memory on device cuda:0 (12.18/23.56 GiB) on startup is less than desired GPU me\n"
            "mory utilization (0.92, 21.67 GiB). Decrease GPU memory utilization or reduce GPU memory used.\n")
    d = classify(text)
    assert (d.cls, d.numbers["free_gib"], d.numbers["requested_gib"]) == ("gpu_busy", 12.18, 21.67)


def test_unknown_shows_the_workers_exception_not_the_wrappers() -> None:
    text = "\n".join([
        "(Worker_TP0 pid=2) ERROR 01-01 00:00:00 [w.py:1] Traceback (most recent call last):",
        '(Worker_TP0 pid=2) ERROR 01-01 00:00:00 [w.py:1]   File "/v/worker.py", line 9, in init_device',
        "(Worker_TP0 pid=2) ERROR 01-01 00:00:00 [w.py:1] RuntimeError: cu_seqlens_q must be on CUDA",
        "(EngineCore pid=1) RuntimeError: Engine core initialization failed. See root cause above.",
    ])
    d = classify(text)
    assert d.cls == "unknown" and d.evidence[0].endswith("RuntimeError: cu_seqlens_q must be on CUDA")


# --- starts ------------------------------------------------------------------------------------


def _journal(*parts: tuple[str, str]) -> str:
    """A journal as `journalctl -o short` prints it: (identifier[pid], text) per line."""
    return "".join(f"Nov 29 06:{i // 60 % 60:02d}:{i % 60:02d} gpu-01 {source}: {line}\n"
                   for i, (source, line) in enumerate(parts))


def _lines(source: str, name: str) -> list[tuple[str, str]]:
    return [(source, line) for line in (LOGS / name).read_text().splitlines() if line.strip()]


def test_a_journal_is_diagnosed_by_its_last_failed_start() -> None:
    """The ladder relaxed max-model-len after attempt 1; attempt 2 then failed on CUDA-graph memory."""
    guard = "vllm-guard[2211]"
    text = _journal(
        ("systemd[1]", "Starting vllm-guard@llama.service - vLLM behind vllm-guard (llama)..."),
        (guard, "vllm-guard: attempt 1/5: starting vLLM"),
        *_lines(guard, "kv_cache_too_small_033_with_estimate.log"),
        (guard, "vllm-guard: attempt 2/5: max-model-len 33728 (relaxed from 131072): starting vLLM"),
        *_lines(guard, "oom_cudagraph_after_kv_sizing.log"),
    )
    found = starts(text)
    assert [s.diagnosis.cls for s in found] == ["kv_cache_too_small", "oom_cudagraph"]
    assert classify(text).cls == "oom_cudagraph"
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["explain", "-", "--json"], environ={}, stdout=out, stderr=err, stdin=io.StringIO(text))
    doc = json.loads(out.getvalue())
    assert code == 0 and (doc["class"], doc["start"], doc["starts"]) == ("oom_cudagraph", 2, 2)
    assert (doc["next_step"]["param"], doc["next_step"]["value"]) == ("enforce-eager", True)


def test_systemd_restarts_and_a_new_pid_start_a_new_start() -> None:
    text = _journal(
        *_lines("vllm-guard[100]", "gpu_busy_033_device_name.log"),
        ("systemd[1]", "vllm-guard@llama.service: Main process exited, code=exited, status=5/NOTCONFIGURED"),
        ("systemd[1]", "Started vllm-guard@llama.service - vLLM behind vllm-guard (llama)."),
        *_lines("vllm-guard[200]", "kv_cache_too_small_033_with_estimate.log"),
        *_lines("vllm-guard[300]", "success_startup_033.log"),
    )
    found = starts(text)
    assert [(s.diagnosis.cls, s.failed) for s in found] == [
        ("gpu_busy", True), ("kv_cache_too_small", True), ("unknown", False)]
    assert classify(text).cls == "kv_cache_too_small"  # the last start is ready: the last failed one is shown


def test_explain_all_lists_every_start(tmp_path: Path) -> None:
    log = tmp_path / "two.log"
    log.write_text((LOGS / "gpu_busy_033_device_name.log").read_text()
                   + (LOGS / "no_kv_memory_033.log").read_text())
    r = run_cli("explain", str(log), "--all", "--json")
    docs = json.loads(r.out)
    assert r.code == 0 and [(d["class"], d["diagnosed"]) for d in docs] == [
        ("gpu_busy", False), ("no_kv_memory", True)]
    assert docs[0]["lines"][0] == 1 and docs[1]["lines"][0] == docs[0]["lines"][1] + 1
    r = run_cli("explain", str(log), "--all")
    assert r.code == 0
    assert "start 1/2" in r.out and "start 2/2" in r.out and "<- diagnosed below" in r.out
    assert "failure: no_kv_memory" in r.out


# --- input edge cases -------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_file_on_a_terminal_prints_usage() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["explain"], environ={}, stdout=out, stderr=err, stdin=_Terminal())
    assert code == 2 and "no log given" in err.getvalue() and "--unit" in err.getvalue()


def test_an_empty_input_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("\n  \n")
    r = run_cli("explain", str(empty))
    assert r.code == 2 and "empty" in r.err


def test_unit_and_file_together_is_a_usage_error() -> None:
    r = run_cli("explain", "--unit", "vllm-guard@llama", str(LOGS / "gpu_busy_033_device_name.log"))
    assert r.code == 2 and "not both" in r.err


def test_a_unit_without_journal_entries_says_so(tmp_path: Path) -> None:
    tool = tmp_path / "journalctl"
    tool.write_text("#!/bin/sh\necho '-- No entries --'\n")
    tool.chmod(0o755)
    r = run_cli("explain", "--unit", "vllm-gaurd@llama", env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert r.code == 2 and "no entries for vllm-gaurd@llama" in r.err and "systemd-journal" in r.err


def test_exit_status_137_alone_is_a_kill_not_host_oom(tmp_path: Path) -> None:
    log = tmp_path / "short.log"
    log.write_text("(APIServer pid=1) INFO 11-29 06:00:01 [startup.py:18] vLLM server version 0.33.0, "
                   "serving model m\n")
    r = run_cli("explain", str(log), "--exit-status", "137", "--json")
    doc = json.loads(r.out)
    assert r.code == 7 and (doc["class"], doc["detail"], doc["exit_signal"]) == ("unknown", "sigkill", 9)
    assert "`docker kill`, a watchdog or a person" in doc["evidence"][0]


@pytest.mark.parametrize(("name", "prefix", "max_seq_len"), [("blind6", "b6-024", 32768), ("blind9", "b9-002", 32768)])
def test_vllms_v0_kv_message_retyped_into_an_issue(name: str, prefix: str, max_seq_len: int) -> None:
    # "The model’s max sew len (32768) ..." and "the model's max seq len (32768) is larger than the maxinum number of
    # tokens ...": the reporters retyped it; its second half is vLLM's own words
    d = classify(blind_log(name, prefix))
    assert (d.cls, d.numbers["max_seq_len"]) == ("kv_cache_too_small", max_seq_len)
