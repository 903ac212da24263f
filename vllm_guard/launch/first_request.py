"""Ready means it answers: one small real request before the guard calls vLLM ready.

`/health` answering 200 says the engine is up, not that it can serve: vLLM users report servers that are
healthy and then fail the first request (vllm #24207, #36960, #50282: a sampler that runs out of memory on
the first batch, a missing chat template, a tokenizer error). So after /health the guard asks the served
model once, the way clients will: a completion of one token for a generative model, and a chat
completion when vLLM found a chat template; an embedding for an embedding model; a pooling request for
the other pooling tasks. What the model supports comes from vLLM's own start-up lines
("Supported tasks: ['generate']", "Detected the chat template content format"), the model's name from
GET /v1/models, so --served-model-name and the API key need no guessing. Nothing of the answer is kept
but its length.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.markers import API_SERVER
from vllm_guard.launch import health

ERROR_CHARS = 500
WRONG_MODEL = "not the profile's model"
_TASKS = re.compile(r"Supported tasks: \[(?P<tasks>[^\]]{0,200})\]")
_CHAT_TEMPLATE = "Detected the chat template content format"

Call = Callable[..., tuple[int, bytes]]


@dataclass(frozen=True)
class Result:
    """One request: where it went, how it ended, how long it took; never the answer itself."""

    endpoint: str
    ok: bool
    status: int | None
    seconds: float
    error: str | None = None  # vLLM's error message or the transport error, cut
    answer_chars: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "ok": self.ok, "status": self.status, "seconds": round(self.seconds, 3),
                "error": self.error, "answer_chars": self.answer_chars}


def what_to_ask(log_lines: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """The tasks vLLM said it supports (empty when it did not say) and whether it found a chat template."""
    tasks: tuple[str, ...] = ()
    chat = False
    for line in log_lines:
        if "Supported tasks" in line and (m := _TASKS.search(line[:4096])):
            tasks = tuple(t.strip(" '\"") for t in m.group("tasks").split(",") if t.strip(" '\""))
        elif _CHAT_TEMPLATE in line:
            chat = True
    return tasks, chat


def requests_for(tasks: Sequence[str], chat: bool) -> list[tuple[str, dict[str, Any]]]:
    """(path, body without the model) of each request to send, in order."""
    if "generate" in tasks or not tasks:
        out: list[tuple[str, dict[str, Any]]] = [
            ("/v1/completions", {"prompt": "Hello", "max_tokens": 1, "temperature": 0})]
        if chat:
            out.append(("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hello"}],
                                                 "max_tokens": 1, "temperature": 0}))
        return out
    if "embed" in tasks:
        return [("/v1/embeddings", {"input": "Hello"})]
    return [("/pooling", {"input": "Hello"})]


def ask(base: str, log_lines: Sequence[str], *, api_key: str | None, timeout_s: float, models: Sequence[str] = (),
        call: Call = health.call, clock: Callable[[], float] = time.monotonic) -> list[Result]:
    """Send the first requests; stop at the first that fails. ``base`` is http://HOST:PORT or http+unix://PATH.

    ``models``: the names the profile serves (--served-model-name, else the model); the answer of
    /v1/models must name one of them, or the server is not the one this launch started. ``timeout_s``
    bounds all the requests together, each answer whole (health.call).
    """
    deadline = clock() + timeout_s

    def left() -> float:
        return max(0.1, deadline - clock())

    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = clock()
    try:
        status, body = call(base, "GET", "/v1/models", headers=headers, timeout_s=left())
    except (OSError, http.client.HTTPException) as e:
        return [Result("/v1/models", False, None, clock() - start, _cut(f"no answer: {e}"))]
    if status != 200:
        return [Result("/v1/models", False, status, clock() - start, _error_text(body))]
    try:
        served = [str(m["id"]) for m in json.loads(body)["data"]]
        model = next((m for m in served if m in models), None) if models else served[0]
    except (ValueError, KeyError, IndexError, TypeError):
        return [Result("/v1/models", False, status, clock() - start, "no served model in the answer")]
    if model is None:
        return [Result("/v1/models", False, status, clock() - start,
                       _cut(f"{WRONG_MODEL}: the server serves {', '.join(served[:3]) or 'nothing'}, not "
                            f"{models[0]}"))]
    results = []
    tasks, chat = what_to_ask(log_lines)
    for path, payload in requests_for(tasks, chat):
        start = clock()
        try:
            status, body = call(base, "POST", path, body=json.dumps({"model": model, **payload}).encode(),
                                headers=headers, timeout_s=left())
        except TimeoutError:
            results.append(Result(path, False, None, clock() - start, f"no answer within {timeout_s:g}s"))
            break
        except (OSError, http.client.HTTPException) as e:
            results.append(Result(path, False, None, clock() - start, _cut(f"no answer: {e}")))
            break
        if status != 200:
            results.append(Result(path, False, status, clock() - start, _error_text(body)))
            break
        results.append(Result(path, True, status, clock() - start, answer_chars=len(body)))
    return results


def _error_text(body: bytes) -> str:
    """vLLM's error message from an error answer ({"error": {"message": ...}} or {"message": ...})."""
    text = body.decode(errors="replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return _cut(text)
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    message = err.get("message") if isinstance(err, dict) else err
    return _cut(str(message if message is not None else text))


def _cut(text: str) -> str:
    text = "".join(c if c.isprintable() else " " for c in text).strip()
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + "..."


FIRST_REQUEST_FAILED = "first_request_failed"  # a class of its own: it comes from an answer, not from a log
_OOM = re.compile(r"out of memory|OutOfMemoryError", re.IGNORECASE)


def diagnose(results: Sequence[Result], log_tail: Sequence[str]) -> Diagnosis:
    """Why the first request failed, for the attempt log and the ladder.

    An out-of-memory error (in the answer, or logged by the engine since) is the sampler's or the
    first batch's: the ladder halves max-num-seqs, as vLLM's own warm-up message advises.
    """
    failed = next((r for r in results if not r.ok), None)
    error = failed.error if failed is not None and failed.error else "no answer"
    endpoint = failed.endpoint if failed is not None else "?"
    evidence = [f"first request {endpoint}: {error}"]
    engine_oom = next((line for line in reversed(log_tail[-200:]) if _OOM.search(line[:4096])), None)
    numbers: dict[str, Any] = {"status": failed.status if failed else None}
    if _OOM.search(error) or engine_oom is not None:
        if engine_oom is not None:
            evidence.append(_cut(engine_oom))
        return Diagnosis("oom_profiling", API_SERVER, numbers, tuple(evidence), detail="first_request")
    if "chat template" in error.lower():
        detail = "chat_template"
    elif WRONG_MODEL in error:
        detail = "wrong_model"
    elif failed is not None and failed.status is None and "within" in error:
        detail = "timeout"
    elif failed is not None and failed.status in (401, 403):
        detail = "unauthorized"
    else:
        detail = "error"
    return Diagnosis(FIRST_REQUEST_FAILED, API_SERVER, numbers, tuple(evidence), detail=detail)
