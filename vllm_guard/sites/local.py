"""One machine: this one, probed live, or another one from its snapshot (--machine FILE)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TextIO

from vllm_guard.sites import LaunchHooks, with_notes

if TYPE_CHECKING:
    from vllm_guard.facts.machine import Facts, Gpu
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.preflight.fix import Fix
    from vllm_guard.preflight.run import Preflight
    from vllm_guard.profile.model import Profile


@dataclass
class LocalSite:
    facts: Facts
    pre: Preflight
    target: str
    machine_file: str | None

    @classmethod
    def open(cls, profile: Profile, environ: Mapping[str, str], machine_file: str | None, *,
             target: str) -> LocalSite:
        from vllm_guard import probes
        from vllm_guard.preflight.fix import checked

        facts = probes.gather(profile, environ=environ, machine_file=machine_file)
        return cls(facts, with_notes(checked(profile, facts), profile), target, machine_file)

    def __enter__(self) -> LocalSite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        return None

    def plan(self, plan: LaunchPlan) -> LaunchPlan:
        return plan

    @cached_property
    def fix(self) -> Fix | None:
        """The one set of values that passes every check here (preflight/fix.py), or None; found once, when a
        report asks for it (it runs the preflight again per candidate)."""
        from vllm_guard.preflight.fix import find_fix

        return find_fix(self.pre.profile, self.facts, self.pre)

    def print_report(self, stream: TextIO, *, with_fix: bool) -> None:
        from vllm_guard.report.check import print_check

        print_check(self.pre, self.facts, self.target, stream, self.fix if with_fix else None)

    def check_json(self) -> str:
        from vllm_guard.report.docs import check_json

        return check_json(self.pre, self.facts, self.target, self.fix)

    def dry_run_json(self, plan: LaunchPlan, *, forced: bool, remembered: dict[str, Any]) -> str:
        from vllm_guard.report.docs import check_doc, dry_run_json

        return dry_run_json(self.pre, plan, check_doc(self.pre, self.facts, self.target, self.fix), forced=forced,
                            remembered=remembered)

    def launch_hooks(self) -> LaunchHooks:
        # Live re-checks (free memory under the lock, memory released) only where the machine is this one.
        if self.facts.live is False or self.machine_file:
            return LaunchHooks()
        from vllm_guard.probes.gpu import probe_gpus

        def gpu_probe() -> tuple[Gpu, ...]:
            return probe_gpus().gpus

        return LaunchHooks(gpu_probe=gpu_probe)
