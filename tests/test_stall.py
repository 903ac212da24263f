"""The stall watch (launch/stall.py): stacks read with the real py-spy from a real process, or why not, bounded,
and a stop signal acted on; the download probe on a real cache directory."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from vllm_guard.diagnose.hang import ProgressDetector, StallLimits
from vllm_guard.launch.stall import HangProbes, StallWatch, model_cache_bytes, py_spy_dump


@dataclass
class Ctx:
    """What the stall watch reads of a launch's context."""

    environ: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    gpu_probe: None = None
    gpus: tuple = ()
    stop_signal: int | None = None


def _hung_detector() -> ProgressDetector:
    d = ProgressDetector(0.0, StallLimits(2.0))
    d.line("(EngineCore_DP0 pid=7) INFO 12-02 02:29:07 [core.py:1247] Waiting for READY message from DP "
           "Coordinator...", 1.0)
    return d


def test_the_real_py_spy_reads_a_real_process_and_the_stacks_go_to_a_file(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time\ndef wait_here():\n    time.sleep(120)\n"
                                "wait_here()\n"])
    try:
        time.sleep(0.5)  # the interpreter is up
        watch = StallWatch(Ctx(), "m", _hung_detector(), HangProbes(processes=lambda pid: [(sleeper.pid, "sleeper")]))
        verdict = watch.look(10.0)
        assert verdict is not None and verdict.hung
        diagnosis, record = watch.hung(1, verdict, tmp_path / "stacks" / "a-attempt1.txt")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (diagnosis.cls, diagnosis.stage, record["stage_from"]) == ("startup_hang", "dp_coordinator",
                                                                        "waiting line")
    if record["notes"]:  # py-spy may not attach where ptrace is not permitted: said, never a crash
        assert record["frames"] == {} and record["stacks_file"] is None
        return
    frames = record["frames"][f"sleeper (pid {sleeper.pid})"]
    assert any(f.startswith("wait_here (<string>") for f in frames), frames
    assert "Thread " in Path(record["stacks_file"]).read_text()


def test_a_dumper_that_may_not_attach_is_a_note() -> None:
    calls: list[int] = []

    def refused(pid: int, timeout_s: float) -> tuple[str | None, str | None]:
        calls.append(pid)
        return None, "py-spy may not attach (ptrace not permitted)"

    watch = StallWatch(Ctx(), "m", _hung_detector(), HangProbes(dump=refused, processes=lambda pid: [(5, "a"),
                                                                                                     (6, "b")]))
    verdict = watch.look(10.0)
    assert verdict is not None
    _, record = watch.hung(1, verdict, None)
    assert calls == [5, 6] and record["notes"] == ["py-spy may not attach (ptrace not permitted)"]
    assert record["frames"] == {} and record["stacks_file"] is None


def test_a_stop_signal_means_no_stacks_are_read() -> None:
    ctx = Ctx(stop_signal=15)
    watch = StallWatch(ctx, "m", _hung_detector(), HangProbes(dump=lambda pid, t: ("never", None),
                                                               processes=lambda pid: [(5, "a")]))
    verdict = watch.look(10.0)
    assert verdict is not None
    _, record = watch.hung(1, verdict, None)
    assert record["frames"] == {} and "stop signal" in record["notes"][0]


def test_py_spy_on_a_pid_that_is_gone_says_why() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    text, why = py_spy_dump(gone.pid, 5.0)
    assert text is None and why


def test_the_download_probe_sees_partial_files_only(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path)}
    assert model_cache_bytes("org/model", env) is None and model_cache_bytes("/local/path", env) is None
    blobs = tmp_path / "models--org--model" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "done").write_bytes(b"x" * 10)
    assert model_cache_bytes("org/model", env) is None
    (blobs / "abc.incomplete").write_bytes(b"x" * 7)
    assert model_cache_bytes("org/model", env) == 7
