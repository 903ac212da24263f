"""Relaying a child's output stream line by line, with bounded memory, and its progress bars live.

Pure stream handling, apart from the process doorway (launch/process.py) that owns the pipes: any object with
``read1`` (a pipe's buffered reader, ``io.BytesIO`` in tests) can be relayed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

# Read what the pipe has (up to a chunk), keep at most a piece of one line in memory.
RELAY_CHUNK_BYTES = 65536
RELAY_PIECE_BYTES = 1 << 20
PROGRESS_CHARS = 200


class Readable(Protocol):
    def read1(self, size: int = ..., /) -> bytes: ...


def relay_lines(stream: Readable, on_line: Callable[[bytes], None],
                on_progress: Callable[[str], None] | None = None) -> None:
    """Pass each line of ``stream`` to ``on_line``, its bytes unchanged (newline included), until EOF.

    A longer line than RELAY_PIECE_BYTES (a 50 MB line with no newline) is passed in pieces as it comes; a
    progress bar redrawn with carriage returns (tqdm's weight loading) is shown live through ``on_progress``,
    its last PROGRESS_CHARS characters, before its line ends.
    """
    pending = b""
    while True:
        chunk = stream.read1(RELAY_CHUNK_BYTES)
        if not chunk:
            break
        pos, start = 0, len(pending)
        pending += chunk
        while (end := pending.find(b"\n", start)) >= 0:
            on_line(pending[pos: end + 1])
            pos = start = end + 1
        pending = pending[pos:]  # one copy per chunk, not one per line
        if len(pending) >= RELAY_PIECE_BYTES:
            on_line(pending)
            pending = b""
        elif b"\r" in chunk and on_progress is not None:
            segment = pending.rstrip(b"\r").rsplit(b"\r", 1)[-1][-PROGRESS_CHARS:]
            on_progress(segment.decode(errors="replace"))
    if pending:
        on_line(pending)
