"""The doorway to rich: consoles, plain text of untrusted values, and number formatting for every report."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

# The names other report modules take from here, so that rich is imported in this module only.
__all__ = ["STATUS_STYLE", "UNWRAPPED_WIDTH", "Console", "Table", "Text", "console_for", "fmt", "live_display", "plain",
           "width_for"]
from vllm_guard.preflight.findings import FAIL, PASS, SKIP, WARN
from vllm_guard.preflight.memory import GIB, MIB
from vllm_guard.redact import printable

STATUS_STYLE = {PASS: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim"}


# Wider than any line the guard prints: off a terminal nothing is hard-wrapped, so every sentence stays on one
# line for grep and is one journal entry.
UNWRAPPED_WIDTH = 100_000


def console_for(stream: TextIO) -> Console:
    return Console(file=stream, highlight=False, soft_wrap=False, width=width_for(stream))


def width_for(stream: TextIO) -> int | None:
    # A terminal keeps its own width (rich wraps at word boundaries); a pipe, a file or the journal gets
    # whole lines.
    return None if _is_terminal(stream) else UNWRAPPED_WIDTH


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(getattr(stream, "isatty", lambda: False)())
    except (OSError, ValueError):
        return False


def fmt(value: Any, key: str = "") -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return str(value).lower()
    if (key.endswith("bytes") or "_bytes_" in key) and isinstance(value, (int, float)):
        return f"{value / GIB:,.2f} GiB" if abs(value) >= GIB else f"{value / MIB:,.0f} MiB"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"  # thousands separators everywhere in prose; pasteable values are never fmt()ed
    return str(value)


def seconds_text(seconds: float) -> str:
    """One spelling of a duration wherever a start's times are shown: "1.7 s", "41.3 s", "1205 s"."""
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def plain(value: object, style: str = "") -> Text:
    """Untrusted text (paths, names, values from a snapshot or a profile) as rich plain text: never markup,
    no control characters, no lone surrogates."""
    return Text(printable(value), style=style)


def live_display(console: Console) -> Any:
    """A live one-line status on a terminal (rich.live, imported only when a terminal asks for it)."""
    from rich.live import Live

    return Live(Text(""), console=console, refresh_per_second=2, transient=True)
