"""A deadline the guard enforces on a call into Ray, that a stop signal interrupts.

Ray's own timeouts do not bound everything: ``ray.init`` against a port that accepts TCP connections and never
answers retries for minutes (Ray 2.x gcs_client; over 400 s seen), and a call blocked in Ray's C++ core runs no
Python signal handler until it returns. So each call runs in a daemon thread while the main thread waits on an
Event: that wait ends at the deadline, and a signal handler that raises (process.StopSignalled, installed first
by `serve`) ends it at once. A call still running at the deadline is abandoned: its thread is left behind, named
in ``ABANDONED``, and the process must then leave with ``os._exit`` (Ray's atexit shutdown would wait on it;
cli/main.py does so).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

ABANDONED: list[str] = []  # what was left running, in order


class TimedOut(Exception):
    """The call did not return within its deadline; it still runs in its thread."""


def call(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """``fn()`` within ``timeout_s``; its own exception is raised here.

    Raises:
        TimedOut: no answer by the deadline (``what`` is then in ABANDONED).
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name=f"vllm-guard: {what}").start()
    try:
        answered = done.wait(timeout_s)
    except BaseException:  # a stop signal (StopSignalled, Ctrl-C) ended the wait: the call runs on, abandoned
        ABANDONED.append(what)
        raise
    if not answered:
        ABANDONED.append(what)
        raise TimedOut(what)
    if "error" in box:
        raise box["error"]
    return box["value"]
