"""`explain` never ends in an internal error (issue 26): every fixture, cut anywhere, re-wrapped, re-prefixed.

Real pastes reach `explain` cut at any point, hard-wrapped at any column (by a terminal, mid-word, with or
without the prefix repeated on the continuation line), under journald, Docker, kubectl, Ray and CI prefixes,
with CRLF line ends and colours. Whatever the class, the answer is a report (exit 0, or 7 for unknown, or 2 for
an empty input), never exit 1 and never a traceback. The in-process entry is called (no subprocess), and the
example count is bounded: the whole file runs in a few seconds on CI's two cores.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import DATA
from vllm_guard.cli import main as cli
from vllm_guard.exit_codes import ExitCode

FIXTURES = sorted([*(DATA / "logs").glob("*.log"), *(DATA / "real-logs").glob("*/*.log")])
TEXTS = {p.relative_to(DATA).as_posix(): p.read_text(errors="replace") for p in FIXTURES}

# The prefixes logs really carry (tests/data/real-logs shows each): journald's short format, Docker's and
# kubelet's CRI stream tag, `kubectl logs --prefix`, docker compose's service column, Ray's process tags,
# CI timestamps (Buildkite, GitHub Actions), torch's rank tag.
PREFIXES = (
    "",
    "Dec 02 01:02:03 gpu-host vllm-guard[4242]: ",
    "2025-03-07T05:56:13.899Z stdout F ",
    "[pod/vllm-0/vllm] ",
    "vllm-1  | ",
    "(EngineCore_DP0 pid=123) ",
    "(RayWorkerWrapper pid=5280, ip=10.0.0.2) ",
    "[2026-01-28T23:59:42Z] ",
    "2024-05-01T10:00:00.1234567Z ",
    "[rank0]: ",
)
ANSI = ("\x1b[31m", "\x1b[0;36m", "\x1b[1m")
ALLOWED = {int(ExitCode.OK), int(ExitCode.EXPLAIN_UNKNOWN), int(ExitCode.USAGE)}


def _explain(text: str, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["explain", "-", *extra], environ={"HOME": "/nonexistent-home", "PATH": "/usr/bin:/bin"},
                    stdout=out, stderr=err, stdin=io.StringIO(text))
    return code, out.getvalue(), err.getvalue()


def _assert_a_report(text: str, formats: tuple[tuple[str, ...], ...] = ((), ("--json",), ("--all",))) -> None:
    for extra in formats:
        code, out, err = _explain(text, *extra)
        assert code in ALLOWED, (extra, code, err[-2000:])
        assert "Traceback" not in err and "internal error" not in err, err[-2000:]
        if extra == ("--json",) and code != ExitCode.USAGE:
            doc = json.loads(out)
            assert doc["class"] and doc["confidence"] in ("high", "medium", "none")


def _wrap(text: str, width: int, repeat_prefix: bool, prefix: str) -> str:
    """Hard-wrap every line at `width` columns, mid-word as a terminal does, the prefix repeated or not."""
    out = []
    for line in text.split("\n"):
        first, rest = line[:width], line[width:]
        out.append(prefix + first)
        while rest:
            out.append((prefix if repeat_prefix else "") + rest[:width])
            rest = rest[width:]
    return "\n".join(out)


def _colour(line: str, code: str) -> str:
    for level in ("ERROR", "WARNING", "INFO"):
        if level in line:
            return line.replace(level, f"{code}{level}\x1b[0m", 1)
    return line


@st.composite
def pastes(draw: st.DrawFn) -> str:
    text = TEXTS[draw(st.sampled_from(sorted(TEXTS)))]
    cut = draw(st.integers(0, len(text)))
    text = text[:cut] if draw(st.booleans()) else text
    prefix = draw(st.sampled_from(PREFIXES))
    if draw(st.booleans()):
        text = _wrap(text, draw(st.integers(60, 200)), draw(st.booleans()), prefix)
    elif prefix:
        text = "\n".join(prefix + line for line in text.split("\n"))
    if draw(st.booleans()):
        code = draw(st.sampled_from(ANSI))
        text = "\n".join(_colour(line, code) for line in text.split("\n"))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pastes())
def test_any_paste_gets_a_report(text: str) -> None:
    _assert_a_report(text)


def test_every_fixture_whole_and_cut_in_half() -> None:
    """Each fixture whole and cut at half its lines, in text and JSON (the property test above samples the
    other cuts at random)."""
    for name, text in TEXTS.items():
        lines = text.split("\n")
        for k in (len(lines), len(lines) // 2):
            try:
                _assert_a_report("\n".join(lines[:k]), ((), ("--json",)))
            except AssertionError as e:
                raise AssertionError(f"{name} cut at line {k}: {e}") from None


def test_a_next_step_without_a_value_is_rendered() -> None:
    """An OOM in the profiling pass of a log that shows no batch figures: the ladder once returned a step
    whose value was None, and its TOML spelling raised (`Object of type 'NoneType' is not TOML serializable`)."""
    text = (Path(DATA / "logs" / "oom_profiling_raw_after_load.log").read_text()
            .replace("max_num_batched_tokens", "mnbt").replace("max_num_seqs", "mns"))
    for extra in ((), ("--json",)):
        code, out, err = _explain(text, *extra)
        assert code == 0 and "oom_profiling" in out, err


def test_a_prefix_on_every_line_changes_no_class() -> None:
    """Every fixture of tests/data/logs under each prefix (the guard's own report and argparse's anchored
    'error:' included): the same class as without it."""
    from vllm_guard.diagnose.classify import classify

    changed = []
    for path in sorted((DATA / "logs").glob("*.log")):
        text = path.read_text()
        want = classify(text).cls
        for prefix in PREFIXES[1:]:
            got = classify("\n".join(prefix + line for line in text.split("\n"))).cls
            if got != want:
                changed.append((path.name, prefix, want, got))
    assert changed == []
