"""The live relay while the guard starts and supervises vLLM: vLLM's lines, the phase, ready, the attempts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TextIO

from vllm_guard.diagnose.details import advice_for
from vllm_guard.report.text import Console, Table, Text, live_display, plain, seconds_text, width_for
from vllm_guard.suggest import as_written, previous, toml_line

RELAY_BATCH_S = 0.1
RELAY_BATCH_LINES = 500


class LaunchStatus:
    """What the guard shows while it starts and supervises vLLM.

    vLLM's own lines are relayed unchanged, stdout to stdout and stderr to stderr
    (journald keeps vLLM's log). On a terminal the guard adds a live one-line
    status; elsewhere it prints one plain line per phase change.
    """

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        import threading

        self.out, self.err = stdout, stderr
        self._lock = threading.Lock()
        self._broken: set[int] = set()  # id() of the streams that failed a write
        self._console = Console(file=stderr, highlight=False)
        self.live_mode = bool(getattr(stdout, "isatty", lambda: False)()) and bool(
            getattr(stderr, "isatty", lambda: False)())
        self._live: Any = None
        self._pending: list[str] = []  # vLLM's lines not yet printed above the live status
        self._phase = ""
        self._closed = threading.Event()
        if self.live_mode:
            self._live = live_display(self._console)
            self._live.start()
            # Printing above a live display re-renders it: one print per line cost 42x the CPU of a pipe.
            # vLLM's lines are printed in batches, at most RELAY_BATCH_S late.
            threading.Thread(target=self._flush_loop, daemon=True).start()

    def relay(self, raw: bytes, stream: str) -> None:
        if self._live is not None:
            with self._lock:
                text = raw.decode(errors="replace").rstrip("\r\n")
                # A bar redrawn with carriage returns: a terminal shows its last state, and so does this.
                self._pending.append(text.rsplit("\r", 1)[-1] if "\r" in text else text)
                if len(self._pending) >= RELAY_BATCH_LINES:
                    self._flush()
            return
        target = self.out if stream == "stdout" else self.err
        with self._lock:
            self._write(target, raw)

    def progress(self, text: str) -> None:
        """A progress bar vLLM redraws with carriage returns: shown in the live status as it moves."""
        if self._live is not None and text.strip():
            self._live.update(Text.assemble((self._phase, "bold cyan"), "  ", plain(text.strip())))

    def _flush_loop(self) -> None:
        while not self._closed.wait(RELAY_BATCH_S):
            with self._lock:
                self._flush()

    def _flush(self) -> None:
        """Print the pending lines above the live status (the caller holds the lock)."""
        if self._pending and self._live is not None:
            # Console.out: no markup, no wrapping, no highlighting; vLLM's bytes as they came (decoded), which
            # rich then keeps above its live status line. print() of a Text costs ~10x more per line.
            self._live.console.out("\n".join(self._pending), highlight=False)
        self._pending = []

    def message(self, text: str, style: str = "bold") -> None:
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.console.print(Text(f"vllm-guard: {text}", style=style))
            else:
                self._write(self.err, f"vllm-guard: {text}\n".encode(errors="backslashreplace"))

    def _write(self, target: TextIO, raw: bytes) -> None:
        """Write and flush; a stream that fails (its reader is gone after a stop, a full disk) is given up,
        never fatal. The relay thread must keep draining vLLM's pipes, and the guard's exit status must stay
        its own: Python exits 120 when its final flush of a broken stdout fails."""
        if id(target) in self._broken:
            return
        try:
            buffer = getattr(target, "buffer", None)
            if buffer is not None:
                buffer.write(raw)
                buffer.flush()
            else:
                target.write(raw.decode(errors="replace"))
                target.flush()
        except (OSError, ValueError):
            self._broken.add(id(target))
            _point_at_devnull(target)

    def attempt_started(self, label: str) -> None:
        self.message(f"{label}: starting vLLM")

    def phase(self, text: str, *, heartbeat: bool = False) -> None:
        if self._live is not None:
            self._phase = text
            self._live.update(Text(text, style="bold cyan"))
        elif heartbeat:
            self.message(f"still in {text}", style="")
        else:
            self.message(text, style="")

    def ready(self, number: int, reported: dict[str, Any], relaxed: dict[str, list[Any]], profile: str | None,
              phases: Mapping[str, float | None] | None = None, *, url: str | None = None,
              set_by_user: frozenset[str] = frozenset()) -> None:
        """The ready line (where, after how many attempts and how long, what vLLM reported), the start-up
        phases, and a relaxed start's values spelled the way the user wrote theirs (``profile`` None: a
        command line, so flags; else TOML lines for that profile)."""
        self.close()  # the live start-up line has done its job; from here on, plain lines
        self.message(ready_line(number, reported, url), style="bold green")
        if phases and (where := phases_line(phases)):
            self.message(f"where the start-up time went: {where}", style="")
        if relaxed:
            command_line = profile is None
            what = "; ".join(
                f"{as_written(k, new, command_line=command_line)} "
                f"({previous(k, old, set_by_user=k in set_by_user, command_line=command_line)})"
                for k, (old, new) in relaxed.items())
            where = f" in {profile}" if profile else " on the command line"
            self.message(f"RELAXED START: vLLM runs, but NOT as the {'command line' if command_line else 'profile'}"
                         f" is written: {what}. Put these values{where} to start this way directly.",
                         style="bold yellow")

    def attempts_table(self, history: list[Any], *, exhausted: bool) -> None:
        table = Table(title="vllm-guard: every start failed" if exhausted else "vllm-guard: start failed",
                      header_style="bold")
        for col in ("attempt", "changed", "outcome", "failure", "next"):
            table.add_column(col, overflow="fold")
        for a in history:
            changed = "\n".join(f"{k}: {old} -> {new}" for k, (old, new) in a.changed.items()) or "-"
            failure = f"{a.diagnosis.cls} ({a.diagnosis.stage})" if a.diagnosis else "-"
            step = a.step
            nxt = (toml_line(step.param, step.value) if getattr(step, "param", None)
                   and getattr(step, "value", None) is not None else getattr(step, "reason", "-"))
            table.add_row(*(plain(cell) for cell in (a.number, changed, a.outcome, failure, nxt or "-")))
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.console.print(table)
            else:
                Console(file=self.err, highlight=False, width=width_for(self.err)).print(table)
        last = history[-1].diagnosis if history else None
        if last is not None:
            advice = advice_for(last)
            self.message(f"{last.cls}: {advice.explanation}", style="")
            for item in advice.helps:
                self.message(f"  what helps: {item}", style="")

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.stop()
                self._live = None


def _point_at_devnull(stream: TextIO) -> None:
    """Let a broken stream's unflushed data (and the interpreter's last flush) go to /dev/null."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    except (OSError, ValueError):  # a StringIO, a closed file
        return
    try:
        os.dup2(null, fd, inheritable=fd < 3)
    except OSError:
        pass
    finally:
        os.close(null)


def ready_line(number: int, reported: Mapping[str, Any], url: str | None) -> str:
    """'vLLM is ready on http://127.0.0.1:8000 after 1 attempt(s), 41 s: KV cache 40,544 tokens (1.00x
    concurrency), weights 14.99 GiB' - what the systemd status says too, in a sentence."""
    text = "vLLM is ready" + (f" on {url}" if url else "") + f" after {number} attempt(s)"
    if isinstance(reported.get("time_to_ready_s"), (int, float)):
        text += f", {seconds_text(reported['time_to_ready_s'])}"
    facts = []
    if isinstance(reported.get("kv_cache_tokens"), int):
        kv = f"KV cache {reported['kv_cache_tokens']:,} tokens"
        if isinstance(reported.get("max_concurrency"), (int, float)):
            kv += f" ({reported['max_concurrency']:.2f}x concurrency)"
        facts.append(kv)
    if isinstance(reported.get("model_loading_gib"), (int, float)):
        facts.append(f"weights {reported['model_loading_gib']:.2f} GiB")
    if isinstance(reported.get("model_loading_s"), (int, float)):
        facts.append(f"loaded in {seconds_text(reported['model_loading_s'])}")
    return text + (": " + ", ".join(facts) if facts else "")


PHASE_LABELS = {"imports": "imports", "placement_group": "Ray placement group", "ray_workers": "Ray workers",
                "weights": "weights", "profiling": "profiling", "kv_cache": "KV cache",
                "graphs": "graphs", "port": "API server", "health": "health", "first_request": "first token"}


def phases_line(phases: Mapping[str, float | None]) -> str:
    """'41 s: imports 12, weights 18, profiling 6, graphs 3, first token 0.4': each phase's own share.

    A phase the log did not show is left out and its time counts towards the next one that it did show.
    """
    previous = 0.0
    parts = []
    for name, label in PHASE_LABELS.items():
        at = phases.get(name)
        if at is None:
            continue
        parts.append(f"{label} {max(at - previous, 0.0):.1f}")
        previous = at
    return f"{seconds_text(previous)}: " + ", ".join(parts) if parts else ""
