"""The first request, asked in a thread while the guard keeps watching vLLM and the stop flag.

What is asked and how it is judged live in ``first_request.py``; ``/health`` in ``health.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vllm_guard.diagnose.classify import classify
from vllm_guard.launch import first_request, health
from vllm_guard.launch.child import Child, ChildEnder
from vllm_guard.launch.journal import Attempt
from vllm_guard.launch.ownership import port_taken

if TYPE_CHECKING:
    from vllm_guard.launch.context import LaunchContext
    from vllm_guard.profile.model import Profile

HEALTH_POLL_S = 0.5

Ask = Callable[..., Sequence[first_request.Result]]  # (base, log_lines, *, api_key, timeout_s), as first_request.ask


class FirstRequest:
    def __init__(self, ctx: LaunchContext, ender: ChildEnder, ask: Ask = first_request.ask) -> None:
        self.ctx = ctx
        self.ender = ender
        self.ask = ask

    def passes(self, attempt: Attempt, child: Child, env: Mapping[str, str]) -> bool:
        """Ask vLLM once, as a client would, before calling it ready; False when the attempt ends here.

        The request runs in a thread so that a stop signal, or vLLM dying meanwhile, is acted on at once.
        """
        ctx = self.ctx
        profile = attempt.profile
        api_key = env.get("VLLM_API_KEY") or _first(profile.value("api_key"))
        timeout = float(profile.setting("first-request-timeout"))
        url = attempt.plan.health_url
        base = url.rsplit("/health", 1)[0]
        if not ctx.port.ours(url, child.pid):  # the API key goes only to the launch's own socket
            return self._taken(attempt, child, url)

        def owned_call(*args: Any, **kwargs: Any) -> tuple[int, bytes]:
            # Looked at again before each request: the key must never reach a socket the launch lost.
            if not ctx.port.ours(url, child.pid):
                raise ConnectionRefusedError(f"{url} is no longer this launch's socket")
            return health.call(*args, should_stop=lambda: ctx.stop_signal is not None, **kwargs)

        results: list[first_request.Result] = []
        thread = threading.Thread(target=lambda: results.extend(self.ask(
            base, list(child.tail), api_key=api_key, timeout_s=timeout, models=served_names(profile),
            call=owned_call)), daemon=True)
        ctx.status.message("vLLM answers /health; sending a first request")
        ctx.notifier.status(f"{attempt.label}: first request")
        thread.start()
        while thread.is_alive():
            if ctx.stop_signal is not None:
                attempt.exit_status = self.ender.stop(child)
                attempt.outcome = "stopped"
                return False
            if child.poll() is not None:
                break
            thread.join(HEALTH_POLL_S)
        thread.join(1.0)  # each request is bounded (health.call); the thread ends within its deadline
        attempt.first_request = [r.to_dict() for r in results]
        code = child.poll()
        if code is not None:  # vLLM died on its first request: its log says why
            attempt.exit_status = self.ender.stop(child)
            attempt.outcome = "failed"
            attempt.diagnosis = classify("\n".join(child.tail), exit_status=code)
            return False
        if results and all(r.ok for r in results):
            return True
        attempt.diagnosis = first_request.diagnose(results, list(child.tail))
        ctx.status.message(f"the first request failed: {attempt.diagnosis.evidence[0]}")
        attempt.exit_status = self.ender.stop(child)
        attempt.outcome = "failed"
        return False


    def _taken(self, attempt: Attempt, child: Child, url: str) -> bool:
        attempt.diagnosis = port_taken(url, self.ctx.port.holder(url))
        self.ctx.status.message(attempt.diagnosis.evidence[0])
        attempt.exit_status = self.ender.stop(child)
        attempt.outcome = "failed"
        return False


def served_names(profile: Profile) -> tuple[str, ...]:
    """What /v1/models must list: --served-model-name's names, else the model as given (vLLM 0.33's default)."""
    names = profile.value("served_model_name")
    if isinstance(names, (list, tuple)) and names:
        return tuple(str(n) for n in names)
    if isinstance(names, str) and names:
        return (names,)
    return (str(profile.model),) if profile.model else ()


def _first(value: Any) -> str | None:
    """The first of an option's values (--api-key takes several)."""
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return None if value is None else str(value)
