"""A Ray cluster for people: its nodes and the placement of vLLM's ranks."""

from __future__ import annotations

from typing import TextIO

from vllm_guard.cluster.placement import Placement
from vllm_guard.cluster.preflight import ClusterPreflight
from vllm_guard.facts.cluster import ClusterFacts
from vllm_guard.preflight.memory import GIB
from vllm_guard.report.check import print_budget, print_findings, print_verdict
from vllm_guard.report.text import Table, Text, console_for, fmt, plain

# --- a Ray cluster ---------------------------------------------------------------------


def print_cluster(cluster: ClusterFacts, stream: TextIO) -> None:
    """Every node: its address, GPUs and their free memory, host memory, versions, whether it can read the model."""
    c = console_for(stream)
    c.print(Text.assemble(("Ray cluster ", "bold"), plain(cluster.address, "bold cyan"),
                          plain(f", {len(cluster.nodes)} node(s), taken {cluster.taken_at}")))
    t = Table(header_style="bold")
    for col in ("node", "address", "GPUs: free memory", "host", "vLLM / torch / Ray / Python", "model"):
        t.add_column(col, overflow="fold")
    for n in cluster.nodes:
        m = n.machine
        who = n.name + (" (head)" if n.is_head else "")
        if m is None:
            t.add_row(plain(who), plain(n.ip or "?"), plain(f"Ray: {fmt(n.ray_gpus)}"), Text(n.error or "no answer",
                      style="bold red"), plain(""), plain(""))
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
        t.add_row(*(plain(x) for x in (who + answered, f"{n.ip or '?'} ({n.interface or '?'})", gpus, host, versions,
                                     model)))
    c.print(t)
    for note in cluster.notes:
        c.print(plain(f"note: {note}", "dim"))


def print_placement(placement: Placement, stream: TextIO) -> None:
    c = console_for(stream)
    if not placement.ranks:
        c.print(plain(f"placement: none: {placement.problem}", "bold red"))
        return
    t = Table(title=f"placement: tensor {placement.tensor_parallel} x pipeline {placement.pipeline_parallel}",
              header_style="bold")
    for col in ("node", "GPU", "name", "rank", "pipeline stage", "tensor rank"):
        t.add_column(col)
    for r in placement.ranks:
        t.add_row(*(plain(x) for x in (r.node, r.gpu.index, r.gpu.name or "?", r.rank, r.stage, r.tp_rank)))
    c.print(t)


def print_cluster_check(cp: ClusterPreflight, target: str, stream: TextIO) -> None:
    c = console_for(stream)
    pre, m = cp.pre, cp.facts.model
    c.print(Text.assemble(("vllm-guard check ", "bold"), plain(target, "bold cyan"),
                          plain(f" on {cp.facts.machine_origin}")))
    weights = f"weights {fmt(m.weights_bytes, '_bytes')} ({m.weights_source})" if m.weights_bytes else "weights unknown"
    c.print(plain(f"model  {m.model}: {m.architecture or '?'} from {m.source}, {weights}"))
    print_cluster(cp.cluster, stream)
    print_placement(cp.placement, stream)
    print_findings(c, pre.findings)
    if pre.estimate is not None:
        print_budget(c, pre)
    for note in (*pre.notes, *m.notes):
        c.print(plain(f"note: {note}", "dim"))
    print_verdict(c, pre.verdict, pre.findings)
