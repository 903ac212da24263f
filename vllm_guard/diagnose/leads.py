"""Pure: when a warning is the failure. A warning a start may go on after (vLLM's own _C import warning, a rule's
warning kept aside while the log is read) is said as the failure only where the paste shows the start failing or
ends at the warning; in a paste whose process went on after it and that shows no failure, it is the best candidate of
an `unknown` (blind109/b109-004, and a review's cases in tests/test_explain_blind109.py).
"""

from __future__ import annotations

import re

from vllm_guard.diagnose import certainty, fallback, hang_log, logread
from vllm_guard.diagnose.diagnosis import CUT_MARK, ERRORISH, Diagnosis
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, WRAPPED_PREFIXED_MIN, LogLine
from vllm_guard.diagnose.missing_modules import GOING_ON, went_on

# What makes a log other than one with no error in it: an error, a crash, an exit the log states (systemd's, Docker
# Compose's), NCCL's warnings and result traces (hang_log.TROUBLE), and a start that was serving or had finished (an
# API server's request lines and stats, an offline run's progress bar: a tail of a running server has no ready line).
NOT_QUIET = re.compile(f"{ERRORISH.pattern}|{hang_log.TROUBLE.pattern}|Illegal instruction|Main process exited"
                       r"|Failed with result|exited with code|status=\d{1,3}/|[Ee]xit code \d|exited with non-zero "
                       r"status|Exited \(\d{1,3}\)|Processed prompts"
                       # NCCL's warnings, but not RCCL's routine ones on starts that go on (iommu=pt, NUMA balancing)
                       r"|NCCL WARN (?!Missing \"iommu=pt\"|NUMA auto balancing)"
                       r"|Avg prompt throughput|\"(?:GET|POST|PUT|DELETE) /\S{0,200} HTTP/|Generated text")


def deciding(found: list[Diagnosis], asides: bool, lines: list[LogLine], tbs: list[logread.Traceback],
             signal: int | None, exit_status: int | None) -> Diagnosis | None:
    """The first of the warnings found (asides in the order read, or fallback's one reading) that decides. A
    fallback reading from evidence no start gets past (no platform and no driver) decides as it is."""
    return next((d for d in found if (not asides and d.template not in fallback.WARNING_READINGS)
                 or lead_decides(lines, tbs, signal, exit_status, d)), None)


def lead_decides(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
                 exit_status: int | None, warning: Diagnosis) -> bool:
    """Whether a warning may be said as the failure: the log shows the start failing (a traceback, an exit, an
    error line besides the warning's own, however often it is repeated), or ends at the warning. A start whose
    process went on after it and that shows no failure is a paste cut before its failure (blind109/b109-004).
    The warning is found by its message's head, without vLLM's logging prefix (its repeats carry other times and
    processes) and so also where a rule read it rejoined from a wrapped line."""
    if tbs or signal is not None or exit_status is not None or warning.cls == "unknown" or not warning.evidence:
        return True
    own = logread.body(warning.evidence[0].removesuffix(CUT_MARK)).strip()[:WRAPPED_PREFIXED_MIN]
    if not own:
        return True
    mine = [logread.body(line.text).strip().startswith(own) for line in lines]
    at = next((i for i, m in enumerate(mine) if m), None)
    if at is None or not went_on(lines, at, own):
        return True
    # an error besides the warning: not another warning or progress line vLLM logs and goes on after
    return any(not mine[i] and not line.text.startswith(GOING_ON) and NOT_QUIET.search(line.text[:MAX_LINE_CHARS])
               for i, line in enumerate(lines))


def only_a_lead(warning: Diagnosis, stage: str) -> Diagnosis:
    """A paste that shows no failure besides a warning (cut before its error): the warning is a lead, not the
    cause (blind109/b109-004: 0.5.4's libcudart warning, and the engine went on to its real failure, which the
    thread says was bfloat16 on a V100)."""
    said = "the log shows no error, traceback or exit besides this warning: it may stop before the failure"
    return Diagnosis("unknown", stage, {}, (*warning.evidence, said), warning.exit_signal, "no_error",
                     context=warning.context, confidence="none", stage_from=certainty.PROGRESS,
                     hint=(warning.cls, f"a warning the paste shows is a known cause of failed starts "
                                        f"({warning.template}), but no failure follows it"))
