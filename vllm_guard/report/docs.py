"""Every JSON document the reporting commands print (docs/json.md), each with its schema."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vllm_guard import schemas
from vllm_guard.diagnose.details import advice_for
from vllm_guard.preflight.findings import FAIL
from vllm_guard.redact import mask_url_credentials
from vllm_guard.suggest import flag, toml_line

if TYPE_CHECKING:  # types only: `ps --json` and `check --json` import no classifier, no cluster code
    from vllm_guard.cluster.preflight import ClusterPreflight
    from vllm_guard.diagnose.classify import Diagnosis
    from vllm_guard.diagnose.ladder import Step, Stop
    from vllm_guard.facts.machine import Facts
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.preflight.fix import Fix
    from vllm_guard.preflight.run import Preflight
    from vllm_guard.state.instances import Instance


def cluster_check_doc(cp: ClusterPreflight, target: str) -> dict[str, Any]:
    pre, e = cp.pre, cp.pre.estimate
    doc = {
        "schema": schemas.CLUSTER_CHECK,
        "verdict": pre.verdict, "target": target, "machine": cp.facts.machine_origin,
        "vllm": pre.profile.table_choice.to_dict() if pre.profile.table_choice else None,
        "model": cp.facts.model.to_dict(), "checks": [f.to_dict() for f in pre.findings],
        "memory": e.to_dict() if e is not None else None,
        "cluster": cp.cluster.to_dict(),
        "placement": {"tensor_parallel": cp.placement.tensor_parallel,
                      "pipeline_parallel": cp.placement.pipeline_parallel, "problem": cp.placement.problem,
                      "ranks": [{"rank": r.rank, "stage": r.stage, "tp_rank": r.tp_rank, "node": r.node,
                                 "node_id": r.node_id, "gpu": r.gpu.index, "gpu_uuid": r.gpu.uuid}
                                for r in cp.placement.ranks]},
        "fix": None, "fix_reason": None, "notes": list(pre.notes),
    }
    return doc


def check_json(pre: Preflight, facts: Facts, target: str, fix: Fix | None = None) -> str:
    return json.dumps(check_doc(pre, facts, target, fix), indent=2)


def check_doc(pre: Preflight, facts: Facts, target: str, fix: Fix | None = None) -> dict[str, Any]:
    e = pre.estimate
    doc = {
        "schema": schemas.CHECK,
        "verdict": pre.verdict,
        "target": target,
        "machine": facts.machine_origin,
        "model_source": facts.model.source,
        "vllm": pre.profile.table_choice.to_dict() if pre.profile.table_choice else None,
        "model": facts.model.to_dict(),
        "checks": [f.to_dict() for f in pre.findings],
        "memory": e.to_dict() if e is not None else None,
        # Values that, applied together, make this check pass (vllm serve spelling); null with the reason when
        # none exists or nothing fails.
        "fix": fix.to_dict() if fix is not None else None,
        "fix_reason": fix.reason if fix is not None else None,
        "notes": [*pre.notes, *facts.notes, *facts.model.notes, *facts.machine.notes],
    }
    return doc


def dry_run_json(pre: Preflight, plan: LaunchPlan, check: dict[str, Any], *, forced: bool,
                 remembered: dict[str, Any] | None = None) -> str:
    """What `serve` would do, secrets masked: the command line, the environment changes, the verdict, and the
    remembered relaxations the first attempt applies (already in the command line)."""
    doc = {
        "schema": schemas.DRY_RUN,
        "verdict": pre.verdict,
        "would_start": pre.verdict != FAIL or forced,
        "argv": plan.redacted_argv(),
        "command_line": plan.command_line(),
        "env_set": plan.redacted_env_set(),
        "env_reasons": dict(plan.env_reasons),
        "env_unset": list(plan.env_unset),
        "notes": list(plan.notes),
        "remembered": dict(remembered or {}),
        "check": check,
    }
    return json.dumps(doc, indent=2)


def _step_dict(step: Step) -> dict[str, Any]:
    """The ladder's step, with the two pasteable spellings of its change."""
    d = step.to_dict()
    if step.change and step.param:
        d["toml"], d["flag"] = toml_line(step.param, step.value), flag(step.param, step.value)
    return d


def explain_json(d: Diagnosis, step: Step | Stop) -> str:
    from vllm_guard.diagnose.ladder import Step, Stop

    advice = advice_for(d)
    doc: dict[str, Any] = {
        "schema": schemas.EXPLAIN,
        "class": d.cls,
        "stage": d.stage,
        "detail": d.detail,
        "numbers": d.numbers,
        "evidence": [mask_url_credentials(line) for line in d.evidence],
        "exit_signal": d.exit_signal,
        "explanation": advice.explanation,
        "helps": list(advice.helps),
        "does_not_help": list(advice.does_not_help),
        "next_step": _step_dict(step) if isinstance(step, Step) else None,
        "no_step_reason": step.reason if isinstance(step, Stop) else None,
        # How sure the reading is (diagnose/certainty.py): the template matched, where the stage came from,
        # and for `unknown` the best candidate below the bar (never acted on).
        "confidence": d.confidence,
        "template": d.template,
        "stage_from": d.stage_from,
        "hint": {"class": d.hint[0], "why": d.hint[1]} if d.hint else None,
    }
    if d.cls == "preflight_failed":
        doc["failed_checks"] = list(d.context.get("failed_checks", []))
        doc["fixes"] = dict(d.context.get("fixes", {}))
    return json.dumps(doc, indent=2)


def ps_json(instances: list[Instance], source: str, notes: list[str]) -> str:
    return json.dumps({"schema": schemas.PS, "source": source, "instances": [i.to_dict() for i in instances],
                       "notes": notes}, indent=2)
