"""Start vLLM, watch it until ready, climb the ladder on failed starts, then supervise until it stops.

One attempt: take the per-GPU locks, re-check free memory (live machines only),
spawn vLLM in its own session, relay its output, poll /health. A failure before
ready stops the whole group, is classified, and the ladder picks the one change
for the next start. After ready the guard forwards stop signals and exits with
the documented codes. Every attempt is one line in the attempt log.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllm_guard.diagnose import ladder
from vllm_guard.diagnose.classify import Diagnosis, classify
from vllm_guard.diagnose.knowledge import CPU_STAGE_NAMES, STAGE_NAMES
from vllm_guard.diagnose.markers import BEFORE_START, PHASES, STAGES, phases_of, rendezvous_file, reported, stage_of
from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.machine import Facts, Gpu
from vllm_guard.launch import first_request, health, lock, process
from vllm_guard.launch.lock import LaunchLocks
from vllm_guard.launch.notify import Notifier
from vllm_guard.launch.plan import LaunchPlan, build_plan
from vllm_guard.preflight.run import Preflight
from vllm_guard.probes.select import describe_choice, select_gpus
from vllm_guard.profile.model import Profile, world_size
from vllm_guard.profile.settings import AUTO_GPUS
from vllm_guard.redact import mask_url_credentials, printable, redact_text
from vllm_guard.report.live import LaunchStatus
from vllm_guard.state import attempts as attempt_log
from vllm_guard.state import registry, remember

HEALTH_POLL_S = 0.5
HEARTBEAT_S = 10.0
# systemd: while vLLM keeps writing (tqdm bars, log lines) the start is progressing; extend
# TimeoutStartSec= by EXTEND_S each heartbeat, but only within PROGRESS_WINDOW_S of the last line.
EXTEND_S = 60.0
PROGRESS_WINDOW_S = 300.0
MEMORY_RELEASE_TIMEOUT_S = 60.0
# ladder.remember: a profile whose max-model-len is at most this share of the predicted fit is tried as written.
FIT_MARGIN = 0.9

# The vLLM options the ladder may change, by their profile spelling and the profile's dest.
LADDER_DESTS = {"max-model-len": "max_model_len", "gpu-memory-utilization": "gpu_memory_utilization",
                "max-num-batched-tokens": "max_num_batched_tokens", "max-num-seqs": "max_num_seqs",
                "enforce-eager": "enforce_eager", "kv-cache-dtype": "kv_cache_dtype"}
# Where the preflight's memory estimate holds vLLM's resolved default for an option.
# Not the utilization: on a shared GPU the preflight estimates at what is free (checks.preflight), while vLLM
# runs with its own default unless told otherwise.
ESTIMATE_ATTRS = {"max_model_len": "max_model_len", "max_num_batched_tokens": "max_num_batched_tokens",
                  "max_num_seqs": "max_num_seqs"}


@dataclass
class Attempt:
    number: int
    plan: LaunchPlan
    profile: Profile
    changed: dict[str, list[Any]]
    started_at: str = ""
    started_mono: float = 0.0
    outcome: str = ""  # ready | failed | stopped
    exit_status: int | None = None
    diagnosis: Diagnosis | None = None
    step: ladder.Step | ladder.Stop | None = None
    reported: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    phases: dict[str, float | None] = field(default_factory=dict)  # seconds from spawn to the end of each
    first_request: list[dict[str, Any]] = field(default_factory=list)
    remembered: dict[str, Any] = field(default_factory=dict)  # values this start took from ladder.remember


class Supervisor:
    """Runs the ladder and then supervises; every collaborator has a real default and can be replaced."""

    def __init__(
        self,
        pre: Preflight,
        facts: Facts,
        *,
        environ: Mapping[str, str],
        status: LaunchStatus,
        forced: bool = False,
        spawner: Callable[..., process.Child] = process.spawn,
        ready: Callable[[str], bool] = health.check,
        gpu_probe: Callable[[], tuple[Gpu, ...]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        notifier: Notifier | None = None,
        launch_locks: Callable[[Profile], LaunchLocks] | None = None,
        gpu_label: Callable[[Gpu], str] = lambda g: f"GPU {g.index}",
    ) -> None:
        self.pre = pre
        self.facts = facts
        self.environ = environ
        self.status = status
        self.forced = forced
        self.spawner = spawner
        self.ready = ready
        self.gpu_probe = gpu_probe  # None under --machine: no live re-checks
        self.clock = clock
        self.notifier = notifier or Notifier(environ)
        self.launch_locks = launch_locks  # None: this machine's GPU locks; a Ray cluster's: one actor per node
        self.gpu_label = gpu_label  # how a GPU is named in messages ("node b GPU 1" on a cluster)
        self.stop_signal: int | None = None
        self._wake = threading.Event()
        profile = pre.profile
        self.log_path = attempt_log.log_path(profile.setting("attempt-log"), profile.name, environ)
        self.attempt_log = attempt_log.Writer(self.log_path, on_error=self._attempt_log_failed)
        self.lock_dir = lock.lock_dir(profile.setting("lock-dir"), environ)
        self.history: list[Attempt] = []
        # guard.gpus = "auto": chosen for real under the launch locks of the first attempt, then kept.
        self.choose_gpus = profile.setting("gpus") == AUTO_GPUS
        self.gpu_choice: str | None = None
        self.registration: registry.Registration | None = None

    # --- signals -------------------------------------------------------------------

    def _on_signal(self, signum: int) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
            self.notifier.stopping(f"stopping: signal {signum}")
        self._wake.set()

    def _exit_for_signal(self) -> int:
        return int(ExitCode.INTERRUPTED if self.stop_signal == process.SIGINT else ExitCode.TERMINATED)

    # --- the ladder ------------------------------------------------------------------

    def run(self) -> int:
        process.set_child_subreaper()
        restore = process.on_stop_signals(self._on_signal)
        self._register()
        try:
            return self._climb()
        finally:
            if self.registration is not None:
                self.registration.remove()
            restore()
            self.status.close()

    def _register(self) -> None:
        """The entry `vllm-guard ps` reads (registry.py); a guard that cannot write it still serves."""
        from vllm_guard.probes.host import process_started

        profile = self.pre.profile
        try:
            lock.prepare_dir(self.lock_dir)
        except GuardError as e:
            self.status.message(f"not listed by `vllm-guard ps`: {e.message}")
            return
        entry = registry.Entry(
            guard_pid=os.getpid(), guard_started=process_started(os.getpid()),
            profile=str(profile.path) if profile.path else None, model=profile.model, state="starting",
            since=_now(), attempt=1, gpus=tuple(g.index for g in self._gpus()),
            port=None if profile.value("uds") else profile.value("port") or 8000, uds=profile.value("uds"))
        self.registration = registry.Registration(self.lock_dir, entry, on_error=self.status.message)

    def _registry_update(self, **changes: Any) -> None:
        if self.registration is not None:
            self.registration.update(**changes)

    def _climb(self) -> int:
        original = self.pre.profile
        profile, remembered = self._remembered(original)
        max_attempts = int(profile.ladder_setting("max-attempts"))
        guard_set_kv = False
        unchanged = 0
        previous: Profile | None = original if remembered else None
        transient: set[str] = set()  # parameters changed for gpu_busy: about that moment, never remembered
        for number in range(1, max_attempts + 1):
            plan = build_plan(profile, environ=self.environ, cuda_visible_devices=self.facts.cuda_visible_devices)
            attempt = Attempt(number, plan, profile, self._changed(previous, profile) if previous else {})
            attempt.remembered = remembered if number == 1 else {}
            child = self._start(attempt, max_attempts)
            if attempt.outcome == "ready" and child is not None:
                self._record(attempt)
                self._announce_ready(attempt, original, child)
                self._remember(original, attempt, transient)
                return self._serve(child, attempt)
            self._record_failure_step(attempt, guard_set_kv, unchanged)
            # A stop requested while the attempt failed (vLLM died of the same SIGTERM, a GPU recheck ran)
            # is a stop: 143/130, never START_FAILED.
            if attempt.outcome == "stopped" or self.stop_signal is not None:
                return self._exit_for_signal()
            step = attempt.step
            if isinstance(step, ladder.Stop) or step is None:
                self.status.attempts_table(self.history, exhausted=False)
                return int(ExitCode.START_FAILED)
            if number == max_attempts:
                break
            previous = profile
            if step.param is None:
                unchanged += 1
                if step.wait_for_gpu and not self._wait_for_gpu(profile):
                    return self._exit_for_signal()
            else:
                if step.param == "kv-cache-dtype" and step.value != "auto":
                    guard_set_kv = True
                if attempt.diagnosis is not None and attempt.diagnosis.cls == "gpu_busy":
                    transient.add(step.param)
                profile = profile.with_value(LADDER_DESTS[step.param], step.value)
        self.status.attempts_table(self.history, exhausted=True)
        return int(ExitCode.START_FAILED)

    # --- ladder.remember --------------------------------------------------------------------

    def _remember_key(self, profile: Profile) -> tuple[Path, remember.Key]:
        build = self.facts.vllm_build
        # guard.gpus = "auto" may take other GPUs at each start: what was learnt holds for GPUs of the same kind.
        gpus = [g.uuid for g in self._gpus()] if profile.setting("gpus") != AUTO_GPUS else \
            ["{}|{}|{}".format(*_kind(g)) for g in self._gpus()]
        key = remember.make_key(profile.sha256, gpus, build.version if build else None)
        return remember.path_for(profile.name, self.environ), key

    def _remembered(self, original: Profile) -> tuple[Profile, dict[str, Any]]:
        """The profile to start with: as written, or with the relaxations that worked last time."""
        if not original.ladder_setting("remember"):
            return original, {}
        path, key = self._remember_key(original)
        kept = remember.load(path, key)
        if kept is None:
            return original, {}
        values = kept.values
        est = self.pre.estimate
        fit_now = est.max_fitting_model_len if est is not None else None
        wanted = self._effective(original, "max_model_len")
        # The prediction was too optimistic once already (that is why the ladder relaxed): only a clearly
        # better one now (more memory free than then) earns the profile as written another try.
        better = fit_now is not None and (kept.predicted_fit is None or fit_now >= kept.predicted_fit / FIT_MARGIN)
        if set(values) <= {"max-model-len"} and better and isinstance(wanted, int) and fit_now and \
                wanted <= FIT_MARGIN * fit_now:
            self.status.message(f"remembered {values} from a relaxed start, but the profile as written is now "
                                f"predicted to fit with a clear margin (max-model-len {wanted} of {fit_now}): "
                                "trying it as written first")
            return original, {}
        profile = original
        for name, value in values.items():
            if name in LADDER_DESTS:
                profile = profile.with_value(LADDER_DESTS[name], value)
        what = ", ".join(f"{k} {v}" for k, v in values.items())
        self.status.message(f"STARTING FROM REMEMBERED RELAXATIONS: {what} (a relaxed start of this profile on "
                            f"these GPUs with this vLLM needed them; `vllm-guard attempts --forget "
                            f"{original.path or original.name}` drops them)", style="bold yellow")
        self.notifier.status(f"starting from remembered relaxations: {what}")
        return profile, dict(values)

    def _remember(self, original: Profile, attempt: Attempt, transient: set[str]) -> None:
        """After a ready start: keep its relaxations for the next start, or forget them if none were needed."""
        if not original.ladder_setting("remember"):
            return
        path, key = self._remember_key(original)
        relaxed = {name: new for name, (_, new) in self._changed(original, attempt.profile).items()
                   if name not in transient}
        if not relaxed:
            remember.forget(path)
            return
        est = self.pre.estimate
        error = remember.save(path, key, relaxed, _now(), est.max_fitting_model_len if est is not None else None)
        if error:
            self.status.message(error)
        else:
            self.status.message("remembered for the next start of this profile: "
                                + ", ".join(f"{k} {v}" for k, v in relaxed.items()))

    def _record_failure_step(self, attempt: Attempt, guard_set_kv: bool, unchanged: int) -> None:
        if attempt.outcome == "failed" and attempt.diagnosis is not None:
            attempt.step = ladder.next_step(
                attempt.diagnosis, self._settings(attempt), self._limits(attempt.profile),
                fp8_supported=self._fp8_supported(), guard_set_kv_dtype=guard_set_kv, unchanged_retries=unchanged)
            attempt.step = self._within_limits(attempt.step, attempt.profile)
        self._record(attempt)

    def _within_limits(self, step: ladder.Step | ladder.Stop, profile: Profile) -> ladder.Step | ladder.Stop:
        """Utilization may be raised only as far as the GPUs have memory free right now."""
        if isinstance(step, ladder.Step) and step.param == "gpu-memory-utilization":
            current = self._effective(profile, "gpu_memory_utilization")
            if float(step.value) > current:
                wanted = {g.uuid for g in self._gpus()}
                # After the failed attempt has let go of its memory: look again where the machine is live.
                gpus = [g for g in self.gpu_probe() if g.uuid in wanted] if self.gpu_probe else self._gpus()
                if not gpus:  # a CPU build, or GPUs not known: nothing says the memory is free
                    return self._after_utilization(profile)
                free = min((g.memory_free_bytes or 0) / (g.memory_total_bytes or 1) for g in gpus)
                allowed = math.floor((free - 0.02) * 100) / 100
                if allowed <= current:
                    return self._after_utilization(profile)
                return ladder.Step(step.param, min(float(step.value), allowed), step.reason)
        return step

    def _after_utilization(self, profile: Profile) -> ladder.Step | ladder.Stop:
        limits = self._limits(profile)
        if limits.allow_fp8_kv and profile.value("kv_cache_dtype") in (None, "auto") and self._fp8_supported():
            return ladder.Step("kv-cache-dtype", "fp8", "halve the KV cache per token (native on this GPU)")
        return ladder.Stop("no shorter max-model-len is accepted, a higher utilization finds no GPU memory free "
                           "(or no GPU to check), and an fp8 KV cache is not available or not allowed")

    def _settings(self, attempt: Attempt) -> ladder.Settings:
        p = attempt.profile
        ctx = attempt.diagnosis.context if attempt.diagnosis else {}
        return ladder.Settings(
            max_model_len=self._effective(p, "max_model_len", ctx),
            gpu_memory_utilization=self._effective(p, "gpu_memory_utilization", ctx),
            max_num_batched_tokens=self._effective(p, "max_num_batched_tokens", ctx),
            max_num_seqs=self._effective(p, "max_num_seqs", ctx),
            enforce_eager=bool(p.value("enforce_eager")),
            kv_cache_dtype=str(p.value("kv_cache_dtype") or "auto"),
            enable_chunked_prefill=p.value("enable_chunked_prefill"),
            kv_cache_memory_bytes=p.value("kv_cache_memory_bytes") or None,
        )

    def _effective(self, profile: Profile, dest: str, log_context: Mapping[str, Any] | None = None) -> Any:
        """The value vLLM really runs with: the profile's, else what vLLM's log said, else the
        preflight's resolution of vLLM's defaults, else the option table's default."""
        if profile.is_set(dest):
            return profile.value(dest)
        if log_context and log_context.get(dest) is not None:
            return log_context[dest]
        attr = ESTIMATE_ATTRS.get(dest)
        if self.pre.estimate is not None and attr is not None:
            return getattr(self.pre.estimate, attr)
        return profile.value(dest)

    @staticmethod
    def _limits(profile: Profile) -> ladder.Limits:
        s = profile.ladder_setting
        return ladder.Limits(
            min_max_model_len=int(s("min-max-model-len")),
            min_gpu_memory_utilization=float(s("min-gpu-memory-utilization")),
            max_gpu_memory_utilization=float(s("max-gpu-memory-utilization")),
            allow_lower_utilization=bool(s("allow-lower-utilization")),
            allow_fp8_kv=bool(s("allow-fp8-kv-cache")),
            allow_enforce_eager=bool(s("allow-enforce-eager")),
        )

    def _fp8_supported(self) -> bool | None:
        caps = [g.compute_capability for g in self._gpus() if g.compute_capability]
        return min(caps) >= (8, 9) if caps else None

    def _gpus(self) -> tuple[Gpu, ...]:
        return self.facts.gpus[: world_size(self.pre.profile)]

    # --- one attempt -------------------------------------------------------------------

    def _start(self, attempt: Attempt, max_attempts: int) -> process.Child | None:
        profile = attempt.profile
        attempt.label = _attempt_label(attempt.number, max_attempts, attempt.changed)
        self.status.attempt_started(attempt.label)
        self.notifier.status(f"{attempt.label}: starting")
        self.notifier.extend_timeout(EXTEND_S)
        locks = self._take_locks(attempt)
        if locks is None:
            attempt.outcome = "stopped"
            return None
        self._registry_update(state="starting", since=_now(), attempt=attempt.number,
                              gpus=tuple(g.index for g in self._gpus()), keeper_pid=None, vllm_pid=None)
        try:
            attempt.started_at = _now()
            attempt.started_mono = self.clock()
            busy = self._recheck_free_memory(profile)
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
        holder = {"profile": str(attempt.profile.path or attempt.profile.model), "host": socket.gethostname()}
        stop = lambda: self.stop_signal is not None  # noqa: E731
        if self.launch_locks is not None or not self.choose_gpus:
            locks: LaunchLocks = (self.launch_locks(attempt.profile) if self.launch_locks is not None else
                                  lock.GpuLocks(self.lock_dir, [g.uuid for g in self._gpus()], holder))
            ok = locks.acquire(on_wait=lambda uuid, who: self.status.message(
                f"waiting for the launch lock of GPU {uuid}, held by {who}"), should_stop=stop)
            return locks if ok else None
        seen: list[Gpu] = []
        # Only GPUs of the kind the preflight judged: on a box of mixed GPUs, another kind could fail a check
        # (weights, KV fit, dtype) that the preflight never ran on it. Waiting for the right kind is safer.
        judged = {_kind(g) for g in self._gpus()}

        def ranked() -> list[str]:
            gpus = self.gpu_probe() if self.gpu_probe is not None else self.facts.machine.gpus
            seen[:] = select_gpus(gpus, None, self.environ.get("CUDA_VISIBLE_DEVICES"))[0]
            fit = [g for g in seen if not judged or _kind(g) in judged]
            return [g.uuid for g in sorted(fit, key=lambda g: g.idleness)]

        taken = lock.GpuLocks.idlest(self.lock_dir, ranked, world_size(attempt.profile), holder,
                                     on_wait=lambda why: self.status.message(f"waiting for GPUs: {why}"),
                                     should_stop=stop)
        if taken is None:
            return None
        chosen = tuple(sorted((g for g in seen if g.uuid in taken.uuids), key=lambda g: g.index))
        visible = ",".join(str(g.index) for g in chosen)
        self.gpu_choice = describe_choice(chosen, seen)
        if visible != self.facts.cuda_visible_devices:
            self.status.message(f"GPU(s) {visible} taken instead of {self.facts.cuda_visible_devices} at preflight: "
                                "another start took those meanwhile")
        self.status.message(self.gpu_choice)
        self.facts = replace(self.facts, gpus=chosen, cuda_visible_devices=visible)
        attempt.plan = build_plan(attempt.profile, environ=self.environ, cuda_visible_devices=visible)
        self.choose_gpus = False  # the ladder's later attempts keep these GPUs: vLLM's numbers are theirs
        return taken

    def _launch(self, attempt: Attempt) -> process.Child | None:
        plan = attempt.plan
        env = plan.environment(self.environ)
        names = CPU_STAGE_NAMES if self.facts.vllm_build is not None and self.facts.vllm_build.is_cpu else STAGE_NAMES
        tracker = _PhaseTracker(self.status, self.notifier, attempt.label, self.clock, names)
        try:
            child = self.spawner(plan.argv, env, tracker.sink(self.status.relay),
                                 grace_s=float(attempt.profile.setting("stop-timeout")), on_event=self.status.message,
                                 on_progress=self.status.progress)
        except OSError as e:
            raise GuardError(f"cannot start {plan.argv[0]}: {e.strerror or e}",
                             hint="install vLLM or set guard.vllm / VLLMGUARD_VLLM_BIN",
                             exit_code=ExitCode.PREFLIGHT_FAILED) from None
        tracker.claim = child.claim
        self._registry_update(keeper_pid=child.pid)
        timeout = float(attempt.profile.setting("startup-timeout"))
        start = self.clock()
        last_beat = start
        try:
            while True:
                if self.stop_signal is not None:
                    self.status.message(f"stopping vLLM during start-up ({tracker.stage_name}, signal "
                                        f"{process.signal_name(self.stop_signal)}): SIGTERM to all its processes")
                    attempt.exit_status = self._stop_child(child)
                    attempt.outcome = "stopped"
                    return None
                code = child.poll()
                if code is not None:
                    attempt.exit_status = self._stop_child(child)
                    attempt.outcome = "failed"
                    attempt.diagnosis = classify("\n".join(child.tail), exit_status=code)
                    return None
                if self.ready(plan.health_url):
                    tracker.mark("health")
                    if attempt.profile.setting("first-request") and not self._first_request(attempt, child, env):
                            return None
                    if attempt.first_request:
                        tracker.mark("first_request")
                    child.mark_ready()
                    attempt.outcome = "ready"
                    attempt.reported = {**reported(list(child.tail)),
                                        "time_to_ready_s": round(self.clock() - start, 1)}
                    return child
                now = self.clock()
                if now - start > timeout:
                    attempt.exit_status = self._stop_child(child)
                    attempt.outcome = "failed"
                    attempt.diagnosis = Diagnosis(
                        "startup_timeout", tracker.stage, {"startup_timeout_s": timeout},
                        tuple(list(child.tail)[-3:]))
                    return None
                if now - last_beat >= HEARTBEAT_S:
                    tracker.heartbeat()
                    last_beat = now
                self._reap(child)
                self._wake.wait(HEALTH_POLL_S)
        finally:
            attempt.phases = tracker.phases()  # however the attempt ended

    def _first_request(self, attempt: Attempt, child: process.Child, env: Mapping[str, str]) -> bool:
        """Ask vLLM once, as a client would, before calling it ready; False when the attempt ends here.

        The request runs in a thread so that a stop signal, or vLLM dying meanwhile, is acted on at once.
        """
        profile = attempt.profile
        api_key = env.get("VLLM_API_KEY") or _first(profile.value("api_key"))
        timeout = float(profile.setting("first-request-timeout"))
        base = attempt.plan.health_url.rsplit("/health", 1)[0]
        results: list[first_request.Result] = []
        thread = threading.Thread(target=lambda: results.extend(first_request.ask(
            base, list(child.tail), api_key=api_key, timeout_s=timeout)), daemon=True)
        self.status.message("vLLM answers /health; sending a first request")
        self.notifier.status(f"{attempt.label}: first request")
        thread.start()
        while thread.is_alive():
            if self.stop_signal is not None:
                attempt.exit_status = self._stop_child(child)
                attempt.outcome = "stopped"
                return False
            if child.poll() is not None:
                break
            thread.join(HEALTH_POLL_S)
        thread.join(timeout + 5)
        attempt.first_request = [r.to_dict() for r in results]
        code = child.poll()
        if code is not None:  # vLLM died on its first request: its log says why
            attempt.exit_status = self._stop_child(child)
            attempt.outcome = "failed"
            attempt.diagnosis = classify("\n".join(child.tail), exit_status=code)
            return False
        if results and all(r.ok for r in results):
            return True
        attempt.diagnosis = first_request.diagnose(results, list(child.tail))
        self.status.message(f"the first request failed: {attempt.diagnosis.evidence[0]}")
        attempt.exit_status = self._stop_child(child)
        attempt.outcome = "failed"
        return False

    def _reap(self, child: process.Child) -> None:
        """Collect adopted children that have exited: as a subreaper (or PID 1 in a container) it is our job."""
        from vllm_guard.probes.host import zombie_children

        zombies = zombie_children(exclude=(child.pid,))
        if zombies:
            process.reap(zombies)

    def _stop_child(self, child: process.Child) -> int:
        grace = float(self.pre.profile.setting("stop-timeout"))
        code = child.stop(grace)
        from vllm_guard.probes.host import adopted_children

        # Only when the keeper itself was killed are vLLM's processes re-parented to the guard; an engine
        # comes to us only once its API server is gone, hence a second look.
        for _ in range(3):
            orphans = adopted_children(exclude=(child.pid,))
            if not orphans:
                break
            process.stop_orphans(orphans)
        report = child.stop_report
        if self.stop_signal is not None and report.get("seconds") is not None:
            self.status.message(f"vLLM stopped in {report['seconds']:g}s")
        if report.get("removed"):
            self.status.message(f"removed {len(report['removed'])} file(s) the stopped vLLM left: "
                                + ", ".join(report["removed"]))
        self._wait_memory_released()
        return code

    def _recheck_free_memory(self, profile: Profile) -> Diagnosis | None:
        """Under the lock, look again: another start may have taken the memory since preflight."""
        if self.gpu_probe is None:
            return None
        util = float(self._effective(profile, "gpu_memory_utilization"))
        wanted = {g.uuid for g in self._gpus()}
        for g in self.gpu_probe():
            if g.uuid in wanted and g.memory_total_bytes and g.memory_free_bytes is not None:
                need = math.ceil(g.memory_total_bytes * util)
                if g.memory_free_bytes < need:
                    gib = 2**30
                    return Diagnosis(
                        "gpu_busy", BEFORE_START,
                        {"free_gib": round(g.memory_free_bytes / gib, 2), "total_gib": round(g.memory_total_bytes / gib,
                                                                                              2),
                         "utilization": util, "requested_gib": round(need / gib, 2)},
                        (f"re-check under the launch lock: {self.gpu_label(g)} has {g.memory_free_bytes / gib:.2f} GiB "
                         f"free, utilization {util} needs {need / gib:.2f} GiB",))
        return None

    def _wait_memory_released(self) -> None:
        """After a failed attempt, wait (bounded) until its GPU memory is back before the next start."""
        if self.gpu_probe is None:
            return
        before = {g.uuid: g.memory_free_bytes or 0 for g in self._gpus()}
        deadline = self.clock() + MEMORY_RELEASE_TIMEOUT_S
        while self.clock() < deadline and self.stop_signal is None:
            now = {g.uuid: g.memory_free_bytes or 0 for g in self.gpu_probe() if g.uuid in before}
            # A GPU the probe did not report (a Ray node that did not answer in time) is unknown: not waited for.
            if all(now[u] >= 0.95 * free for u, free in before.items() if u in now):
                return
            self._wake.wait(1.0)

    def _wait_for_gpu(self, profile: Profile) -> bool:
        """gpu_busy with no lower utilization allowed: wait for memory to free up, bounded; then retry."""
        limit = float(profile.ladder_setting("wait-for-gpu"))
        interval = float(profile.ladder_setting("gpu-poll-interval"))
        self.status.message(f"waiting up to {limit:g}s for the GPU to free up")
        deadline = self.clock() + limit
        while self.clock() < deadline:
            if self.stop_signal is not None:
                return False
            if self.gpu_probe is not None and self._recheck_free_memory(profile) is None:
                return True
            if self.gpu_probe is None:  # a snapshot cannot be re-read: wait one interval, then try
                self._wake.wait(interval)
                return self.stop_signal is None
            self._wake.wait(interval)
        return self.stop_signal is None

    def _changed(self, before: Profile, after: Profile) -> dict[str, list[Any]]:
        """The ladder's parameters that differ, with the values vLLM really used (defaults resolved)."""
        out = {}
        for name, dest in LADDER_DESTS.items():
            old, new = self._effective(before, dest), self._effective(after, dest)
            if old != new:
                out[name] = [old, new]
        return out

    # --- after ready ----------------------------------------------------------------------

    def _announce_ready(self, attempt: Attempt, original: Profile, child: process.Child) -> None:
        relaxed = self._changed(original, attempt.profile)
        self._registry_update(state="relaxed" if relaxed else "ready", since=_now(), vllm_pid=child.vllm_pid)
        self.status.ready(attempt.number, attempt.reported, relaxed,
                          str(original.path) if original.path else None, attempt.phases,
                          url=attempt.plan.health_url.removesuffix("/health"),
                          set_by_user=frozenset(k for k, dest in LADDER_DESTS.items() if original.is_set(dest)))
        p = attempt.profile
        where = p.value("uds") or f":{p.value('port') or 8000}"
        text = f"ready: {p.name} on {where}, max-model-len {self._effective(p, 'max_model_len')}"
        if attempt.reported.get("kv_cache_tokens"):
            text += f", KV {attempt.reported['kv_cache_tokens']:,} tokens"
        if relaxed:
            text += " (relaxed: " + ", ".join(f"{k} {new}" for k, (_, new) in relaxed.items()) + ")"
        self.notifier.ready(text)

    def _serve(self, child: process.Child, attempt: Attempt) -> int:
        interval = self.notifier.watchdog_interval_s
        every = float(attempt.profile.setting("health-interval"))
        if interval is not None:
            every = min(every, interval / 2)  # systemd's watchdog wants a ping twice per interval
        allowed = max(int(attempt.profile.setting("health-failures")), 2)  # never on one slow answer
        next_look = self.clock() + every
        misses = 0
        while True:
            self._reap(child)
            if self.clock() >= next_look:
                # One look at /health serves both: the stall rule, and WATCHDOG=1 only while vLLM answers
                # (a hung server stops the pings and systemd acts).
                if self.ready(attempt.plan.health_url):
                    misses = 0
                    if interval is not None:
                        self.notifier.watchdog()
                else:
                    misses += 1
                    self.status.message(f"vLLM did not answer /health ({misses} of {allowed} in a row)")
                next_look = self.clock() + every
            if misses >= allowed and self.stop_signal is None:
                why = f"/health failed {misses} times in a row, {every:g}s apart"
                self.status.message(f"vLLM stalled after it was ready: {why}; stopping it (exit 6, for a restart)")
                self.notifier.status(f"stalled: {why}")
                code = self._stop_child(child)
                self._record_end(attempt, "stalled", code, reason=why)
                return int(ExitCode.CHILD_EXITED)
            if self.stop_signal is not None:
                self.status.message(f"stopping vLLM (signal {process.signal_name(self.stop_signal)}): SIGTERM, "
                                    f"SIGKILL after {self.pre.profile.setting('stop-timeout')}s")
                code = self._stop_child(child)
                self._record_end(attempt, "stopped", code)
                return self._exit_for_signal()
            if child.poll() is not None:
                status = self._stop_child(child)
                self.status.message(f"vLLM exited on its own after it was ready (status {status})")
                self._point_to_explain(child, status)
                self._record_end(attempt, "exited", status)
                return int(ExitCode.CHILD_EXITED)
            self._wake.wait(max(min(next_look - self.clock(), 1.0), 0.05))

    def _point_to_explain(self, child: process.Child, status: int | None) -> None:
        """Exit 6: vLLM's last error lines, and where the whole diagnosis is."""
        diagnosis = classify("\n".join(child.tail), exit_status=status)
        for line in diagnosis.evidence[-5:]:
            # vLLM's output: no control characters, no credentials of a URL.
            self.status.message(f"  {printable(mask_url_credentials(line), 500)}", style="")
        self.status.message(f"{diagnosis.cls}: `vllm-guard explain --unit UNIT` (or `vllm-guard explain LOGFILE`) "
                            "diagnoses the whole log", style="")

    # --- the attempt log -----------------------------------------------------------------------

    def _record(self, attempt: Attempt) -> None:
        self.history.append(attempt)
        d = attempt.diagnosis
        secrets = attempt.plan.secrets()
        record = {
            "profile": str(attempt.profile.path) if attempt.profile.path else None,
            "profile_sha256": attempt.profile.sha256,
            "model": attempt.profile.model,
            # Which vLLM will run and which option table validated its command line (issue 11).
            "vllm": attempt.profile.table_choice.to_dict() if attempt.profile.table_choice else None,
            "attempt": attempt.number,
            "started_at": attempt.started_at or _now(),
            "ended_at": _now(),
            "duration_s": round(self.clock() - attempt.started_mono, 1) if attempt.started_mono else 0.0,
            "argv": attempt.plan.redacted_argv(),
            "changed": attempt.changed,
            "gpus": [g.index for g in self._gpus()],
            "gpu_choice": self.gpu_choice,
            "preflight": ("forced" if self.forced else self.pre.verdict),
            "outcome": attempt.outcome,
            "failure": None if d is None else {
                "class": d.cls, "stage": d.stage, "numbers": d.numbers,
                "evidence": [redact_text(e, secrets) for e in d.evidence]},
            "exit": attempt.exit_status,
            "reported": attempt.reported or None,
            "phases": attempt.phases or None,
            "first_request": attempt.first_request or None,
            "remembered": attempt.remembered or None,
            "next": attempt.step.to_dict() if isinstance(attempt.step, ladder.Step) else (
                {"stop": attempt.step.reason} if isinstance(attempt.step, ladder.Stop) else None),
        }
        self.attempt_log.append(record)

    def _attempt_log_failed(self, text: str) -> None:
        self.status.message(text, style="bold yellow")
        self.notifier.status(text)

    def _record_end(self, attempt: Attempt, outcome: str, code: int | None, reason: str | None = None) -> None:
        self.attempt_log.append({
            "profile": str(attempt.profile.path) if attempt.profile.path else None,
            "profile_sha256": attempt.profile.sha256, "model": attempt.profile.model,
            "attempt": attempt.number, "phase": "serving", "ended_at": _now(), "outcome": outcome,
            "exit": code, "signal": self.stop_signal, **({"reason": reason} if reason else {}),
        })


class _PhaseTracker:
    """Follows vLLM's log lines to know the phase and whether it progresses; reports phase changes."""

    def __init__(self, status: LaunchStatus, notifier: Notifier, label: str, clock: Callable[[], float],
                 names: Mapping[str, str] = STAGE_NAMES) -> None:
        self.names = names
        self.claim: Callable[[str], None] | None = None  # hands the keeper vLLM's rendezvous file
        self._phase_times: dict[str, float] = {}
        self.status = status
        self.notifier = notifier
        self.label = label
        self.clock = clock
        self.start = self.last_output = clock()
        self.stage = BEFORE_START

    @property
    def stage_name(self) -> str:
        return self.names.get(self.stage, self.stage)

    def sink(self, relay: process.LineSink) -> process.LineSink:
        def on_line(raw: bytes, stream: str) -> None:
            relay(raw, stream)
            self.last_output = self.clock()
            line = raw.decode(errors="replace")
            if not self._phase_times:
                self.mark("first_line")
            for phase in phases_of(line):
                self.mark(phase)
            if self.claim is not None and "file://" in line:
                path = rendezvous_file(line)
                if path is not None:
                    self.claim(path)
            stage = stage_of(line)
            if stage is not None and STAGES.index(stage) > STAGES.index(self.stage):
                self.stage = stage
                self._report(heartbeat=False)
        return on_line

    def mark(self, phase: str) -> None:
        """The first time a phase ends, in seconds since vLLM was started."""
        self._phase_times.setdefault(phase, round(self.clock() - self.start, 2))

    def phases(self) -> dict[str, float | None]:
        return {name: self._phase_times.get(name) for name in PHASES}

    def heartbeat(self) -> None:
        self._report(heartbeat=True)

    def _report(self, *, heartbeat: bool) -> None:
        text = f"{self.label}: {self.stage_name} ({_duration(self.clock() - self.start)})"
        self.status.phase(text, heartbeat=heartbeat)
        self.notifier.status(text)
        if self.clock() - self.last_output <= PROGRESS_WINDOW_S:
            self.notifier.extend_timeout(EXTEND_S)


def _kind(g: Gpu) -> tuple[str | None, int | None, tuple[int, int] | None]:
    """What the preflight's verdict on a GPU rests on: its model, its memory and its compute capability."""
    return g.name, g.memory_total_bytes, g.compute_capability


def _first(value: Any) -> str | None:
    """The first of an option's values (--api-key takes several)."""
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return None if value is None else str(value)


def _attempt_label(number: int, total: int, changed: dict[str, list[Any]]) -> str:
    what = ", ".join(f"{k} {new} (relaxed from {old})" for k, (old, new) in changed.items())
    return f"attempt {number}/{total}" + (f": {what}" if what else "")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def run_exec(plan: LaunchPlan, environ: Mapping[str, str]) -> None:
    """guard.mode = "exec": after preflight, become vLLM."""
    process.exec_replace(plan.argv, plan.environment(environ))
