"""Tables for people: a machine snapshot, the attempt history, and `ps`."""

from __future__ import annotations

from typing import Any, TextIO

from vllm_guard.diagnose import stacks
from vllm_guard.facts.machine import Machine
from vllm_guard.redact import printable
from vllm_guard.report.live import phases_line
from vllm_guard.report.text import Table, Text, console_for, fmt, plain, seconds_text
from vllm_guard.state.instances import Instance
from vllm_guard.suggest import toml_line


def print_machine(machine: Machine, stream: TextIO) -> None:
    c = console_for(stream)
    c.print(Text.assemble(("machine ", "bold"), plain(machine.hostname or "?", "bold cyan"),
                          plain(f" taken {machine.taken_at}, GPU facts from {machine.source}")))
    if machine.driver_version:
        c.print(plain(f"NVIDIA driver {machine.driver_version}, CUDA {machine.cuda_driver_version or '?'}"))
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
            t.add_row(*(plain(cell) for cell in (g.index, g.name or "?", fmt(g.memory_total_bytes, "_bytes"),
                                                fmt(g.memory_used_bytes, "_bytes"), fmt(g.memory_free_bytes, "_bytes"),
                                                cc, fmt(g.mig_enabled), procs)))
        c.print(t)
    h = machine.host
    c.print(plain(f"RAM {fmt(h.memory_available_bytes, '_bytes')} available of {fmt(h.memory_total_bytes, '_bytes')}"
               + (f", cgroup limit {fmt(h.cgroup_memory_limit_bytes, '_bytes')}" if h.cgroup_memory_limit_bytes else "")
               + f"; swap free {fmt(h.swap_free_bytes, '_bytes')}; /dev/shm {fmt(h.shm_free_bytes, '_bytes')} free of "
               f"{fmt(h.shm_total_bytes, '_bytes')}; {fmt(h.cpu_count)} CPUs; open files {fmt(h.nofile_soft_limit)}"))
    for d in h.disks:
        c.print(plain(f"disk {d.path}: {fmt(d.free_bytes, '_bytes')} free of {fmt(d.total_bytes, '_bytes')}"))
    for note in machine.notes:
        c.print(plain(f"note: {note}", "yellow"))


def print_attempts(records: list[dict[str, Any]], source: str, stream: TextIO) -> None:
    """One row per start of vLLM; six columns, so that it reads at 100 columns (a wider terminal, or a
    pipe, gets each cell on one line)."""
    c = console_for(stream)
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
    c = console_for(stream)
    if not instances:
        c.print(plain(f"no vLLM running ({source})"))
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
            t.add_row(plain(i.pid if i.pid is not None else "-"), plain(i.state, style),
                      plain(i.guard_pid if i.guard_pid is not None else ("preload" if i.kind == "preload" else "-")),
                      plain(",".join(str(g) for g in i.gpus) or "-"),
                      plain(fmt(i.gpu_memory_bytes, "_bytes") if i.gpu_memory_bytes is not None else "-"),
                      plain(i.port if i.port is not None else "-"), plain(_age(i.since)), plain(i.user or "?"),
                      plain(what))
        c.print(t)
    for note in notes:
        c.print(plain(f"note: {note}", "yellow"))


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


def _attempt_cells(r: dict[str, Any]) -> tuple[object, ...]:
    changed = "\n".join(f"{k}: {v[0]} -> {v[1]}" for k, v in (r.get("changed") or {}).items()) or "-"
    failure = (r.get("failure") or {}).get("class")
    hang = r.get("hang")
    if failure == "startup_hang" and isinstance(hang, dict):  # where it was stuck: each process's innermost frames
        failure = "\n".join([f"startup_hang ({hang.get('stage')})", *stacks.summary(hang.get("frames"), 2, 3)])
    nxt = r.get("next") or {}
    if nxt.get("param") and nxt.get("value") is not None:  # a None value has no TOML spelling
        next_text = "next: " + toml_line(str(nxt["param"]), nxt.get("value"))
    else:
        next_text = nxt.get("stop") or nxt.get("reason") or ""
    when = str(r.get("started_at") or r.get("ended_at") or "")[5:16].replace("T", " ")
    reported = r.get("reported") or {}
    took = reported.get("time_to_ready_s") if r.get("outcome") == "ready" else r.get("duration_s")
    outcome = str(r.get("outcome", "?"))
    if isinstance(took, (int, float)):
        outcome += f" after {seconds_text(took)}"
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
