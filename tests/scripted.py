"""Scripted fakes for driving the real Supervisor without processes, sockets or sleeps (honcho-style).

* ``FakeClock``: time moves only when the guard waits (``pause``); events run when their time comes.
* ``ScriptedVllm``: the spawner and the ``/health`` probe of a scripted vLLM, one ``Script`` per start.
* ``ScriptedChild``: the interface of ``launch.process.Child`` (poll, stop, tail, pid, vllm_pid, claim, ...).
* ``FakeHost``: the guard's own process; ``signal(signum)`` delivers a stop signal to the guard's handler.
* ``RecordingStatus`` and ``RecordingNotifier``: what the guard showed, and what it told systemd.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.conftest import MACHINES
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.launch import lock
from vllm_guard.launch.context import Host, LaunchContext
from vllm_guard.launch.notify import Notifier
from vllm_guard.preflight.run import Preflight, preflight
from vllm_guard.probes import gather
from vllm_guard.probes.select import gpu_label
from vllm_guard.profile.load import load_profile

L4 = MACHINES / "l4-24gb.json"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GIB = 2**30


class FakeClock:
    """A monotonic clock that advances by what the guard waits; ``at(t, fn)`` runs ``fn`` once time reaches t."""

    def __init__(self, start: float = 1000.0) -> None:
        self.start = self.now = start
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    @property
    def elapsed(self) -> float:
        return self.now - self.start

    def at(self, elapsed: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._events, (self.start + elapsed, next(self._order), fn))

    def pause(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        while self._events and self._events[0][0] <= self.now:
            heapq.heappop(self._events)[2]()


@dataclass(frozen=True)
class Script:
    """One start of the scripted vLLM; times are seconds after it was spawned."""

    lines: tuple[str, ...] = ()  # its log, written as it starts
    exit_at: float | None = None  # when it exits on its own, with ``status``
    status: int = 1
    ready_at: float | None = None  # from when /health answers 200
    stall_at: float | None = None  # from when /health stops answering (it hangs)


class ScriptedChild:
    """A started scripted vLLM, with the interface the guard uses of ``process.Child``."""

    def __init__(self, script: Script, clock: FakeClock, pid: int, sink: Callable[[bytes, str], None]) -> None:
        self.script = script
        self.clock = clock
        self.pid = pid
        self.vllm_pid: int | None = pid + 1
        self.started = clock()
        self.tail: deque[str] = deque(maxlen=4000)
        self.stop_report: dict[str, Any] = {}
        self.stopped_with: float | None = None  # the grace it was stopped with
        self.ready_marked = False
        self.claimed: list[str] = []
        self.exit_status: int | None = None
        for line in script.lines:
            self.tail.append(line)
            sink(line.encode() + b"\n", "stdout")

    def _age(self) -> float:
        return self.clock() - self.started

    def poll(self) -> int | None:
        if self.exit_status is None and self.script.exit_at is not None and self._age() >= self.script.exit_at:
            self.exit_status = self.script.status
        return self.exit_status

    def answers(self) -> bool:
        """Whether its /health answers 200 now."""
        s = self.script
        alive = self.poll() is None
        stalled = s.stall_at is not None and self._age() >= s.stall_at
        return alive and s.ready_at is not None and self._age() >= s.ready_at and not stalled

    def stop(self, grace_s: float) -> int:
        self.stopped_with = grace_s
        if self.poll() is None:
            self.exit_status = -15  # stopped by SIGTERM
            self.stop_report = {"seconds": 1.5}
        return self.exit_status if self.exit_status is not None else -15

    def claim(self, path: str) -> None:
        self.claimed.append(path)

    def mark_ready(self) -> None:
        self.ready_marked = True


@dataclass
class Spawned:
    argv: list[str]
    env: dict[str, str]
    grace_s: float
    child: ScriptedChild


class ScriptedVllm:
    """The spawner (one ``Script`` per start, the last one repeated) and the /health probe of its children."""

    def __init__(self, clock: FakeClock, *scripts: Script) -> None:
        self.clock = clock
        self.scripts = list(scripts)
        self.spawned: list[Spawned] = []
        self.health_urls: list[str] = []

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], sink: Callable[[bytes, str], None], *,
              grace_s: float = 30.0, on_event: Callable[[str], None] | None = None,
              on_progress: Callable[[str], None] | None = None) -> ScriptedChild:
        script = self.scripts[min(len(self.spawned), len(self.scripts) - 1)]
        child = ScriptedChild(script, self.clock, 40000 + 10 * len(self.spawned), sink)
        self.spawned.append(Spawned(list(argv), dict(env), grace_s, child))
        return child

    def ready(self, url: str) -> bool:
        self.health_urls.append(url)
        return bool(self.spawned) and self.spawned[-1].child.answers()

    def argv(self, n: int) -> str:
        return " ".join(self.spawned[n].argv)


class FakeHost:
    """The guard's process: no subreaper, no real signal handlers, no children of its own."""

    def __init__(self) -> None:
        self.handler: Callable[[int], None] | None = None
        self.restored = False

    def signal(self, signum: int) -> None:
        assert self.handler is not None, "the guard did not route stop signals"
        self.handler(signum)

    def _route(self, handler: Callable[[int], None]) -> Callable[[], None]:
        self.handler = handler

        def restore() -> None:
            self.restored = True
            self.handler = None

        return restore

    def host(self) -> Host:
        return Host(become_subreaper=lambda: True, on_stop_signals=self._route,
                    adopted_children=lambda exclude: [], zombie_children=lambda exclude: [],
                    stop_orphans=lambda pids: None, reap=lambda pids: None)


class RecordingStatus:
    """The live status, as lines: ("message", text), ("phase", text), ("ready", ...), ("table", ...)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.relayed: list[bytes] = []
        self.closed = False

    def relay(self, raw: bytes, stream: str) -> None:
        self.relayed.append(raw)

    def progress(self, text: str) -> None:
        self.events.append(("progress", text))

    def message(self, text: str, style: str = "bold") -> None:
        self.events.append(("message", text))

    def attempt_started(self, label: str) -> None:
        self.events.append(("attempt", label))

    def phase(self, text: str, *, heartbeat: bool = False) -> None:
        self.events.append(("heartbeat" if heartbeat else "phase", text))

    def ready(self, number: int, reported: dict[str, Any], relaxed: dict[str, list[Any]], profile: str | None,
              phases: Mapping[str, float | None] | None = None, *, url: str | None = None,
              set_by_user: frozenset[str] = frozenset()) -> None:
        self.events.append(("ready", {"number": number, "relaxed": relaxed, "url": url, "set_by_user": set_by_user}))

    def attempts_table(self, history: list[Any], *, exhausted: bool) -> None:
        self.events.append(("table", {"attempts": len(history), "exhausted": exhausted}))

    def close(self) -> None:
        self.closed = True

    def messages(self) -> list[str]:
        return [text for kind, text in self.events if kind == "message"]

    def of(self, kind: str) -> list[Any]:
        return [value for k, value in self.events if k == kind]


class RecordingNotifier(Notifier):
    """systemd's notify protocol with every datagram kept instead of sent."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__(environ)
        self.sent: list[tuple[str, ...]] = []

    def send(self, *fields: str) -> bool:
        self.sent.append(fields)
        return True

    def fields(self, prefix: str) -> list[str]:
        return [f for fields in self.sent for f in fields if f.startswith(prefix)]


@dataclass
class World:
    """One test's machine and profile: the preflight and facts from the L4 snapshot, the guard's dirs."""

    tmp: Path
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = {"HF_HUB_OFFLINE": "1", "HOME": str(self.tmp), "PATH": "/usr/bin:/bin",
                    "VLLMGUARD_ATTEMPT_LOG": str(self.tmp / "state" / "attempts.jsonl"),
                    "VLLMGUARD_STATE_DIR": str(self.tmp / "state"), "VLLMGUARD_LOCK_DIR": str(self.tmp / "locks"),
                    **self.env}

    @property
    def log(self) -> Path:
        return Path(self.env["VLLMGUARD_ATTEMPT_LOG"])

    def preflight(self, vllm: str = "max-model-len = 32768", guard: str = "first-request = false",
                  ladder: str = "") -> tuple[Preflight, Facts]:
        path = self.tmp / "p.toml"
        path.write_text(f'[model]\nid = "{MODEL}"\n[vllm]\nport = 8123\n{vllm}\n[guard]\n{guard}\n'
                        f"[guard.ladder]\n{ladder}\n")
        profile = load_profile(path, environ=self.env)
        facts = gather(profile, environ=self.env, machine_file=str(L4))
        return preflight(profile, facts), facts

    def records(self) -> list[dict[str, Any]]:
        import json

        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]


def with_free(gpus: Sequence[Gpu], fraction: float) -> tuple[Gpu, ...]:
    """The GPUs with only ``fraction`` of their memory free."""
    return tuple(replace(g, memory_free_bytes=int((g.memory_total_bytes or 0) * fraction)) for g in gpus)


@dataclass
class FakePort:
    """Whose socket answers on vLLM's port, scripted: the launch's own unless ``foreign`` names a holder."""

    foreign: str | None = None

    def ours(self, url: str, root_pid: int) -> bool:
        return self.foreign is None

    def accepts(self, url: str) -> bool:
        return True

    def holder(self, url: str) -> str:
        return self.foreign or "nobody"


def context(world: World, pre: Preflight, facts: Facts, *,
            gpu_probe: Callable[[], tuple[Gpu, ...]] | None = None) -> LaunchContext:
    """A launch's shared context for testing one piece (the Relaxer, the first request) on its own."""
    clock = FakeClock()
    return LaunchContext(pre=pre, facts=facts, environ=world.env, status=RecordingStatus(),
                         notifier=RecordingNotifier(world.env), clock=clock, spawner=ScriptedVllm(clock).spawn,
                         ready=lambda url: False, gpu_probe=gpu_probe, launch_locks=None,
                         gpu_label=gpu_label, lock_dir=lock.lock_dir(None, world.env),
                         host=FakeHost().host(), port=FakePort(), pause=clock.pause)
