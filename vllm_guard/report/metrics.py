"""The prometheus_client doorway: the guard's state as Prometheus text (the endpoint's /metrics).

Imported only when the status endpoint runs (`vllm-guard --help` and `check` never load prometheus_client). A
registry of its own, read from one ``View`` per scrape: nothing global, nothing kept between scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from vllm_guard.report.guardstate import GuardState, View

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _Collector:
    def __init__(self, state: GuardState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        yield from families(self.state.view())


def families(v: View) -> Iterator[Metric]:
    yield CounterMetricFamily("vllm_guard_attempts", "starts of vLLM so far, the first included", value=v.attempts)
    attempt = GaugeMetricFamily("vllm_guard_attempt", "the attempt now running or last run (0: none yet)",
                                value=v.attempt or 0)
    yield attempt
    yield GaugeMetricFamily("vllm_guard_max_attempts", "the ladder's budget of starts ([guard.ladder] max-attempts)",
                            value=v.of)
    stage = GaugeMetricFamily("vllm_guard_state", "1 for where the guard is: preflight, starting, ready, gave_up, "
                              "ended", labels=["state"])
    stage.add_metric([v.stage], 1)
    yield stage
    phase = GaugeMetricFamily("vllm_guard_startup_phase", "1 for the start-up stage vLLM's log shows now",
                              labels=["phase"])
    if v.phase is not None:
        phase.add_metric([v.phase], 1)
    yield phase
    yield GaugeMetricFamily("vllm_guard_attempt_seconds", "seconds since this attempt (or the guard) started",
                            value=v.since_s)
    seconds = GaugeMetricFamily("vllm_guard_startup_phase_seconds", "the last recorded attempt: seconds each "
                                "start-up phase took", labels=["phase"])
    for name, value in v.phase_seconds.items():
        seconds.add_metric([name], value)
    yield seconds
    relaxed = CounterMetricFamily("vllm_guard_relaxations", "starts with a value the ladder relaxed, by parameter",
                                  labels=["parameter"])
    for name, count in v.relaxations.items():
        relaxed.add_metric([name], count)
    yield relaxed
    failures = CounterMetricFamily("vllm_guard_failures", "failed starts, by class", labels=["class"])
    for name, count in v.failures.items():
        failures.add_metric([name], count)
    yield failures
    yield GaugeMetricFamily("vllm_guard_ready", "1 while the guard considers vLLM ready and its /health passes",
                            value=1 if v.serves else 0)
    if v.time_to_ready_s is not None:  # unknown until ready: absent, never 0
        yield GaugeMetricFamily("vllm_guard_time_to_ready_seconds", "seconds from the ready attempt's start to "
                                "ready", value=v.time_to_ready_s)
    ended = CounterMetricFamily("vllm_guard_after_ready_ends", "vLLM's ends after it was ready: exited, stalled "
                                "or stopped", labels=["outcome"])
    for name, count in v.ended.items():
        ended.add_metric([name], count)
    yield ended


def registry_for(state: GuardState) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(state))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
