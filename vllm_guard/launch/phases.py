"""What a launch tells the live status, and the phase tracker that follows vLLM's log lines.

``Status`` says what launch needs of the live status (``vllm_guard.report.live.LaunchStatus`` is the real
one), so that launch never imports ``report``: report sits above launch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vllm_guard.diagnose.hang import ProgressDetector, StallLimits
from vllm_guard.diagnose.markers import BEFORE_START, PHASES, STAGE_NAMES, STAGES, phases_of, rendezvous_file, stage_of
from vllm_guard.launch import process
from vllm_guard.launch.notify import Notifier

# systemd: while vLLM keeps writing (tqdm bars, log lines) the start is progressing; extend
# TimeoutStartSec= by EXTEND_S each heartbeat, but only within PROGRESS_WINDOW_S of the last line.
EXTEND_S = 60.0
PROGRESS_WINDOW_S = 300.0


class Status(Protocol):
    """The live status while the guard starts and supervises vLLM."""

    def relay(self, raw: bytes, stream: str) -> None:
        """One of vLLM's lines, unchanged, to the stream it came on ("stdout" | "stderr")."""

    def progress(self, text: str) -> None:
        """A progress bar vLLM redraws with carriage returns, as it moves."""

    def message(self, text: str, style: str = ...) -> None:
        """One of the guard's own lines."""

    def attempt_started(self, label: str) -> None: ...

    def phase(self, text: str, *, heartbeat: bool = ...) -> None: ...

    def ready(self, number: int, reported: dict[str, Any], relaxed: dict[str, list[Any]], profile: str | None,
              phases: Mapping[str, float | None] | None = ..., *, url: str | None = ...,
              set_by_user: frozenset[str] = ...) -> None:
        """The ready line, where the start-up time went, and a relaxed start's values."""

    def attempts_table(self, history: list[Any], *, exhausted: bool) -> None:
        """Every attempt of a failed start, and what helps."""

    def close(self) -> None: ...


class PhaseTracker:
    """Follows vLLM's log lines to know the phase and whether it progresses; reports phase changes."""

    def __init__(self, status: Status, notifier: Notifier, label: str, clock: Callable[[], float],
                 names: Mapping[str, str] = STAGE_NAMES, start: float | None = None,
                 stall: StallLimits | None = None) -> None:
        self.names = names
        self.claim: Callable[[str], None] | None = None  # hands the keeper vLLM's rendezvous file
        self._phase_times: dict[str, float] = {}
        self.status = status
        self.notifier = notifier
        self.label = label
        self.clock = clock
        # One origin for all of an attempt's times (phases, time to ready, duration): the attempt's start.
        self.start = clock() if start is None else start
        self.last_output = clock()
        self.stage = BEFORE_START
        # Progress, not output (issue 24): every line, bar and phase goes to the pure detector too.
        self.detector = ProgressDetector(self.start, stall)

    @property
    def stage_name(self) -> str:
        return self.names.get(self.stage, self.stage)

    def sink(self, relay: process.LineSink) -> process.LineSink:
        def on_line(raw: bytes, stream: str) -> None:
            relay(raw, stream)
            self.last_output = self.clock()
            line = raw.decode(errors="replace")
            self.detector.line(line, self.last_output)
            if not self._phase_times:
                self.mark("first_line")
            for phase in phases_of(line):
                self.mark(phase)
            if self.claim is not None and "file://" in line:
                path = rendezvous_file(line)
                if path is not None:
                    self.claim(path)
            stage = stage_of(line)
            if stage is not None and STAGES.index(stage) > STAGES.index(self.stage):
                self.stage = stage
                self.detector.phase(stage, self.last_output)
                self._report(heartbeat=False)
        return on_line

    def progress_sink(self, show: Callable[[str], None]) -> Callable[[str], None]:
        """A bar vLLM redraws in place (tqdm): shown, and judged by the detector (does it advance?)."""
        def on_progress(text: str) -> None:
            show(text)
            self.detector.bar(text, self.clock())
        return on_progress

    def mark(self, phase: str) -> None:
        """The first time a phase ends, in seconds since vLLM was started."""
        if phase not in self._phase_times:
            self._phase_times[phase] = round(self.clock() - self.start, 2)
            self.detector.phase(phase, self.clock())

    def phases(self) -> dict[str, float | None]:
        return {name: self._phase_times.get(name) for name in PHASES}

    def heartbeat(self) -> None:
        self._report(heartbeat=True)

    def _report(self, *, heartbeat: bool) -> None:
        text = f"{self.label}: {self.stage_name} ({duration(self.clock() - self.start)})"
        self.status.phase(text, heartbeat=heartbeat)
        self.notifier.status(text)
        if self.clock() - self.last_output <= PROGRESS_WINDOW_S:
            self.notifier.extend_timeout(EXTEND_S)


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
