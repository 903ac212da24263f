"""Which GPUs vLLM will see: guard.gpus and CUDA_VISIBLE_DEVICES read as vLLM reads them; the idlest for "auto"."""

from __future__ import annotations

from collections.abc import Sequence

from vllm_guard.facts.machine import Gpu
from vllm_guard.profile.settings import AUTO_GPUS


def select_gpus(
    gpus: tuple[Gpu, ...], wanted: tuple[int | str, ...] | str | None, cuda_visible: str | None, needed: int = 1
) -> tuple[tuple[Gpu, ...], str | None, list[str]]:
    """The GPUs vLLM will see, the CUDA_VISIBLE_DEVICES the guard sets, and notes.

    ``guard.gpus`` (NVML indices or UUIDs) wins and is passed on as indices, which
    mean the same GPUs to CUDA under CUDA_DEVICE_ORDER=PCI_BUS_ID. ``"auto"`` takes
    the ``needed`` idlest of the visible GPUs (``rank_idlest``). Otherwise an
    inherited CUDA_VISIBLE_DEVICES is honoured as CUDA reads it: indices or
    (prefixes of) UUIDs, up to the first entry that names no GPU.
    """
    notes: list[str] = []
    if wanted == AUTO_GPUS:
        visible, _, notes = select_gpus(gpus, None, cuda_visible)
        idlest = choose_idlest(visible, needed)
        notes.append(describe_choice(idlest, visible))
        return idlest, ",".join(str(g.index) for g in idlest), notes
    if wanted:
        chosen = []
        for item in wanted:
            gpu = _find_gpu(gpus, str(item))
            if gpu is None:
                notes.append(f"guard.gpus names {item!r}, which is not a GPU of this machine")
            elif gpu not in chosen:
                chosen.append(gpu)
        return tuple(chosen), ",".join(str(g.index) for g in chosen), notes
    if cuda_visible is None:
        return gpus, None, notes
    chosen = []
    for entry in (e.strip() for e in cuda_visible.split(",")):
        gpu = _find_gpu(gpus, entry) if entry else None
        if gpu is None:
            if entry:
                notes.append(f"CUDA_VISIBLE_DEVICES entry {entry!r} names no GPU here; CUDA ignores it "
                             "and every entry after it")
            break
        chosen.append(gpu)
    return tuple(chosen), None, notes


def choose_idlest(gpus: Sequence[Gpu], needed: int) -> tuple[Gpu, ...]:
    """guard.gpus = "auto": GPUs with no processes first, then the most free memory (``Gpu.idleness``);
    handed to vLLM in index order, which is CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    return tuple(sorted(sorted(gpus, key=lambda g: g.idleness)[:needed], key=lambda g: g.index))


def describe_gpu(g: Gpu) -> str:
    held = ("processes unknown" if g.processes is None else "no processes" if not g.processes
            else f"{len(g.processes)} process{'es' if len(g.processes) > 1 else ''}")
    free = "free memory unknown" if g.memory_free_bytes is None else f"{g.memory_free_bytes / 2**30:.2f} GiB free"
    return f"GPU {g.index} ({held}, {free})"


def describe_choice(chosen: Sequence[Gpu], visible: Sequence[Gpu]) -> str:
    """Which GPUs guard.gpus = "auto" takes and why, for check, --dry-run and the attempt log."""
    if not chosen:
        return 'guard.gpus = "auto": no GPU is visible to choose from'
    text = 'guard.gpus = "auto" takes ' + ", ".join(describe_gpu(g) for g in chosen)
    others = [g for g in visible if g not in chosen]
    if others:
        text += "; passed over: " + ", ".join(describe_gpu(g) for g in others)
    return text + " (idlest first: no processes, then the most free memory; the launch locks settle a tie " \
                  "between two guards starting at once)"


def _find_gpu(gpus: tuple[Gpu, ...], key: str) -> Gpu | None:
    if key.isdigit():
        return next((g for g in gpus if g.index == int(key)), None)
    matches = [g for g in gpus if g.uuid.startswith(key) or g.uuid.removeprefix("GPU-").startswith(key)]
    return matches[0] if len(matches) == 1 else None


def gpu_kind(g: Gpu) -> tuple[str | None, int | None, tuple[int, int] | None]:
    """What the preflight's verdict on a GPU rests on: its model, its memory and its compute capability."""
    return g.name, g.memory_total_bytes, g.compute_capability


def gpu_label(g: Gpu) -> str:
    """How a GPU is named in messages on one machine (a Ray cluster names its node too)."""
    return f"GPU {g.index}"
