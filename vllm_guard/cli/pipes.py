"""Output streams whose reader may leave early (`vllm-guard check ... | head -1`).

A closed pipe is not an error of the guard: its exit status stays the one the command
decided (4 for a failed preflight), not 1 ("a bug") from a BrokenPipeError. After the
first EPIPE the stream's descriptor points at /dev/null, so later writes and the
interpreter's last flush are quiet too.
"""

from __future__ import annotations

import errno
import os
from typing import Any, TextIO


class PipeSafe:
    """A text stream that drops what it cannot write once its reader has gone."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            return self._stream.write(text)
        except OSError as e:
            self._gone(e)
            return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except OSError as e:
            self._gone(e)

    def _gone(self, e: OSError) -> None:
        if e.errno != errno.EPIPE:
            raise e
        self.broken = True
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        except (OSError, ValueError):  # a StringIO has no descriptor
            return
        try:
            os.dup2(null, fd, inheritable=fd < 3)
        finally:
            os.close(null)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer: the stream's own
        return getattr(self._stream, name)
