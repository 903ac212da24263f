"""One attempt: take the launch locks (and choose the GPUs for guard.gpus = "auto"), re-check free memory
under them, spawn vLLM, poll until it is ready, failed, timed out or stopped. And, for gpu_busy, waiting
for a GPU to free up before the next attempt."""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from vllm_guard.diagnose.classify import Diagnosis, classify
from vllm_guard.diagnose.markers import BEFORE_START, CPU_STAGE_NAMES, STAGE_NAMES, reported
from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.machine import Gpu
from vllm_guard.launch import lock, process
from vllm_guard.launch.child import Child, ChildEnder
from vllm_guard.launch.context import LaunchContext
from vllm_guard.launch.journal import Attempt, Journal, now
from vllm_guard.launch.lock import LaunchLocks
from vllm_guard.launch.ownership import port_taken
from vllm_guard.launch.phases import EXTEND_S, PhaseTracker
from vllm_guard.launch.plan import build_plan
from vllm_guard.launch.readiness import HEALTH_POLL_S, FirstRequest
from vllm_guard.launch.relax import Relaxer
from vllm_guard.launch.stall import HangProbes, StallWatch, limits_of, stall_summary
from vllm_guard.launch.waits import Wait, duration_text
from vllm_guard.probes.select import describe_choice, gpu_kind, select_gpus
from vllm_guard.profile.model import Profile, world_size
from vllm_guard.profile.settings import AUTO_GPUS

HEARTBEAT_S = 10.0


class AttemptRunner:
    """Runs one attempt to its outcome (``Attempt.outcome``: ready, failed or stopped)."""

    def __init__(self, ctx: LaunchContext, journal: Journal, relax: Relaxer, ender: ChildEnder,
                 first_request: FirstRequest, hang_probes: HangProbes | None = None) -> None:
        self.ctx = ctx
        self.hang_probes = hang_probes or HangProbes()
        self.journal = journal
        self.relax = relax
        self.ender = ender
        self.first_request = first_request
        # guard.gpus = "auto": chosen for real under the launch locks of the first attempt, then kept.
        self.choose_gpus = ctx.pre.profile.setting("gpus") == AUTO_GPUS
        self.waited_before: list[dict[str, Any]] = []  # wait-for-gpu between attempts: in the next one's record

    def start(self, attempt: Attempt, max_attempts: int) -> Child | None:
        """The started vLLM once it is ready; None when the attempt failed or was stopped."""
        ctx = self.ctx
        profile = attempt.profile
        attempt.label = attempt_label(attempt.number, max_attempts, attempt.changed)
        attempt.waited += self.waited_before
        self.waited_before = []
        ctx.status.attempt_started(attempt.label)
        ctx.notifier.status(f"{attempt.label}: starting")
        ctx.notifier.extend_timeout(EXTEND_S)
        locks = self._take_locks(attempt)
        if locks is None:
            attempt.outcome = "stopped"
            return None
        self.journal.registry_update(state="starting", since=now(), attempt=attempt.number,
                                     gpus=tuple(g.index for g in ctx.gpus), keeper_pid=None, vllm_pid=None)
        try:
            attempt.started_at = now()
            attempt.started_mono = ctx.clock()
            busy = self.recheck_free_memory(profile)
            if busy is not None:
                attempt.outcome, attempt.diagnosis = "failed", busy
                return None
            return self._launch(attempt)
        finally:
            locks.release()

    def _take_locks(self, attempt: Attempt) -> LaunchLocks | None:
        """The launch locks of this attempt's GPUs; None when a stop came while waiting for them.

        On a Ray cluster, ``launch_locks`` holds them on every node. guard.gpus = "auto" chooses here, under
        the locks, not at preflight: the idlest GPUs whose lock no other guard holds (lock.GpuLocks.idlest),
        so two guards starting at once take different GPUs."""
        ctx = self.ctx
        holder = {"profile": str(attempt.profile.path or attempt.profile.model), "host": socket.gethostname()}
        limit = float(attempt.profile.setting("lock-timeout"))
        labels = {g.uuid: ctx.gpu_label(g) for g in ctx.gpus}
        waits: list[Wait] = []

        def on_wait(what: str, detail: str, said: str | None = None) -> None:
            ctx.status.message(f"waiting for {said or what}{detail}")
            if not waits or waits[-1].what != what:
                waits.append(Wait(ctx, what, limit))
            waits[-1].beat(detail)

        def stop() -> bool:  # called at every look at the lock: the wait's heartbeat too
            if waits:
                waits[-1].beat()
            return ctx.stop_signal is not None

        try:
            if ctx.launch_locks is not None or not self.choose_gpus:
                locks: LaunchLocks = (ctx.launch_locks(attempt.profile) if ctx.launch_locks is not None else
                                      lock.GpuLocks(ctx.lock_dir, [g.uuid for g in ctx.gpus], holder))
                ok = locks.acquire(on_wait=lambda uuid, who: on_wait(
                    f"{labels.get(uuid, f'GPU {uuid}')}'s launch lock", f", held by {who}",
                    f"the launch lock of {labels.get(uuid, f'GPU {uuid}')}"), should_stop=stop)
                return locks if ok else None
            return self._take_idlest(attempt, holder, lambda why: on_wait("GPUs", f": {why}"), stop)
        finally:
            attempt.waited += [w.record() for w in waits]

    def _take_idlest(self, attempt: Attempt, holder: dict[str, str], on_wait: Callable[[str], None],
                     stop: Callable[[], bool]) -> LaunchLocks | None:
        """guard.gpus = "auto": the idlest GPUs of the judged kind whose locks no other guard holds."""
        ctx = self.ctx
        seen: list[Gpu] = []
        # Only GPUs of the kind the preflight judged: on a box of mixed GPUs, another kind could fail a check
        # (weights, KV fit, dtype) that the preflight never ran on it. Waiting for the right kind is safer.
        judged = {gpu_kind(g) for g in ctx.gpus}

        def ranked() -> list[str]:
            gpus = ctx.gpu_probe() if ctx.gpu_probe is not None else ctx.facts.machine.gpus
            seen[:] = select_gpus(gpus, None, ctx.environ.get("CUDA_VISIBLE_DEVICES"))[0]
            fit = [g for g in seen if not judged or gpu_kind(g) in judged]
            return [g.uuid for g in sorted(fit, key=lambda g: g.idleness)]

        taken = lock.GpuLocks.idlest(ctx.lock_dir, ranked, world_size(attempt.profile), holder, on_wait=on_wait,
                                     should_stop=stop)
        if taken is None:
            return None
        chosen = tuple(sorted((g for g in seen if g.uuid in taken.uuids), key=lambda g: g.index))
        visible = ",".join(str(g.index) for g in chosen)
        ctx.gpu_choice = describe_choice(chosen, seen)
        if visible != ctx.facts.cuda_visible_devices:
            ctx.status.message(f"GPU(s) {visible} taken instead of {ctx.facts.cuda_visible_devices} at preflight: "
                               "another start took those meanwhile")
        ctx.status.message(ctx.gpu_choice)
        ctx.facts = replace(ctx.facts, gpus=chosen, cuda_visible_devices=visible)
        attempt.plan = build_plan(attempt.profile, environ=ctx.environ, cuda_visible_devices=visible)
        self.choose_gpus = False  # the ladder's later attempts keep these GPUs: vLLM's numbers are theirs
        return taken

    def _launch(self, attempt: Attempt) -> Child | None:
        ctx = self.ctx
        plan = attempt.plan
        env = plan.environment(ctx.environ)
        build = ctx.facts.vllm_build
        names = CPU_STAGE_NAMES if build is not None and build.is_cpu else STAGE_NAMES
        tracker = PhaseTracker(ctx.status, ctx.notifier, attempt.label, ctx.clock, names, start=attempt.started_mono,
                               stall=limits_of(attempt.profile.setting("stall-timeout")))
        try:
            child = ctx.spawner(plan.argv, env, tracker.sink(ctx.status.relay),
                                grace_s=float(attempt.profile.setting("stop-timeout")), on_event=ctx.status.message,
                                on_progress=tracker.progress_sink(ctx.status.progress))
        except OSError as e:
            raise GuardError(f"cannot start {plan.argv[0]}: {e.strerror or e}",
                             hint="install vLLM or set guard.vllm / VLLMGUARD_VLLM_BIN",
                             exit_code=ExitCode.PREFLIGHT_FAILED) from None
        tracker.claim = child.claim
        self.journal.registry_update(keeper_pid=child.pid)
        try:
            return self._poll(attempt, child, tracker, env)
        finally:
            attempt.phases = tracker.phases()  # however the attempt ended

    def _poll(self, attempt: Attempt, child: Child, tracker: PhaseTracker, env: Mapping[str, str]) -> Child | None:
        """Until vLLM is ready, has failed, has run past the start-up timeout, or a stop was asked for."""
        ctx = self.ctx
        timeout = float(attempt.profile.setting("startup-timeout"))
        start = ctx.clock()
        last_beat = start
        stall = StallWatch(ctx, attempt.profile.model, tracker.detector, self.hang_probes)
        while True:
            if ctx.stop_signal is not None:
                ctx.status.message(f"stopping vLLM during start-up ({tracker.stage_name}, signal "
                                   f"{process.signal_name(ctx.stop_signal)}): SIGTERM to all its processes")
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "stopped"
                return None
            code = child.poll()
            if code is not None:
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "failed"
                attempt.diagnosis = classify("\n".join(child.tail), exit_status=code)
                return None
            url = attempt.plan.health_url
            # Only the launch's own socket counts (ownership.py): a poll answered by another server is a
            # port taken, never ready. A connect that nobody accepts is simply "not yet".
            ours = ctx.port.ours(url, child.pid)
            if not ours and ctx.port.accepts(url) and not ctx.port.ours(url, child.pid):
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "failed"
                attempt.diagnosis = port_taken(url, ctx.port.holder(url))
                ctx.status.message(attempt.diagnosis.evidence[0])
                return None
            if ours and ctx.ready(url):
                tracker.mark("health")
                if attempt.profile.setting("first-request") and not self.first_request.passes(attempt, child, env):
                    return None
                if attempt.first_request:
                    tracker.mark("first_request")
                child.mark_ready()
                attempt.outcome = "ready"
                attempt.reported = {**reported(list(child.tail)),
                                    "time_to_ready_s": round(ctx.clock() - attempt.started_mono, 1)}
                return child
            now_s = ctx.clock()
            if now_s - start > timeout:
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "failed"
                attempt.diagnosis = Diagnosis(
                    "startup_timeout", tracker.stage, {"startup_timeout_s": timeout},
                    tuple(list(child.tail)[-3:]))
                return None
            hung = stall.look(now_s)
            if hung is not None:  # alive and not moving: record where it is stuck, then stop it (issue 24)
                ctx.status.message(f"no progress for {hung.idle_s:g}s ({tracker.stage_name}): reading the stacks of "
                                   "vLLM's processes, then stopping it")
                attempt.diagnosis, attempt.hang = stall.hung(child.pid, hung, self.journal.stacks_path(attempt))
                for line in stall_summary(attempt.hang):
                    ctx.status.message(line)
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "failed"
                return None
            if now_s - last_beat >= HEARTBEAT_S:
                tracker.heartbeat()
                last_beat = now_s
            self.ender.reap(child)
            ctx.wait(HEALTH_POLL_S)

    def recheck_free_memory(self, profile: Profile) -> Diagnosis | None:
        """Under the lock, look again: another start may have taken the memory since preflight."""
        ctx = self.ctx
        if ctx.gpu_probe is None:
            return None
        util = float(self.relax.effective(profile, "gpu_memory_utilization"))
        wanted = {g.uuid for g in ctx.gpus}
        for g in ctx.gpu_probe():
            if g.uuid in wanted and g.memory_total_bytes and g.memory_free_bytes is not None:
                need = math.ceil(g.memory_total_bytes * util)
                if g.memory_free_bytes < need:
                    gib = 2**30
                    return Diagnosis(
                        "gpu_busy", BEFORE_START,
                        {"free_gib": round(g.memory_free_bytes / gib, 2), "total_gib": round(g.memory_total_bytes / gib,
                                                                                              2),
                         "utilization": util, "requested_gib": round(need / gib, 2)},
                        (f"re-check under the launch lock: {ctx.gpu_label(g)} has {g.memory_free_bytes / gib:.2f} GiB "
                         f"free, utilization {util} needs {need / gib:.2f} GiB",))
        return None

    def wait_for_gpu(self, profile: Profile) -> bool:
        """gpu_busy with no lower utilization allowed: wait for memory to free up, bounded; then retry."""
        ctx = self.ctx
        limit = float(profile.ladder_setting("wait-for-gpu"))
        interval = float(profile.ladder_setting("gpu-poll-interval"))
        ctx.status.message(f"waiting up to {limit:g}s for the GPU to free up")
        wait = Wait(ctx, "GPU memory to free up", limit)
        try:
            deadline = ctx.clock() + limit
            while ctx.clock() < deadline:
                wait.beat(f" (up to {duration_text(limit)})")
                if ctx.stop_signal is not None:
                    return False
                if ctx.gpu_probe is not None and self.recheck_free_memory(profile) is None:
                    return True
                if ctx.gpu_probe is None:  # a snapshot cannot be re-read: wait one interval, then try
                    ctx.wait(interval)
                    return ctx.stop_signal is None
                ctx.wait(interval)
            return ctx.stop_signal is None
        finally:
            self.waited_before.append(wait.record())


def attempt_label(number: int, total: int, changed: dict[str, list[Any]]) -> str:
    what = ", ".join(f"{k} {new} (relaxed from {old})" for k, (old, new) in changed.items())
    return f"attempt {number}/{total}" + (f": {what}" if what else "")
