"""Pure: py-spy's ``dump`` text -> each thread's frames, and the innermost frames of the main thread.

py-spy 0.3-0.4 prints, per process: "Process PID: CMDLINE", "Python vX.Y.Z (PATH)", then per thread
'Thread TID (active|idle|active+gil): "NAME"' and its frames, innermost first, as "func (file:line)".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_THREAD = re.compile(r'^Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>[^)]{1,40})\)(?:: "(?P<name>[^"]{0,200})")?')
INNERMOST = 8  # frames kept per process for `explain` and `attempts`: the wait is in the last few calls
FRAME_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Thread:
    name: str
    state: str
    frames: tuple[str, ...]  # innermost first


def threads(text: str) -> list[Thread]:
    """Every thread py-spy printed, its frames innermost first (control characters removed, long frames cut)."""
    out: list[Thread] = []
    name = state = ""
    frames: list[str] | None = None
    for raw in text.splitlines():
        m = _THREAD.match(raw)
        if m:
            if frames is not None:
                out.append(Thread(name, state, tuple(frames)))
            name, state, frames = m.group("name") or m.group("tid"), m.group("state"), []
        elif frames is not None and raw.startswith(" ") and raw.strip():
            frames.append(_CONTROL.sub("", raw.strip())[:FRAME_CHARS])
        elif frames is not None and not raw.strip():
            out.append(Thread(name, state, tuple(frames)))
            frames = None
    if frames is not None:
        out.append(Thread(name, state, tuple(frames)))
    return out


def main_frames(text: str, n: int = INNERMOST) -> tuple[str, ...]:
    """The innermost ``n`` frames of the main thread (the first thread when none is called MainThread)."""
    found = threads(text)
    main = next((t for t in found if t.name == "MainThread"), found[0] if found else None)
    return main.frames[:n] if main is not None else ()


def summary(frames: object, per_process: int = 3, processes: int = 4) -> list[str]:
    """One line per process from a record's ``hang.frames`` (label -> innermost frames): "label: f1 < f2 < f3".
    The record is read back from a file anyone could edit: anything not a mapping of lists of text is skipped."""
    if not isinstance(frames, dict):
        return []
    out = []
    # vLLM's own processes first, the engine first of them (a hang waits there); the wrappers and the
    # multiprocessing resource tracker last
    ranked = sorted(frames.items(), key=lambda kv: (0 if "EngineCore" in str(kv[0]) else
                                                    1 if "VLLM::" in str(kv[0]) else 2))
    for label, stack in ranked[:processes]:
        if isinstance(stack, list) and stack:
            # the innermost frame (what it waits in), then vLLM's own innermost (why): threading.py's wait says
            # little, vllm/v1/engine/core.py:1243 says which wait
            texts = [_CONTROL.sub("", str(f))[:FRAME_CHARS] for f in stack]
            picked = texts[:1] + [f for f in texts[1:] if "vllm/" in f][:per_process - 1]
            shown = " < ".join(picked + [f for f in texts[1:] if f not in picked][:per_process - len(picked)])
            out.append(f"{_CONTROL.sub('', str(label))[:80]}: {shown}")
    return out
