"""While a start runs: tell the progress detector (diagnose/hang.py) what the log does not say (bytes in the
model's download cache, GPU memory of the launch), ask it whether the start is hung, and on a hang record where
every process of the launch is stuck (py-spy) before the attempt stops it.

py-spy (the `hangs` extra) reads a process's Python stacks from outside with ptrace: it needs the same user
and a ptrace_scope that allows it (or CAP_SYS_PTRACE); where it cannot attach, the record says why. Each dump
is bounded in time and size, and runs in a thread so that a stop signal is acted on at once.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_guard.diagnose import stacks as stack_text
from vllm_guard.diagnose.catalogue_support import HANG_SOURCES
from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.hang import ProgressDetector, StallLimits, Verdict, hang_stage
from vllm_guard.launch import process
from vllm_guard.probes.host import descendants

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext

LOOK_S = 5.0  # between looks at the cache and the GPUs: each is a directory listing or an NVML query
DUMP_TIMEOUT_S = 5.0  # per process: py-spy attaches, walks the stacks and detaches in well under a second
DUMP_MAX_BYTES = 64 * 1024  # per process; vLLM's threads make a few KiB
MAX_PROCESSES = 32  # API server, EngineCore(s), workers; more is not a launch of one model
PYSPY_HINT = "pip install '.[hangs]' (py-spy) to record where a hung start is stuck"

StackDumper = Callable[[int, float], tuple[str | None, str | None]]  # (pid, timeout_s) -> (text, why not)


def limits_of(setting: Any) -> StallLimits:
    """guard.stall-timeout: one limit for every stage, or None for the per-stage defaults."""
    return StallLimits(None if setting is None else float(setting))


def py_spy_dump(pid: int, timeout_s: float) -> tuple[str | None, str | None]:
    """``py-spy dump --pid PID``: its text, or None and why not (never raises)."""
    exe = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.access(exe, os.X_OK):
        return None, f"py-spy is not installed: {PYSPY_HINT}"
    rc, out = process.run_bounded([exe, "dump", "--pid", str(pid)], timeout_s, DUMP_MAX_BYTES)
    if rc == 0:
        return out, None
    if re.search(r"ptrace|Operation not permitted|Permission denied", out, re.I):
        return None, ("py-spy may not attach (ptrace not permitted: run as the same user with "
                      "kernel.yama.ptrace_scope 0, or give the guard CAP_SYS_PTRACE)")
    first = next((line for line in out.splitlines() if line.strip()), "no output")
    return None, f"py-spy could not read process {pid}: {first[:200]}"


def model_cache_bytes(model: str, environ: Mapping[str, str]) -> int | None:
    """Bytes of this model's downloads in flight: huggingface_hub writes each file as ``blobs/<hash>.incomplete``
    in the cache and renames it when done (file_download.py). None for a local path, or no download in flight.
    A listing of one directory: cheap."""
    if not model or "/" not in model or model.startswith(("/", ".", "~")):
        return None
    hub = environ.get("HF_HUB_CACHE") or os.path.join(
        environ.get("HF_HOME") or os.path.join(environ.get("HOME") or str(Path.home()), ".cache", "huggingface"),
        "hub")
    blobs = os.path.join(hub, "models--" + model.replace("/", "--"), "blobs")
    try:
        with os.scandir(blobs) as entries:
            sizes = [e.stat(follow_symlinks=False).st_size for e in entries
                     if e.name.endswith(".incomplete") and e.is_file(follow_symlinks=False)]
    except OSError:
        return None
    return sum(sizes) if sizes else None


def stall_summary(record: Mapping[str, Any]) -> list[str]:
    """What the guard says of a hang it stopped: the stage, where each process was stuck, or why not known."""
    lines = [f"startup_hang in {record['stage']} (from {record['stage_from']}): "
             f"no progress for {record['idle_s']:g}s"]
    lines += [f"stuck in {line}" for line in stack_text.summary(record.get("frames"))]
    lines += [f"stacks: {record['stacks_file']}"] if record.get("stacks_file") else []
    return lines + [f"stacks: {note}" for note in record.get("notes") or ()]


@dataclass(frozen=True)
class HangProbes:
    """What the stall watch reaches: py-spy, the model cache, the processes of a launch. Tests pass fakes."""

    dump: StackDumper = py_spy_dump
    cache_bytes: Callable[[str, Mapping[str, str]], int | None] = model_cache_bytes
    processes: Callable[[int], list[tuple[int, str]]] = descendants


class StallWatch:
    """One attempt's stall watch: ``look`` now and then; ``hung`` once, before the attempt stops vLLM."""

    def __init__(self, ctx: LaunchContext, model: str, detector: ProgressDetector, probes: HangProbes) -> None:
        self.ctx, self.model, self.detector, self.probes = ctx, model, detector, probes
        self._last_look: float | None = None

    def look(self, now_s: float) -> Verdict | None:
        """The verdict when the start is hung; None while it moves (or is within its limit)."""
        # often enough that a short stall-timeout is judged on fresh bytes and memory, at most every LOOK_S
        every_s = min(LOOK_S, self.detector.limits.for_stage(self.detector.activity) / 4)
        if self._last_look is None or now_s - self._last_look >= every_s:
            self._last_look = now_s
            self.detector.cache_bytes(self.probes.cache_bytes(self.model, self.ctx.environ), now_s)
            self.detector.gpu_memory(self._gpu_used(), now_s)
        verdict = self.detector.verdict(now_s)
        return verdict if verdict.hung else None

    def _gpu_used(self) -> int | None:
        """Memory in use on the launch's GPUs (all processes: NVML per process needs more rights); None without
        a live probe (a snapshot, a CPU build)."""
        if self.ctx.gpu_probe is None or not self.ctx.gpus:
            return None
        wanted = {g.uuid for g in self.ctx.gpus}
        used = [g.memory_total_bytes - g.memory_free_bytes for g in self.ctx.gpu_probe()
                if g.uuid in wanted and g.memory_total_bytes is not None and g.memory_free_bytes is not None]
        return sum(used) if used else None

    def hung(self, root_pid: int, verdict: Verdict, stacks_path: Path | None) -> tuple[Diagnosis, dict[str, Any]]:
        """The diagnosis and the record's "hang" entry: the stacks of every process below ``root_pid``."""
        dumps, notes = self._dump_all(root_pid)
        frames = {label: stack_text.main_frames(text) for label, text in dumps.items()}
        reading = hang_stage(frames.values(), verdict)
        record: dict[str, Any] = {"stage": reading.stage, "stage_from": reading.came_from, "idle_s": verdict.idle_s,
                                  "stall_timeout_s": verdict.limit_s, "activity": verdict.activity,
                                  "frames": {k: list(v) for k, v in frames.items()}, "notes": notes or None,
                                  "stacks_file": None}
        if dumps and stacks_path is not None:
            record["stacks_file"] = self._write(stacks_path, dumps, notes)
        numbers = {"stall_timeout_s": verdict.limit_s, "idle_s": verdict.idle_s, **verdict.numbers}
        evidence = [f"no progress for {verdict.idle_s:g}s (stall-timeout {verdict.limit_s:g}s while "
                    f"{verdict.activity}), vLLM still running"]
        for said in (verdict.waiting or verdict.last_progress, reading.evidence):
            if said and said not in evidence:
                evidence.append(said)
        return Diagnosis("startup_hang", reading.stage, numbers, tuple(evidence[:3]), detail=reading.stage,
                         template=HANG_SOURCES["hang_guard"], stage_from=reading.came_from), record

    def _dump_all(self, root_pid: int) -> tuple[dict[str, str], list[str]]:
        """py-spy on each process of the launch, one after the other in a thread; a stop signal ends the wait."""
        procs = self.probes.processes(root_pid)[:MAX_PROCESSES]
        dumps: dict[str, str] = {}
        notes: list[str] = []
        guard = threading.Lock()  # the worker may still be adding when the wait gives up on it

        def run() -> None:
            for pid, title in procs:
                if self.ctx.stop_signal is not None:
                    return
                text, why = self.probes.dump(pid, DUMP_TIMEOUT_S)
                with guard:
                    if text is not None:
                        dumps[f"{title} (pid {pid})"] = text
                    elif why is not None and why not in notes:
                        notes.append(why)

        worker = threading.Thread(target=run, name="vllm-guard-stacks", daemon=True)
        worker.start()
        deadline = self.ctx.clock() + DUMP_TIMEOUT_S * len(procs) + 1.0
        while worker.is_alive() and self.ctx.stop_signal is None and self.ctx.clock() < deadline:
            worker.join(0.2)
        with guard:
            got, said = dict(dumps), list(notes)
        if not procs:
            said.append("no process of the launch was found to read")
        elif self.ctx.stop_signal is not None:
            said.append("a stop signal came while the stacks were read: the rest were not")
        elif worker.is_alive():
            said.append("py-spy did not finish in time: the stacks of the rest were not read")
        return got, said

    def _write(self, path: Path, dumps: Mapping[str, str], notes: list[str]) -> str | None:
        text = "".join(f"== {label}\n{body}\n" for label, body in dumps.items())
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
                f.write(text)
        except OSError as e:
            notes.append(f"stacks not written to {path}: {e.strerror or e}")
            return None
        return str(path)
