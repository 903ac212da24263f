"""Pure: which GPUs of which node take which ranks, as vLLM 0.33 on Ray will lay them out.

vLLM asks Ray for a placement group of tensor x pipeline bundles of one GPU each, the first bundle on
the driver's node (``node:<driver ip>``), strategy PACK; it then orders its workers driver node first,
then nodes holding more workers, then by IP, and gives ranks in that order: rank = stage x tp + tp rank
(vllm/v1/executor/ray_utils.py initialize_ray_cluster; ray_distributed_executor.py sort_by_driver_then
_worker_ip). Tensor parallel crosses the network when a group spans nodes, so the guard keeps each
tensor-parallel group within a node unless ``guard.ray-tensor-parallel-across-nodes`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vllm_guard.facts.cluster import NodeFacts
from vllm_guard.facts.machine import Gpu


@dataclass(frozen=True)
class Rank:
    rank: int
    stage: int  # pipeline stage
    tp_rank: int
    node: str  # the node's name
    node_id: str
    gpu: Gpu


@dataclass(frozen=True)
class Placement:
    tensor_parallel: int
    pipeline_parallel: int
    ranks: tuple[Rank, ...]  # empty when it does not fit
    usable: dict[str, int]  # GPUs usable per node, by name
    problem: str | None = None  # why it does not fit, naming the nodes

    @property
    def world_size(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def fits(self) -> bool:
        return self.problem is None

    def gpus_on(self, node_id: str) -> tuple[Gpu, ...]:
        return tuple(r.gpu for r in self.ranks if r.node_id == node_id)

    def nodes_used(self) -> list[str]:
        return list(dict.fromkeys(r.node_id for r in self.ranks))


def place(nodes: Sequence[NodeFacts], tensor_parallel: int, pipeline_parallel: int, *,
          tp_across_nodes: bool = False) -> Placement:
    """Lay tensor x pipeline ranks over the nodes that answered: the head first, then the nodes with the
    most usable GPUs, then by name (as vLLM orders its workers)."""
    tp, pp = max(tensor_parallel, 1), max(pipeline_parallel, 1)
    world = tp * pp
    answered = [n for n in nodes if n.answered]
    ordered = sorted(answered, key=lambda n: (not n.is_head, -len(n.usable_gpus), n.name))
    usable = {n.name: len(n.usable_gpus) for n in ordered}
    total = sum(usable.values())
    listing = ", ".join(f"{name} {count}" for name, count in usable.items()) or "no node answered"
    head = next((n for n in ordered if n.is_head), None)
    if head is not None and not head.usable_gpus:
        return Placement(tp, pp, (), usable, f"the head node {head.name} (where vLLM's driver, rank 0, runs) has no "
                         f"GPU Ray can schedule; vLLM's placement group puts its first bundle there")
    if total < world:
        return Placement(tp, pp, (), usable, f"tensor {tp} x pipeline {pp} = {world} GPUs; the cluster has {total} "
                         f"usable ({listing})")
    slots: list[tuple[NodeFacts, Gpu]] = []
    if tp_across_nodes:
        slots = [(n, g) for n in ordered for g in n.usable_gpus][:world]
    else:
        stages_left = pp
        for n in ordered:
            take = min(len(n.usable_gpus) // tp, stages_left)
            slots += [(n, g) for g in n.usable_gpus[: take * tp]]
            stages_left -= take
        if stages_left:
            fits = ", ".join(f"{name} {count // tp}" for name, count in usable.items())
            return Placement(tp, pp, (), usable, f"tensor parallel {tp} within a node: {pp} pipeline stages need "
                             f"{pp} nodes (or GPUs) holding {tp} GPUs each; stages that fit per node: {fits} "
                             f"(guard.ray-tensor-parallel-across-nodes = true lets a group span nodes)")
    ranks = tuple(Rank(i, i // tp, i % tp, n.name, n.node_id, g) for i, (n, g) in enumerate(slots))
    return Placement(tp, pp, ranks, usable)
