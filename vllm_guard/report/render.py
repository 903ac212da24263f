"""The only module that imports rich: every table, bar and verdict is rendered here."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllm_guard import schemas
from vllm_guard.cluster.placement import Placement
from vllm_guard.cluster.preflight import ClusterPreflight
from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.knowledge import ADVICE, DETAIL_ADVICE, STAGE_NAMES, Advice
from vllm_guard.diagnose.ladder import Step, Stop
from vllm_guard.facts.cluster import CLUSTER_CHECK_SCHEMA, ClusterFacts
from vllm_guard.facts.machine import Facts, Machine
from vllm_guard.launch.plan import LaunchPlan
from vllm_guard.preflight.checks import FAIL, PASS, SKIP, WARN, Finding, Preflight
from vllm_guard.preflight.fix import Fix
from vllm_guard.preflight.memory import GIB, MIB
from vllm_guard.redact import mask_url_credentials, printable
from vllm_guard.state.instances import SCHEMA as PS_SCHEMA
from vllm_guard.state.instances import Instance
from vllm_guard.suggest import as_written, flag, previous, toml_line

STATUS_STYLE = {PASS: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim"}


# Wider than any line the guard prints: off a terminal nothing is hard-wrapped, so every sentence stays on one
# line for grep and is one journal entry.
UNWRAPPED_WIDTH = 100_000


def _console(stream: TextIO) -> Console:
    return Console(file=stream, highlight=False, soft_wrap=False, width=_width(stream))


def _width(stream: TextIO) -> int | None:
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


def _t(value: object, style: str = "") -> Text:
    """Untrusted text (paths, names, values from a snapshot or a profile) as rich plain text: never markup,
    no control characters, no lone surrogates."""
    return Text(printable(value), style=style)


def print_plan(plan: LaunchPlan, stream: TextIO) -> None:
    """The command line and the environment changes a launch would use (secrets masked)."""
    c = _console(stream)
    c.print("[bold]command[/bold]")
    c.print(_t(plan.command_line()), soft_wrap=True)
    c.print("[bold]environment[/bold]")
    for key, value in plan.redacted_env_set().items():
        c.print(Text.assemble(_t(f"  {key}={value}"), _t(f"  # {plan.env_reasons.get(key, '')}", "dim")))
    for key in plan.env_unset:
        c.print(Text.assemble(_t(f"  unset {key}"), ("  # the guard's own variable", "dim")))
    for note in plan.notes:
        c.print(_t(f"note: {note}", "yellow"))


def print_check(pre: Preflight, facts: Facts, target: str, stream: TextIO, fix: Fix | None = None) -> None:
    c = _console(stream)
    m = facts.model
    c.print(Text.assemble(("vllm-guard check ", "bold"), _t(target, "bold cyan"), _t(f" on {facts.machine_origin}")))
    weights = f"weights {fmt(m.weights_bytes, '_bytes')} ({m.weights_source})" if m.weights_bytes else "weights unknown"
    c.print(_t(f"model  {m.model}: {m.architecture or '?'} from {m.source}, {weights}, "
               f"derived max length {fmt(m.derived_max_len)}"))
    for g in facts.gpus:
        cc = f"{g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else "?"
        c.print(_t(f"GPU {g.index}  {g.name or '?'}: {fmt(g.memory_free_bytes, '_bytes')} free of "
                   f"{fmt(g.memory_total_bytes, '_bytes')}, compute capability {cc}"))
    _print_findings(c, pre.findings)
    if pre.estimate is not None and not _layout_missing(pre):
        _print_budget(c, pre)
    for note in (*pre.notes, *facts.notes, *m.notes, *facts.machine.notes):
        c.print(_t(f"note: {note}", "dim"))
    _print_verdict(c, pre.verdict, pre.findings, fix, pre.profile.path)


# weights, non-torch, activations, CUDA graphs, KV cache, rest of the budget
BAR_GLYPHS = ("█", "▓", "▒", "░", "=", ".")


def _layout_missing(pre: Preflight) -> bool:
    """gpu.count failed: the memory bar and KV figures would describe GPUs that are not there."""
    return any(f.id == "gpu.count" and f.status == FAIL for f in pre.findings)


def _print_findings(c: Console, findings: list[Finding]) -> None:
    """The sentence of each check, never its key: value dump (the numbers stay in --json); a skipped check says
    why it was skipped. The verdict below lists the failures with their fixes."""
    table = Table(show_lines=False, header_style="bold")
    for col in ("check", "status", "finding", "fix"):
        table.add_column(col, overflow="fold", no_wrap=col in ("check", "status"))
    for f in findings:
        # Messages and fixes quote paths, names and values from the snapshot and the profile:
        # plain text, never markup (a disk path "[/]" would otherwise be a rich markup error).
        finding = f.message + (f" ({f.note})" if f.note else "")
        table.add_row(_t(f.id), Text(f.status, style=STATUS_STYLE[f.status]), _t(finding), _t(f.fix or ""))
    c.print(table)


# --- a Ray cluster ---------------------------------------------------------------------


def print_cluster(cluster: ClusterFacts, stream: TextIO) -> None:
    """Every node: its address, GPUs and their free memory, host memory, versions, whether it can read the model."""
    c = _console(stream)
    c.print(Text.assemble(("Ray cluster ", "bold"), _t(cluster.address, "bold cyan"),
                          _t(f", {len(cluster.nodes)} node(s), taken {cluster.taken_at}")))
    t = Table(header_style="bold")
    for col in ("node", "address", "GPUs: free memory", "host", "vLLM / torch / Ray / Python", "model"):
        t.add_column(col, overflow="fold")
    for n in cluster.nodes:
        m = n.machine
        who = n.name + (" (head)" if n.is_head else "")
        if m is None:
            t.add_row(_t(who), _t(n.ip or "?"), _t(f"Ray: {fmt(n.ray_gpus)}"), Text(n.error or "no answer",
                      style="bold red"), _t(""), _t(""))
            continue
        free = ", ".join(f"{g.index}: {(g.memory_free_bytes or 0) / GIB:.1f}" if g.memory_free_bytes is not None
                         else f"{g.index}: ?" for g in n.usable_gpus)
        reserved = (f", {n.ray_gpus_free} free in Ray" if n.ray_gpus_free is not None and n.ray_gpus is not None
                    and n.ray_gpus_free < n.ray_gpus else "")
        gpus = f"{len(n.usable_gpus)} of {len(m.gpus)}{reserved}" + (f" ({free} GiB)" if free else "")
        host = (f"RAM {fmt(m.host.effective_memory_available_bytes, '_bytes')}, "
                f"/dev/shm {fmt(m.host.shm_free_bytes, '_bytes')}")
        v = n.versions
        versions = " / ".join(v.get(k) or "-" for k in ("vllm", "torch", "ray", "python"))
        model = {True: "readable", False: "NOT readable", None: "would download"}[n.model_readable]
        answered = f", answered in {n.answered_s:.2f} s" if n.answered_s is not None else ""
        t.add_row(*(_t(x) for x in (who + answered, f"{n.ip or '?'} ({n.interface or '?'})", gpus, host, versions,
                                     model)))
    c.print(t)
    for note in cluster.notes:
        c.print(_t(f"note: {note}", "dim"))


def print_placement(placement: Placement, stream: TextIO) -> None:
    c = _console(stream)
    if not placement.ranks:
        c.print(_t(f"placement: none: {placement.problem}", "bold red"))
        return
    t = Table(title=f"placement: tensor {placement.tensor_parallel} x pipeline {placement.pipeline_parallel}",
              header_style="bold")
    for col in ("node", "GPU", "name", "rank", "pipeline stage", "tensor rank"):
        t.add_column(col)
    for r in placement.ranks:
        t.add_row(*(_t(x) for x in (r.node, r.gpu.index, r.gpu.name or "?", r.rank, r.stage, r.tp_rank)))
    c.print(t)


def print_cluster_check(cp: ClusterPreflight, target: str, stream: TextIO) -> None:
    c = _console(stream)
    pre, m = cp.pre, cp.facts.model
    c.print(Text.assemble(("vllm-guard check ", "bold"), _t(target, "bold cyan"), _t(f" on {cp.facts.machine_origin}")))
    weights = f"weights {fmt(m.weights_bytes, '_bytes')} ({m.weights_source})" if m.weights_bytes else "weights unknown"
    c.print(_t(f"model  {m.model}: {m.architecture or '?'} from {m.source}, {weights}"))
    print_cluster(cp.cluster, stream)
    print_placement(cp.placement, stream)
    _print_findings(c, pre.findings)
    if pre.estimate is not None:
        _print_budget(c, pre)
    for note in (*pre.notes, *m.notes):
        c.print(_t(f"note: {note}", "dim"))
    _print_verdict(c, pre.verdict, pre.findings)


def cluster_check_json(cp: ClusterPreflight, target: str) -> str:
    pre, e = cp.pre, cp.pre.estimate
    doc = {
        "schema": CLUSTER_CHECK_SCHEMA,
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
    return json.dumps(doc, indent=2)


def _print_budget(c: Console, pre: Preflight) -> None:
    e = pre.estimate
    assert e is not None
    parts = [("weights", e.weights_bytes_per_gpu, "blue"), ("non-torch", e.non_torch_bytes, "magenta"),
             ("activations", e.activation_bytes, "yellow"), ("CUDA graphs", e.cudagraph_bytes, "cyan"),
             ("KV cache", max(e.kv_budget_bytes or 0, 0), "green")]
    used = sum(v or 0 for _, v, _ in parts)
    rest = max(e.budget_bytes - used, 0)
    over = max(used - e.budget_bytes, 0)
    c.print(f"[bold]memory per GPU[/bold]: budget {fmt(e.budget_bytes, '_bytes')} = "
            f"{fmt(e.gpu_total_bytes, '_bytes')} x utilization {e.utilization:g}")
    width = 60
    bar = Text()
    scale = max(e.budget_bytes, used, 1)
    # Each part has its own glyph, so the bar reads without colour (a pipe, the journal, NO_COLOR).
    for (_name, value, style), glyph in zip([*parts, ("rest", rest, "dim")], BAR_GLYPHS, strict=True):
        bar.append(glyph * round((value or 0) / scale * width), style=style)
    c.print(bar)
    legend = Text()
    for (name, value, style), glyph in zip([*parts, ("rest of budget", rest, "dim")], BAR_GLYPHS, strict=True):
        legend.append(f"{glyph} ", style=style)
        legend.append(f"{name} {fmt(value, '_bytes')}  ")
    c.print(legend)
    if over:
        c.print(f"[red]over budget by {fmt(over, '_bytes')}[/red]")
    kv_line = f"KV cache: {fmt(e.kv_bytes_per_token)} bytes/token"
    if e.kv_expected_error_bytes and e.kv_budget_bytes is not None:
        # How close the model has come on real start-ups (memory.WEIGHTS/CUDAGRAPH_ERROR_FRACTION).
        kv_line += (f", predicted {fmt(max(e.kv_budget_bytes, 0), '_bytes')} "
                    f"± {fmt(e.kv_expected_error_bytes, '_bytes')} (expected error on real start-ups)")
    if e.kv_tokens is not None:
        kv_line += f", {e.kv_tokens:,} tokens"
    if e.max_fitting_model_len is not None:
        kv_line += f"; longest max-model-len that fits: {e.max_fitting_model_len:,}"
    if e.max_concurrency is not None and e.max_model_len:
        kv_line += f"; {e.max_concurrency:.2f}x concurrency at {e.max_model_len:,} tokens"
    c.print(kv_line, markup=False)
    if e.defaults:
        c.print(f"vLLM defaults used for: {', '.join(e.defaults)} "
                f"(max-num-batched-tokens {e.max_num_batched_tokens}, max-num-seqs {e.max_num_seqs})",
                markup=False, style="dim")


def _print_verdict(c: Console, verdict: str, findings: list[Finding], fix: Fix | None = None,
                   profile_path: object = None) -> None:
    """The verdict, how many checks failed or warned, and the fix of each one (not only the first)."""
    fails = [f for f in findings if f.status == FAIL]
    warns = [f for f in findings if f.status == WARN]
    text = Text("verdict: ", style="bold")
    text.append(verdict.upper(), style=STATUS_STYLE[verdict])
    counts = [f"{len(fails)} check{'s' if len(fails) != 1 else ''} failed"] if fails else []
    counts += [f"{len(warns)} warning{'s' if len(warns) != 1 else ''}"] if warns else []
    if counts:
        text.append(f" ({', '.join(counts)})")
    c.print(text)
    for f in (*fails, *warns):
        c.print(Text.assemble(("  ", ""), (f.status.upper(), STATUS_STYLE[f.status]), " ", _t(f.id),
                              _t(f": {f.fix}" if f.fix else ": no fix the guard knows")))
    if fix is not None and fix.exists:
        # Spelled the way the user wrote the settings: profile lines for a profile, flags for a command line.
        spelled = f"in {profile_path}: {fix.profile_lines()}" if profile_path else fix.command_line()
        c.print(_t(f"one fix that passes every check: {spelled} ({fix.reason})"))
    elif fix is not None:
        c.print(_t(f"no single fix passes every check: {fix.reason}"))


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


def dry_run_json(pre: Preflight, facts: Facts, target: str, fix: Fix | None, plan: LaunchPlan, *,
                 forced: bool) -> str:
    """What `serve` would do, secrets masked: the command line, the environment changes, the verdict."""
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
        "check": check_doc(pre, facts, target, fix),
    }
    return json.dumps(doc, indent=2)


def print_machine(machine: Machine, stream: TextIO) -> None:
    c = _console(stream)
    c.print(Text.assemble(("machine ", "bold"), _t(machine.hostname or "?", "bold cyan"),
                          _t(f" taken {machine.taken_at}, GPU facts from {machine.source}")))
    if machine.driver_version:
        c.print(_t(f"NVIDIA driver {machine.driver_version}, CUDA {machine.cuda_driver_version or '?'}"))
    if not machine.gpus:
        c.print("[yellow]no GPUs[/yellow]")
    else:
        t = Table(header_style="bold")
        for col in ("GPU", "name", "total", "used", "free", "cc", "MIG", "processes"):
            t.add_column(col)
        for g in machine.gpus:
            procs = "unknown" if g.processes is None else "\n".join(
                f"{p.pid} {p.user or '?'} {p.name or '?'} {fmt(p.used_memory_bytes, '_bytes')}"
                + (" ORPHANED vLLM" if p.orphaned_vllm else "") for p in g.processes) or "-"
            cc = f"{g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else "?"
            # Process names and users come from other users' processes (or a snapshot file): plain text.
            t.add_row(*(_t(cell) for cell in (g.index, g.name or "?", fmt(g.memory_total_bytes, "_bytes"),
                                                fmt(g.memory_used_bytes, "_bytes"), fmt(g.memory_free_bytes, "_bytes"),
                                                cc, fmt(g.mig_enabled), procs)))
        c.print(t)
    h = machine.host
    c.print(_t(f"RAM {fmt(h.memory_available_bytes, '_bytes')} available of {fmt(h.memory_total_bytes, '_bytes')}"
               + (f", cgroup limit {fmt(h.cgroup_memory_limit_bytes, '_bytes')}" if h.cgroup_memory_limit_bytes else "")
               + f"; swap free {fmt(h.swap_free_bytes, '_bytes')}; /dev/shm {fmt(h.shm_free_bytes, '_bytes')} free of "
               f"{fmt(h.shm_total_bytes, '_bytes')}; {fmt(h.cpu_count)} CPUs; open files {fmt(h.nofile_soft_limit)}"))
    for d in h.disks:
        c.print(_t(f"disk {d.path}: {fmt(d.free_bytes, '_bytes')} free of {fmt(d.total_bytes, '_bytes')}"))
    for note in machine.notes:
        c.print(_t(f"note: {note}", "yellow"))


def _advice(d: Diagnosis) -> Advice:
    """The advice for a more specific reading within the class when there is one (a bare SIGKILL)."""
    return DETAIL_ADVICE.get(d.detail or "", ADVICE[d.cls])


def _step_dict(step: Step) -> dict[str, Any]:
    """The ladder's step, with the two pasteable spellings of its change."""
    d = step.to_dict()
    if step.param:
        d["toml"], d["flag"] = toml_line(step.param, step.value), flag(step.param, step.value)
    return d


def explain_json(d: Diagnosis, step: Step | Stop) -> str:
    advice = _advice(d)
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
    }
    return json.dumps(doc, indent=2)


def _shown_number(key: str, value: Any) -> str:
    """A number from vLLM's log as people read it: a capability vLLM writes as 75 is compute capability 7.5."""
    if key.endswith("capability") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value >= 10 and float(value).is_integer():
            return f"{int(value) // 10}.{int(value) % 10}"
        return f"{value:.1f}"
    return fmt(value)


def print_explain(d: Diagnosis, step: Step | Stop, stream: TextIO) -> None:
    c = _console(stream)
    advice = _advice(d)
    style = "bold yellow" if d.cls == "unknown" else "bold red"
    c.print(Text.assemble(("failure: ", "bold"), (d.cls, style), f" during {STAGE_NAMES.get(d.stage, d.stage)}"))
    if d.numbers:
        c.print(_t("numbers: " + ", ".join(f"{k} {_shown_number(k, v)}" for k, v in d.numbers.items())))
    if d.exit_signal:
        c.print(f"vLLM was killed by signal {d.exit_signal}", markup=False)
    c.print("[bold]evidence[/bold]")
    for line in d.evidence:
        c.print(_t(f"  {mask_url_credentials(line)}"))
    c.print("[bold]why[/bold]")
    c.print(f"  {advice.explanation}", markup=False)
    c.print("[bold]what helps[/bold]")
    for item in advice.helps:
        c.print(f"  + {item}", markup=False)
    if advice.does_not_help:
        c.print("[bold]what does not[/bold]")
        for item in advice.does_not_help:
            c.print(f"  - {item}", markup=False)
    if isinstance(step, Step):
        # A log does not say whether vLLM was started from a profile or a command line: both spellings.
        change = (f"{toml_line(step.param, step.value)} in a profile's [vllm] table, or {flag(step.param, step.value)}"
                  " on the command line") if step.param else "no change"
        c.print(Text.assemble(("next step: ", "bold"), (change, "bold green"), f" ({step.reason})"))
    else:
        c.print(Text.assemble(("next step: ", "bold"), ("none the ladder can take", "bold"), f" ({step.reason})"))


RELAY_BATCH_S = 0.1
RELAY_BATCH_LINES = 500


class LaunchStatus:
    """What the guard shows while it starts and supervises vLLM.

    vLLM's own lines are relayed unchanged, stdout to stdout and stderr to stderr
    (journald keeps vLLM's log). On a terminal the guard adds a live one-line
    status; elsewhere it prints one plain line per phase change.
    """

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        import threading

        self.out, self.err = stdout, stderr
        self._lock = threading.Lock()
        self._broken: set[int] = set()  # id() of the streams that failed a write
        self._console = Console(file=stderr, highlight=False)
        self.live_mode = bool(getattr(stdout, "isatty", lambda: False)()) and bool(
            getattr(stderr, "isatty", lambda: False)())
        self._live: Any = None
        self._pending: list[str] = []  # vLLM's lines not yet printed above the live status
        self._phase = ""
        self._closed = threading.Event()
        if self.live_mode:
            from rich.live import Live

            self._live = Live(Text(""), console=self._console, refresh_per_second=2, transient=True)
            self._live.start()
            # Printing above a live display re-renders it: one print per line cost 42x the CPU of a pipe.
            # vLLM's lines are printed in batches, at most RELAY_BATCH_S late.
            threading.Thread(target=self._flush_loop, daemon=True).start()

    def relay(self, raw: bytes, stream: str) -> None:
        if self._live is not None:
            with self._lock:
                text = raw.decode(errors="replace").rstrip("\r\n")
                # A bar redrawn with carriage returns: a terminal shows its last state, and so does this.
                self._pending.append(text.rsplit("\r", 1)[-1] if "\r" in text else text)
                if len(self._pending) >= RELAY_BATCH_LINES:
                    self._flush()
            return
        target = self.out if stream == "stdout" else self.err
        with self._lock:
            self._write(target, raw)

    def progress(self, text: str) -> None:
        """A progress bar vLLM redraws with carriage returns: shown in the live status as it moves."""
        if self._live is not None and text.strip():
            self._live.update(Text.assemble((self._phase, "bold cyan"), "  ", _t(text.strip())))

    def _flush_loop(self) -> None:
        while not self._closed.wait(RELAY_BATCH_S):
            with self._lock:
                self._flush()

    def _flush(self) -> None:
        """Print the pending lines above the live status (the caller holds the lock)."""
        if self._pending and self._live is not None:
            # Console.out: no markup, no wrapping, no highlighting; vLLM's bytes as they came (decoded), which
            # rich then keeps above its live status line. print() of a Text costs ~10x more per line.
            self._live.console.out("\n".join(self._pending), highlight=False)
        self._pending = []

    def message(self, text: str, style: str = "bold") -> None:
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.console.print(Text(f"vllm-guard: {text}", style=style))
            else:
                self._write(self.err, f"vllm-guard: {text}\n".encode(errors="backslashreplace"))

    def _write(self, target: TextIO, raw: bytes) -> None:
        """Write and flush; a stream that fails (its reader is gone after a stop, a full disk) is given up,
        never fatal. The relay thread must keep draining vLLM's pipes, and the guard's exit status must stay
        its own: Python exits 120 when its final flush of a broken stdout fails."""
        if id(target) in self._broken:
            return
        try:
            buffer = getattr(target, "buffer", None)
            if buffer is not None:
                buffer.write(raw)
                buffer.flush()
            else:
                target.write(raw.decode(errors="replace"))
                target.flush()
        except (OSError, ValueError):
            self._broken.add(id(target))
            _point_at_devnull(target)

    def attempt_started(self, label: str) -> None:
        self.message(f"{label}: starting vLLM")

    def phase(self, text: str, *, heartbeat: bool = False) -> None:
        if self._live is not None:
            self._phase = text
            self._live.update(Text(text, style="bold cyan"))
        elif heartbeat:
            self.message(f"still in {text}", style="")
        else:
            self.message(text, style="")

    def ready(self, number: int, reported: dict[str, Any], relaxed: dict[str, list[Any]], profile: str | None,
              phases: Mapping[str, float | None] | None = None, *, url: str | None = None,
              set_by_user: frozenset[str] = frozenset()) -> None:
        """The ready line (where, after how many attempts and how long, what vLLM reported), the start-up
        phases, and a relaxed start's values spelled the way the user wrote theirs (``profile`` None: a
        command line, so flags; else TOML lines for that profile)."""
        self.close()  # the live start-up line has done its job; from here on, plain lines
        self.message(ready_line(number, reported, url), style="bold green")
        if phases and (where := phases_line(phases)):
            self.message(f"where the start-up time went: {where}", style="")
        if relaxed:
            command_line = profile is None
            what = "; ".join(
                f"{as_written(k, new, command_line=command_line)} "
                f"({previous(k, old, set_by_user=k in set_by_user, command_line=command_line)})"
                for k, (old, new) in relaxed.items())
            where = f" in {profile}" if profile else " on the command line"
            self.message(f"RELAXED START: vLLM runs, but NOT as the {'command line' if command_line else 'profile'}"
                         f" is written: {what}. Put these values{where} to start this way directly.",
                         style="bold yellow")

    def attempts_table(self, history: list[Any], *, exhausted: bool) -> None:
        table = Table(title="vllm-guard: every start failed" if exhausted else "vllm-guard: start failed",
                      header_style="bold")
        for col in ("attempt", "changed", "outcome", "failure", "next"):
            table.add_column(col, overflow="fold")
        for a in history:
            changed = "\n".join(f"{k}: {old} -> {new}" for k, (old, new) in a.changed.items()) or "-"
            failure = f"{a.diagnosis.cls} ({a.diagnosis.stage})" if a.diagnosis else "-"
            step = a.step
            nxt = (toml_line(step.param, step.value) if getattr(step, "param", None) else getattr(step, "reason", "-"))
            table.add_row(*(_t(cell) for cell in (a.number, changed, a.outcome, failure, nxt or "-")))
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.console.print(table)
            else:
                Console(file=self.err, highlight=False, width=_width(self.err)).print(table)
        last = history[-1].diagnosis if history else None
        if last is not None:
            advice = _advice(last)
            self.message(f"{last.cls}: {advice.explanation}", style="")
            for item in advice.helps:
                self.message(f"  what helps: {item}", style="")

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._flush()
            if self._live is not None:
                self._live.stop()
                self._live = None


def _point_at_devnull(stream: TextIO) -> None:
    """Let a broken stream's unflushed data (and the interpreter's last flush) go to /dev/null."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    except (OSError, ValueError):  # a StringIO, a closed file
        return
    try:
        os.dup2(null, fd, inheritable=fd < 3)
    except OSError:
        pass
    finally:
        os.close(null)


def ready_line(number: int, reported: Mapping[str, Any], url: str | None) -> str:
    """'vLLM is ready on http://127.0.0.1:8000 after 1 attempt(s), 41 s: KV cache 40,544 tokens (1.00x
    concurrency), weights 14.99 GiB' - what the systemd status says too, in a sentence."""
    text = "vLLM is ready" + (f" on {url}" if url else "") + f" after {number} attempt(s)"
    if isinstance(reported.get("time_to_ready_s"), (int, float)):
        text += f", {reported['time_to_ready_s']:.0f} s"
    facts = []
    if isinstance(reported.get("kv_cache_tokens"), int):
        kv = f"KV cache {reported['kv_cache_tokens']:,} tokens"
        if isinstance(reported.get("max_concurrency"), (int, float)):
            kv += f" ({reported['max_concurrency']:.2f}x concurrency)"
        facts.append(kv)
    if isinstance(reported.get("model_loading_gib"), (int, float)):
        facts.append(f"weights {reported['model_loading_gib']:.2f} GiB")
    if isinstance(reported.get("model_loading_s"), (int, float)):
        facts.append(f"loaded in {reported['model_loading_s']:.0f} s")
    return text + (": " + ", ".join(facts) if facts else "")


PHASE_LABELS = {"imports": "imports", "placement_group": "Ray placement group", "ray_workers": "Ray workers",
                "weights": "weights", "profiling": "profiling", "kv_cache": "KV cache",
                "graphs": "graphs", "port": "API server", "health": "health", "first_request": "first token"}


def phases_line(phases: Mapping[str, float | None]) -> str:
    """'41 s: imports 12, weights 18, profiling 6, graphs 3, first token 0.4': each phase's own share.

    A phase the log did not show is left out and its time counts towards the next one that it did show.
    """
    previous = 0.0
    parts = []
    for name, label in PHASE_LABELS.items():
        at = phases.get(name)
        if at is None:
            continue
        parts.append(f"{label} {max(at - previous, 0.0):.1f}")
        previous = at
    return f"{previous:.0f} s: " + ", ".join(parts) if parts else ""


def print_attempts(records: list[dict[str, Any]], source: str, stream: TextIO) -> None:
    """One row per start of vLLM; six columns, so that it reads at 100 columns (a wider terminal, or a
    pipe, gets each cell on one line)."""
    c = _console(stream)
    table = Table(title=f"attempts in {source}", header_style="bold")
    for col in ("#", "started", "outcome", "changed", "failure / next", "vLLM reported"):
        # "failed after 12.4 s" on one line: the outcome column is never narrower than that.
        table.add_column(col, no_wrap=col in ("#", "started"), overflow="fold",
                         min_width=20 if col == "outcome" else None)
    for r in records:
        # The log is a file anyone with write access could have edited: plain text, never markup.
        table.add_row(*(Text(printable(cell, 500)) for cell in _attempt_cells(r)))
    c.print(table)


def print_ps(instances: list[Instance], source: str, notes: list[str], stream: TextIO) -> None:
    """`vllm-guard ps`: one line per vLLM; its pids, users and command lines come from other users: plain text."""
    c = _console(stream)
    if not instances:
        c.print(_t(f"no vLLM running ({source})"))
    else:
        t = Table(header_style="bold", box=None, pad_edge=False)
        for col in ("PID", "STATE", "GUARD", "GPUS", "GPU MEM", "PORT", "FOR", "USER", "WHAT"):
            t.add_column(col, overflow="fold")
        for i in instances:
            what = i.profile or i.model or "?"
            if i.uds:
                what += f" on {i.uds}"
            if i.attempt is not None and i.attempt > 1:
                what += f" (attempt {i.attempt})"
            if i.note:
                what += f": {i.note}"
            style = "bold red" if i.state == "orphaned" else "green" if i.state in ("ready", "running") else "yellow"
            t.add_row(_t(i.pid if i.pid is not None else "-"), _t(i.state, style),
                      _t(i.guard_pid if i.guard_pid is not None else ("preload" if i.kind == "preload" else "-")),
                      _t(",".join(str(g) for g in i.gpus) or "-"),
                      _t(fmt(i.gpu_memory_bytes, "_bytes") if i.gpu_memory_bytes is not None else "-"),
                      _t(i.port if i.port is not None else "-"), _t(_age(i.since)), _t(i.user or "?"), _t(what))
        c.print(t)
    for note in notes:
        c.print(_t(f"note: {note}", "yellow"))


def _age(since: str | None) -> str:
    """How long a state has lasted, from its ISO start: "42s", "3m05s", "2h10m", "3d4h"."""
    from datetime import datetime, timezone

    try:
        start = datetime.fromisoformat(since or "")
        s = max(int((datetime.now(timezone.utc) - start).total_seconds()), 0)
    except (ValueError, TypeError):  # not a time, or one without its UTC offset
        return "-"
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600}h"


def ps_json(instances: list[Instance], source: str, notes: list[str]) -> str:
    return json.dumps({"schema": PS_SCHEMA, "source": source, "instances": [i.to_dict() for i in instances],
                       "notes": notes}, indent=2)


def _attempt_cells(r: dict[str, Any]) -> tuple[object, ...]:
    changed = "\n".join(f"{k}: {v[0]} -> {v[1]}" for k, v in (r.get("changed") or {}).items()) or "-"
    failure = (r.get("failure") or {}).get("class")
    nxt = r.get("next") or {}
    if nxt.get("param"):
        next_text = "next: " + toml_line(str(nxt["param"]), nxt.get("value"))
    else:
        next_text = nxt.get("stop") or nxt.get("reason") or ""
    when = str(r.get("started_at") or r.get("ended_at") or "")[5:16].replace("T", " ")
    reported = r.get("reported") or {}
    took = reported.get("time_to_ready_s") if r.get("outcome") == "ready" else r.get("duration_s")
    outcome = str(r.get("outcome", "?"))
    if isinstance(took, (int, float)):
        outcome += f" after {took:g} s"
    if r.get("phase"):
        outcome += f" ({r['phase']})"
    if r.get("preflight") == "forced":
        outcome += "\npreflight: forced"
    facts = [f"KV {reported['kv_cache_tokens']:,} tokens" if isinstance(reported.get("kv_cache_tokens"), int)
             else "", f"{reported['max_concurrency']:g}x concurrency" if isinstance(
                 reported.get("max_concurrency"), (int, float)) else ""]
    phases = r.get("phases")
    if isinstance(phases, dict) and all(isinstance(v, (int, float)) or v is None for v in phases.values()):
        facts.append(phases_line(phases))
    return (r.get("attempt", "?"), when or "-", outcome, changed, "\n".join(x for x in (failure, next_text) if x)
            or "-", "\n".join(x for x in facts if x) or "-")
