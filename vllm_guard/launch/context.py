"""What the pieces of one launch share, instead of the whole Supervisor.

``LaunchContext``: the preflight, the environment, the live status, systemd's notifier, the clock and how
to wait, the stop flag, the GPUs this launch uses, and the collaborators that reach vLLM (spawner, ready
probe, port owner, GPU probe, launch locks). ``Host``: the guard's own process as a launch uses it (signals, the
subreaper, adopted children); the real one by default, a fake that touches nothing in tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.launch import process
from vllm_guard.launch.child import Child
from vllm_guard.launch.lock import LaunchLocks
from vllm_guard.launch.notify import Notifier
from vllm_guard.launch.ownership import PortOwner, PortWatch
from vllm_guard.launch.phases import Status
from vllm_guard.preflight.run import Preflight
from vllm_guard.probes.host import adopted_children, zombie_children
from vllm_guard.profile.model import Profile, world_size

Spawner = Callable[..., Child]  # (argv, env, sink, *, grace_s, on_event, on_progress), as process.spawn


@dataclass(frozen=True)
class Host:
    """The guard's own process: stop signals, the subreaper, and the children it adopts as one."""

    become_subreaper: Callable[[], object] = process.set_child_subreaper
    on_stop_signals: Callable[[process.StopHandler], Callable[[], None]] = process.on_stop_signals
    adopted_children: Callable[[tuple[int, ...]], list[int]] = adopted_children
    zombie_children: Callable[[tuple[int, ...]], list[int]] = zombie_children
    stop_orphans: Callable[[Sequence[int]], None] = process.stop_orphans
    reap: Callable[[Sequence[int]], None] = process.reap


@dataclass
class LaunchContext:
    pre: Preflight
    facts: Facts  # replaced once guard.gpus = "auto" has chosen under the launch locks
    environ: Mapping[str, str]
    status: Status
    notifier: Notifier
    clock: Callable[[], float]
    spawner: Spawner
    ready: Callable[[str], bool]
    gpu_probe: Callable[[], tuple[Gpu, ...]] | None  # None under --machine: no live re-checks
    # None: this machine's GPU locks; a Ray cluster's: one actor per node
    launch_locks: Callable[[Profile], LaunchLocks] | None
    gpu_label: Callable[[Gpu], str]  # how a GPU is named in messages ("node b GPU 1" on a cluster)
    lock_dir: Path
    host: Host = field(default_factory=Host)
    port: PortOwner = field(default_factory=PortWatch)  # whose socket answers on vLLM's port
    pause: Callable[[float], object] | None = None  # None: wait on ``wake``, which a stop signal sets
    stop_signal: int | None = None
    gpu_choice: str | None = None  # guard.gpus = "auto": what was chosen, and why
    wake: threading.Event = field(default_factory=threading.Event)

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        """The GPUs this launch uses."""
        return self.facts.gpus[: world_size(self.pre.profile)]

    def wait(self, seconds: float) -> None:
        """Up to ``seconds``; a stop signal ends the wait at once."""
        if self.pause is not None:
            self.pause(seconds)
        else:
            self.wake.wait(seconds)

    def exit_for_signal(self) -> int:
        return int(ExitCode.INTERRUPTED if self.stop_signal == process.SIGINT else ExitCode.TERMINATED)
