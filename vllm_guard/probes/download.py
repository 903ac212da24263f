"""Fetching a Hub model before vLLM starts (``guard.download``), so a slow download is seen as one.

The decision and the progress lines are pure; the Hub call itself is ``probes/model.py``'s (the one
huggingface_hub doorway), passed in as ``fetch`` so tests stand at that boundary without a network.
Off a terminal (journald, ``kubectl logs``) tqdm's carriage returns do not render, so progress is a
newline-terminated line every few seconds, measured from the bytes in the cache's ``blobs/`` directory.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from vllm_guard.facts.model import ModelFacts

GIB, MIB = 2**30, 2**20
LINE_INTERVAL_S = 10.0  # between progress lines: often enough to see it move, rare enough for a journal
# What the guard fetches: the safetensors weights vLLM loads (it prefers them when a repository has them,
# model_loader/weight_utils.py), its config and tokenizer files; never the consolidated `original/` copy
# that Llama repositories also carry (vLLM's LoadConfig.ignore_patterns default).
ALLOW_PATTERNS = ("*.safetensors", "*.json", "*.model", "*.txt", "*.tiktoken", "*.jinja")
IGNORE_PATTERNS = ("original/**/*",)


@dataclass(frozen=True)
class Decision:
    fetch: bool
    reason: str


def decide(model: ModelFacts, enabled: bool, environ: Mapping[str, str], *, local_path: bool) -> Decision:
    """Whether ``serve`` fetches the model itself before vLLM starts, and why (said either way)."""
    if local_path:
        return Decision(False, "a local path: nothing to download")
    if not enabled:
        return Decision(False, "guard.download = false: vLLM downloads the weights itself")
    if model.weights_local:
        return Decision(False, "the weights are already in the Hugging Face cache")
    if environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return Decision(False, "HF_HUB_OFFLINE is set: nothing can be downloaded")
    if model.source != "hub" or model.weights_source != "hub-metadata":
        # Only a repository whose safetensors the Hub describes: the guard then knows what vLLM will load
        # and how much of it there is; anything else (.bin only, GGUF) vLLM picks and fetches itself.
        return Decision(False, "the Hub gave no safetensors metadata for it: vLLM downloads it itself")
    return Decision(True, f"not in the cache: fetching {size(model.weights_bytes)} before vLLM starts")


def size(n: float | None) -> str:
    if n is None:
        return "an unknown size"
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / MIB:.1f} MiB"


class ProgressLines:
    """One line every ``interval_s`` (and a last one when done), from the bytes on disk and the clock."""

    def __init__(self, model: str, total_bytes: int | None, start_bytes: int | None, start_s: float,
                 interval_s: float = LINE_INTERVAL_S) -> None:
        self.model, self.total, self.interval_s = model, total_bytes, interval_s
        self.start_bytes, self.start_s = start_bytes or 0, start_s
        self.last_s = start_s

    def line(self, done_bytes: int | None, now_s: float, *, final: bool = False) -> str | None:
        if not final and now_s - self.last_s < self.interval_s:
            return None
        self.last_s = now_s
        if done_bytes is None:
            return f"vllm-guard: downloading {self.model}: nothing on disk yet ({now_s - self.start_s:.0f}s)"
        elapsed = max(now_s - self.start_s, 1e-9)
        rate = max(done_bytes - self.start_bytes, 0) / elapsed
        # The total is the Hub's safetensors metadata (tensor bytes, without headers or tokenizer files):
        # about, so the share is capped below 100 until the fetch has returned.
        share = f" ({min(done_bytes / self.total * 100, 100 if final else 99):.0f}%)" if self.total else ""
        of = f" of about {size(self.total)}" if self.total else ""
        verb = "downloaded" if final else "downloading"
        return f"vllm-guard: {verb} {self.model}: {size(done_bytes)}{of}{share}, {size(rate)}/s"


def blobs_bytes(model: str, cache_dir: str) -> int | None:
    """Bytes of this repository in the cache, whole files and ``*.incomplete`` ones (huggingface_hub writes
    each download as ``blobs/<hash>.incomplete`` and renames it when done). None: no such directory yet."""
    blobs = os.path.join(cache_dir, "models--" + model.replace("/", "--"), "blobs")
    try:
        with os.scandir(blobs) as entries:
            return sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False))
    except OSError:
        return None


def fetch_with_lines(fetch: Callable[[], str], measure: Callable[[], int | None], write: Callable[[str], None],
                     lines: ProgressLines, *, clock: Callable[[], float] = time.monotonic,
                     look_s: float = 1.0, moved: Callable[[int], None] | None = None) -> str:
    """Run ``fetch`` here while a thread writes ``lines`` from ``measure``; the last line once it returns.
    ``moved`` hears each look at which the bytes grew (serve extends systemd's start timeout then, and only then).

    Raises whatever ``fetch`` raises (the caller says what the Hub answered)."""
    done = threading.Event()
    start_bytes = measure()  # before fetch starts, here: a thread that starts late would miss the first bytes

    def report() -> None:
        last = start_bytes
        while not done.wait(look_s):
            now_bytes = measure()
            if moved is not None and now_bytes is not None and (last is None or now_bytes > last):
                moved(now_bytes)
            last = now_bytes if now_bytes is not None else last
            text = lines.line(now_bytes, clock())
            if text is not None:
                write(text)

    watcher = threading.Thread(target=report, name="vllm-guard-download-lines", daemon=True)
    watcher.start()
    try:
        path = fetch()
    finally:
        done.set()
        watcher.join(timeout=5)
    final = lines.line(measure(), clock(), final=True)
    if final is not None:
        write(final)
    return path
