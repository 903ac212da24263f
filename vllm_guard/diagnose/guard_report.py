"""Pure: the guard's own preflight report inside a log (a unit's journal after `serve` refused to start vLLM).

`vllm-guard serve` (and `check`) print the preflight report as text (report/check.py): a header
"vllm-guard check PROFILE ...", the table of checks, "verdict: FAIL (N checks failed, ...)", one
"  FAIL check.id: fix" line per failed check, and under `serve` "vllm-guard: preflight failed: vLLM was not
started". Under systemd that is the whole journal of the failed start (docs/systemd.md says to run
`explain --unit` next). It is the guard's report, not a start of vLLM: it gets a class of its own with the failed
checks and their fixes, and the split into starts does not count it as one.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose.logread import LogLine

HEADER = re.compile(r"^vllm-guard check \S{1,4096}")
VERDICT = re.compile(r"^verdict: (?P<verdict>PASS|WARN|FAIL)\b(?: \((?P<failed>\d{1,4}) checks? failed)?")
_FAIL = re.compile(r"^\s{0,8}FAIL (?P<check>[a-z][a-z0-9_]{0,40}\.[a-z0-9_.]{1,80}): (?P<fix>.{0,1000})$")
# A table row of a failed check, for a paste cut before the verdict: "│ model.kv_fit │ fail │ finding │ fix │".
_ROW = re.compile(r"^[│|]\s{0,4}(?P<check>[a-z][a-z0-9_]{0,40}\.[a-z0-9_.]{1,80})\s{1,80}[│|]\s{0,4}fail\s{1,20}[│|]"
                  r"\s{0,4}(?P<finding>[^│|]{0,1000}?)\s{0,300}(?:[│|]\s{0,4}(?P<fix>[^│|]{0,1000}?)\s{0,300}[│|]?)?$")
NOT_STARTED = "vllm-guard: preflight failed"
SOURCE = "vllm-guard's own preflight report (report/check.py: 'verdict: FAIL', '  FAIL check.id: fix')"


STARTS = ("vllm-guard check ", "verdict: ", NOT_STARTED)


def is_report_line(text: str) -> bool:
    """A line of the guard's preflight report (its header, its verdict or the refusal to start)."""
    return text.startswith(STARTS) and (
        HEADER.match(text) is not None or VERDICT.match(text) is not None or text.startswith(NOT_STARTED))


def failed_preflight(lines: list[LogLine]) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The failed checks and their fixes when the lines hold a failed preflight report, else None.

    Returns (context, evidence): context holds ``failed_checks`` (ids in report order) and ``fixes`` (id ->
    fix, "" when the report gives none); evidence is the report's own lines that say so.
    """
    verdict_at = next((i for i, line in enumerate(lines) if line.text.startswith("verdict: ")
                       and (m := VERDICT.match(line.text)) and m.group("verdict") == "FAIL"), None)
    fixes: dict[str, str] = {}
    evidence: list[str] = []
    if verdict_at is not None:
        evidence.append(lines[verdict_at].text)
        for line in lines[verdict_at + 1:verdict_at + 200]:
            m = _FAIL.match(line.text)
            if m:
                fixes.setdefault(m.group("check"), m.group("fix").strip())
                evidence.append(line.text.strip())
    if not fixes:  # cut before the verdict's list: the table's failed rows
        for line in lines:
            if "fail" in line.text and (m := _ROW.match(line.text)):
                fixes.setdefault(m.group("check"), (m.group("fix") or "").strip())
                evidence.append(f"FAIL {m.group('check')}: {m.group('finding').strip()}")
    if not fixes and verdict_at is None:
        return None  # no report, or "preflight failed" quoted without it: nothing to name
    evidence += [line.text for line in lines if line.text.startswith(NOT_STARTED)][:1]
    return {"failed_checks": list(fixes), "fixes": fixes}, tuple(evidence[:12])
