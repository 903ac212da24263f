"""A check's finding, the context every check reads, and how findings settle into a verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.preflight.memory import GIB, MIB, Estimate
from vllm_guard.preflight.memory_params import Params
from vllm_guard.profile.model import Profile, world_size

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"


@dataclass(frozen=True)
class Finding:
    id: str
    status: str
    message: str
    fix: str | None = None
    measured: dict[str, Any] = field(default_factory=dict)
    required: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # e.g. "downgraded by guard.checks.warn-only"
    # Values the check offers as alternative fixes (option dest -> value, why), first the main one. Offered
    # only once tried through the preflight (fix.verify_alternatives): ``fix`` is then rewritten from them.
    options: tuple[tuple[dict[str, Any], str], ...] = ()
    advice: str | None = None  # what the fix says beside the values (no value of the guard's can do it)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "status": self.status, "message": self.message, "fix": self.fix,
             "measured": self.measured, "required": self.required}
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Context:
    profile: Profile
    facts: Facts
    params: Params
    estimate: Estimate | None

    @property
    def world_size(self) -> int:
        return world_size(self.profile)

    @property
    def target_gpus(self) -> tuple[Gpu, ...]:
        return self.facts.gpus[: self.world_size]

    def setting(self, key: str) -> Any:
        return self.profile.check_setting(key)


def gib(n: float | None) -> str:
    return "unknown" if n is None else f"{n / GIB:.2f} GiB"


def mib(n: float | None) -> str:
    return "unknown" if n is None else f"{n / MIB:,.0f} MiB"


def settle(check_id: str, run: Callable[[], Finding], skip: set[str], warn_only: set[str]) -> Finding:
    """One check under the profile's guard.checks lists: not run when skipped, a warning when warn-only."""
    if check_id in skip:
        return Finding(check_id, SKIP, "skipped by guard.checks.skip")
    finding = run()
    if finding.status == FAIL and check_id in warn_only:
        finding = replace(finding, status=WARN, note="downgraded from fail by guard.checks.warn-only")
    return finding


def verdict(findings: list[Finding]) -> str:
    statuses = {f.status for f in findings}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else PASS
