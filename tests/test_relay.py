"""The relay of a child's output: lines passed whole and unchanged, long lines in bounded pieces, bars live.

test_serve.py runs the same code end to end through a real pipe; these are its cases one by one.
"""

from __future__ import annotations

import io

import pytest

from vllm_guard.launch.relay import PROGRESS_CHARS, RELAY_CHUNK_BYTES, RELAY_PIECE_BYTES, relay_lines


class Trickle(io.BytesIO):
    """A pipe that hands out at most ``step`` bytes per read, as a pipe under a slow writer does."""

    def __init__(self, data: bytes, step: int) -> None:
        super().__init__(data)
        self.step = step

    def read1(self, size: int = -1, /) -> bytes:
        return super().read1(min(self.step, size if size >= 0 else self.step))


def run(data: bytes, step: int = RELAY_CHUNK_BYTES) -> tuple[list[bytes], list[str]]:
    lines: list[bytes] = []
    bars: list[str] = []
    relay_lines(Trickle(data, step), lines.append, bars.append)
    return lines, bars


@pytest.mark.parametrize("step", [1, 7, RELAY_CHUNK_BYTES])
@pytest.mark.parametrize(("data", "expected"), [
    (b"", []),
    (b"one\n", [b"one\n"]),
    (b"one\ntwo\n", [b"one\n", b"two\n"]),
    (b"one\ntail without newline", [b"one\n", b"tail without newline"]),
    (b"\n\n", [b"\n", b"\n"]),
    (b"caf\xc3\xa9 \xff\xfe not utf-8\r\n", [b"caf\xc3\xa9 \xff\xfe not utf-8\r\n"]),
])
def test_lines_come_out_as_they_went_in(data: bytes, expected: list[bytes], step: int) -> None:
    assert run(data, step)[0] == expected


def test_a_line_longer_than_a_piece_is_passed_in_pieces_and_loses_nothing() -> None:
    data = b"x" * (3 * RELAY_PIECE_BYTES + 5) + b"\nafter\n"
    lines, _ = run(data)
    assert b"".join(lines) == data
    assert lines[-1] == b"after\n"
    assert max(len(line) for line in lines) < RELAY_PIECE_BYTES + RELAY_CHUNK_BYTES


def test_a_carriage_return_bar_is_shown_live_and_relayed_whole_at_its_end() -> None:
    data = b"Loading 10%\rLoading 50%\rLoading 100%\r\nready\n"
    lines, bars = run(data, step=12)
    assert lines == [b"Loading 10%\rLoading 50%\rLoading 100%\r\n", b"ready\n"]
    assert bars and bars[0] == "Loading 10%"
    assert all("\r" not in bar for bar in bars)


def test_a_bar_shows_only_its_last_characters() -> None:
    bar = b"#" * (PROGRESS_CHARS * 3) + b"\r"
    _, bars = run(bar)
    assert bars == ["#" * PROGRESS_CHARS]
