"""The conditions some failure rules add to their message: the lines around it say whether it decides the start
(an API port and not an internal one, an HTTP error that is not retried, a wait in a start that never got ready)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vllm_guard.diagnose import logread, progress
from vllm_guard.diagnose.catalogue_support import TRANSFORMERS_MM_TOKEN_PROCESSORS
from vllm_guard.diagnose.diagnosis import EXCEPTION_LINE, WRAPPERS, per_log, ready, skipped_plugin_lines
from vllm_guard.diagnose.hang_log import TROUBLE
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, LogLine


def api_bind(port_group: str) -> Callable[[str, list[LogLine], int, dict[str, Any]], bool]:
    """A bind error is the API port's only where the API server binds (an internal port is read by its own rule,
    from torch.distributed's message, with the detail internal_port)."""

    def check(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
        m = re.search(port_group, line)
        if m:
            # uvicorn binds only the API port: when the log does not name it, uvicorn's own error decides
            return int(m.group(1)) == ctx.get("port", int(m.group(1)))
        # CPython's bare "[Errno 98] Address already in use": decisive only in the API server's own
        # socket setup (launcher.py create_server_socket), not in ZMQ, torch.distributed or NCCL. The frames may
        # follow the error when a person pastes them in that order (blind56/b56-005).
        window = " ".join(line.text for line in lines[max(0, i - 15): i + 4])
        if re.search(r"zmq|ZMQ|c10d|TCPStore|nccl|NCCL|server socket has failed|MASTER_PORT|tcp://", window):
            return False
        return bool(re.search(r"create_server_socket|sock\.bind|serve_http|setup_server|uvicorn|run_server", window))

    return check


_RETRYING = re.compile(r"Retrying in \d|Trying to resume download|retrying \d{1,3} of \d|\[Retry \d{1,3}/\d")


def not_retried(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """An HTTP failure huggingface_hub (http_backoff, a resumed download) or vLLM (its file-list retries) logs and
    then retries decides nothing: the line itself or the next says so."""
    nxt = lines[i + 1].text if i + 1 < len(lines) else ""
    return not (_RETRYING.search(line) or _RETRYING.search(nxt[:MAX_LINE_CHARS]))


def never_ready(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """A line printed while something waits (Ray's autoscaler while the placement group pends) is the failure
    only when the start never became ready."""
    return not ready(lines)


# What a pod does once the scheduler placed it: the kubelet's events (`kubectl describe pod`) and vLLM's own lines.
_POD_WENT_ON = re.compile(r"Successfully assigned|Started container|Created container|Pulling image|Successfully "
                          r"pulled|\b(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d")


def processor_not_transformers(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """A processor lacking _get_num_multimodal_tokens that transformers never gave the method (a model's own), in a
    start never ready: transformers' own processors that lack it are a transformers older than the one that added
    it, which the processor API's rule reads."""
    m = _PROCESSOR_CLASS.search(line)
    return m is not None and m.group(1) not in TRANSFORMERS_MM_TOKEN_PROCESSORS and not ready(lines)


_PROCESSOR_CLASS = re.compile(r"AttributeError: '(\w{1,120})' object has no attribute")


def no_neuron_core_free(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """Neuron's runtime counted no core free ("Available:0"), on this line or, where the paste broke the line
    before its counts, on the next; a count short of the request but above 0 may be too few cores, not a holder."""
    if ready(lines):
        return False
    if "Available:" in line:
        return True  # the rule's pattern took only "Available:0" on the line itself
    nxt = lines[i + 1].text if i + 1 < len(lines) else ""
    return _NO_CORE_FREE.search(nxt[:MAX_LINE_CHARS]) is not None


_NO_CORE_FREE = re.compile(r"^\s{0,40}-?\s{0,3}Requested:\s?[\w-]{1,40}\s{1,3}Available:0\b")


def ngc_went_no_further(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """As went_no_further, and no exception follows but those of NIM's own traceback for the hub (its frames name
    inject_ngc_hub): NIM may go on from its cache and fail at the same stage for another reason (a review: the NGC
    line, then a max_model_len refusal)."""
    return went_no_further(line, lines, i, ctx) and i > per_log(lines, _last_exception_outside_ngc)


def _last_exception_outside_ngc(lines: list[LogLine]) -> int:
    """The index of the log's last exception line (not vLLM's wrappers) outside a traceback through NIM's hub
    client; -1 when none. Read once per log."""
    last, in_hub = -1, False
    for k, line in enumerate(lines):
        text = line.text[:MAX_LINE_CHARS]
        if "Traceback (most recent call last)" in text:
            in_hub = False
        in_hub = in_hub or "inject_ngc_hub" in text
        if not in_hub and EXCEPTION_LINE.search(text) and not WRAPPERS.search(text):
            last = k
    return last


def went_no_further(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready and its progress went no further than this line's stage: a failure a later stage's
    lines follow was survived (a helper's compile that failed once, where the start went on to size the KV cache)."""
    if ready(lines):
        return False
    reached = per_log(lines, progress.progress)
    return bool(reached.at[i] == reached.final)


def still_pending(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """A FailedScheduling event decides the start only when the pod was never placed after it: the scheduler retries,
    an autoscaler adds a node, another pod leaves, and `kubectl describe pod` keeps the old event."""
    return not ready(lines) and i > per_log(lines, _pod_went_on_last)


def _pod_went_on_last(lines: list[LogLine]) -> int:
    """The index of the log's last line that shows the pod placed or running (-1 when none): read once per log."""
    return next((k for k in range(len(lines) - 1, -1, -1) if _POD_WENT_ON.search(lines[k].text[:MAX_LINE_CHARS])),
                -1)


def never_ready_nor_skipped(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """As never_ready, and the line is not in the traceback vLLM logs for a plugin it failed to load and went on
    without (plugins/__init__.py, 0.6-0.34): an import error there ends nothing."""
    return not ready(lines) and i not in per_log(lines, skipped_plugin_lines)


def nccl_cause_unnamed(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready and no line of NCCL's own names the call's cause: its WARN or "Last error:" line
    saying CUDA ran out of memory makes the unhandled error an allocation's failure, not the connection's."""
    return not ready(lines) and not per_log(lines, _nccl_oom_named)


_NCCL_OOM = re.compile(r"Cuda failure '?out of memory|Failed to CUDA calloc|cudaErrorMemoryAllocation")


def _nccl_oom_named(lines: list[LogLine]) -> bool:
    return any(("Cuda failure" in line.text or "CUDA calloc" in line.text or "cudaErrorMemoryAllocation" in line.text)
               and _NCCL_OOM.search(line.text) for line in lines)




def first_error(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready and no error came before this line: a line a process prints as it goes down after
    another's failure (Ray's workers when the head is gone) is not the failure."""
    return not ready(lines) and per_log(lines, _first_error_at) >= i


def _first_error_at(lines: list[LogLine]) -> int:
    """The index of the log's first error that is not one of vLLM's wrappers (the length when none)."""
    return next((k for k, line in enumerate(lines)
                 if EXCEPTION_LINE.search(line.text) and not WRAPPERS.search(line.text)), len(lines))


def last_error(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready and no other error follows this line but vLLM's wrappers of it ("Engine core
    initialization failed"): a warning-like import failure vLLM went on after is not the failure."""
    if ready(lines):
        return False
    return not any(EXCEPTION_LINE.search(after.text) and not WRAPPERS.search(after.text)
                   and line.strip() not in after.text for after in lines[i + 1:])


# A record vLLM itself logged ("INFO 03-27 16:00:08 [api_server.py:1] ..."), or a frame of its code
_VLLM_RECORD = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d|[/\\]vllm[/\\]")


def last_error_before_vllm(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """As last_error, and vLLM itself says nothing after the line: a paste whose vLLM went on to run after a shell
    could not find it (another environment activated, another command) is not a start without vLLM (a review)."""
    return last_error(line, lines, i, ctx) and not any(_VLLM_RECORD.search(after.text[:MAX_LINE_CHARS])
                                                       for after in lines[i + 1:])


# The shell's words for a command named vllm itself (bash "line 1: vllm: command not found", dash "1: vllm: not
# found"), not one that ends in vllm ("my-vllm: command not found"), or Python's for the package
_VLLM_ITSELF = re.compile(r"(?:^|: )vllm: (?:command )?not found$|No module named '?vllm'?\)?$")


def vllm_itself_missing(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The shell or Python found no vLLM at all, and nothing after says it ran (last_error_before_vllm)."""
    return bool(_VLLM_ITSELF.search(line)) and last_error_before_vllm(line, lines, i, ctx)


# Any log format's level word before the message ("WARNING 05-01 ...", "| WARNING |", "- WARNING -")
_WARNING_LEVEL = re.compile(r"\bWARNING\b")


def _last_trouble(lines: list[LogLine]) -> int:
    """The index of the log's last line that says something failed (hang_log.TROUBLE's words: an error, an
    exception, a kill, a crash), -1 when none; found once per log."""
    return next((k for k in range(len(lines) - 1, -1, -1) if TROUBLE.search(lines[k].text[:MAX_LINE_CHARS])), -1)


def raised_or_last(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready, and the words were raised, or logged as a WARNING with nothing failing after it and
    no later stage reached: vLLM 0.11-0.34 ray_utils.py warns "The number of required NPUs exceeds ..." and waits for
    the placement group, where 0.4-0.6 raised those words; an error after the warning says more (blind4/b4-012:
    "Current node has no NPU available"), and a start that went on to load survived it (a review). Log-wide facts are
    found once per log: a paste of the warning repeated thousands of times stays linear."""
    if ready(lines):
        return False
    text = lines[i].text
    at = text.find("The number of required")
    if not _WARNING_LEVEL.search(text[:at if at >= 0 else len(text)]):
        return True
    reached = per_log(lines, progress.progress)
    quiet = per_log(lines, _last_trouble) <= i or per_log(lines, _stopped_at_last)
    return quiet and reached.at[i] == reached.final


# The last traceback's exception is a stop (Ctrl-C, a SIGTERM turned into SystemExit): a start stopped while it
# waited, whose tracebacks say where it waited, not another failure (blind17/b17-002: the placement wait, then SIGTERM)
_STOP = re.compile(r"^(?:\w{1,60}\.){0,4}(?:KeyboardInterrupt|SystemExit)\b")


def _stopped_at_last(lines: list[LogLine]) -> bool:
    last = next((tb for tb in reversed(per_log(lines, logread.tracebacks)) if tb.exception is not None), None)
    return last is not None and last.exception is not None \
        and bool(_STOP.match(logread.body(lines[last.exception].text)))


def nothing_after(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready and the log has nothing after this line but more lines of the same message (or
    their tracebacks): a failure vLLM logs and goes on after decides only a paste that stops there. The last other
    line is found once per log and message (a run of the message's lines would otherwise read the rest each time)."""
    if ready(lines):
        return False
    head = logread.body(line).strip()[:40]
    last_other: dict[str, int] = per_log(lines, _new_memo)
    if head not in last_other:
        last_other[head] = next((k for k in range(len(lines) - 1, -1, -1)
                                 if (t := lines[k].text).strip() and not t.startswith((" ", "Traceback"))
                                 and head not in t), -1)
    return i > last_other[head]


def _new_memo(lines: list[LogLine]) -> dict[str, int]:
    """A dictionary kept with the log (per_log): a condition's answers by the message it was asked of."""
    return {}


def not_a_fallback(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """Not a platform plugin's note that it falls back to vLLM's own class for the architecture and goes on
    (tpu-inference: "Flax model failed with: 'Model architectures [...] are not supported for now. ...'. Falling back
    to vLLM implementation.")."""
    return "Falling back to vLLM" not in line


# Where multimodal processing runs: transformers' processors, vLLM's multimodal code and model classes, a model's own
# remote processor code.
_PROCESSING_FRAME = re.compile(r"[/\\](?:transformers[/\\]\S{0,200}process\w{0,40}\.py|vllm[/\\](?:multimodal|"
                               r"model_executor[/\\]models|transformers_utils)[/\\]|transformers_modules[/\\])")


def raised_in_processing(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The start never got ready, and one of the few frames above the line is multimodal processing's, or the paste
    keeps no frame at all to say whose the object is (blind39/b39-011: the line alone)."""
    if ready(lines):
        return False
    return any("File " in above.text and _PROCESSING_FRAME.search(above.text) for above in lines[max(0, i - 8):i]) \
        or not per_log(lines, _has_frames)


def _has_frames(lines: list[LogLine]) -> bool:
    return any(logread.body(line.text).lstrip().startswith("File ") for line in lines)


def raised_in_sentencepiece(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The same process's traceback just above ends in sentencepiece's LoadFromFile (its frame and source line come
    last)."""
    return any("sentencepiece" in above.text and "LoadFromFile" in above.text and above.proc == lines[i].proc
               for above in lines[max(0, i - 4):i])


_BARE_ASSERTION = re.compile(r"(?:\w{1,64}\.)?AssertionError\s*$")


def assertion_raised(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """An assert's source line is the failure only in a traceback, where Python prints it and then the bare
    AssertionError it raised (3.11+ puts a line of carets between): a pasted code listing has no such line."""
    for after in lines[i + 1:i + 4]:
        text = logread.body(after.text)
        if _BARE_ASSERTION.match(text):
            return True
        if not logread.CARETS.match(text):
            return False
    return False


def npu_memory_follows(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """CANN's own words for a failed allocation ("[Error]: Failed to apply for memory.") follow within the next lines
    of the same process: torch_npu prints the ACL error's detail right after the call that failed."""
    # (a line whose process prefix the paste cut is taken as the process's own: blind50/b50-004)
    return any("Failed to apply for memory" in after.text and (after.proc == lines[i].proc or not lines[i].proc)
               for after in lines[i + 1:i + 4])


# A later line that says an out-of-memory error in full: the exception's type with its message, or the allocator's
# words (torch's, Ray's for the host's memory, NCCL's)
_FULLER_OOM = re.compile(r"OutOfMemoryError: \S|[Oo]ut of memory")
OOM_LOOKAHEAD = 2000  # lines: an IPython traceback of vLLM's start is a few hundred


def no_fuller_oom_after(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """No later line says the out-of-memory error in full. IPython heads its traceback with the bare type and ends
    it with the whole message, and a terminal may leave the type alone on a line: that line is read, with its
    figures and its kind (Ray's OutOfMemoryError is the host's memory, not the GPU's)."""
    return not any(_FULLER_OOM.search(after.text[:MAX_LINE_CHARS]) for after in lines[i + 1:i + 1 + OOM_LOOKAHEAD])


# Conditions that read the whole log and not the line's place in it: a line that holds the same words as one read
# before gets the same answer, so the per-line memo of classify may skip it (a million repeated warnings cost one
# reading; issue 28).
LOG_WIDE: frozenset[Callable[[str, list[LogLine], int, dict[str, Any]], bool]] = frozenset({never_ready,
                                                                                           nccl_cause_unnamed})


# transformers' AutoConfig looking the checkpoint's model_type up (models/auto/configuration_auto.py, 4.3x-5.x)
_CONFIG_MAPPING_LOOKUP = 'CONFIG_MAPPING[config_dict["model_type"]]'


def raised_at_config_mapping(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The KeyError comes from AutoConfig's look-up of the model type: its code line is among the few lines above
    (the frame's code, then Python 3.11+'s carets and the mapping's own `raise KeyError(key)` frame)."""
    return any(_CONFIG_MAPPING_LOOKUP in before.text for before in lines[max(0, i - 8):i])


# vLLM's (or vllm-ascend's) warning that its compiled extension did not load: install.py reads it with its cause
_EXTENSION_WARNING = re.compile(r"Failed to import (?:from vllm\._\w{0,20}C\b|vllm_ascend_C\b)")


def _first_extension_warning(lines: list[LogLine]) -> int:
    return next((k for k, line in enumerate(lines) if "Failed to import" in line.text
                 and _EXTENSION_WARNING.search(line.text[:MAX_LINE_CHARS])), len(lines))


def op_missing_alone(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """A compiled op missing decides only where no earlier warning says the extension itself did not load: then
    every op is missing, and the warning's cause (install.py) is the reading, whichever op failed first (a review)."""
    return not ready(lines) and per_log(lines, _first_extension_warning) > i


def in_fused_moe(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """The assert's frame is FusedMoE's (model_executor/layers/fused_moe/): linear.py has the same code line, and an
    assert there is not the MoE's (a review); and Python raised it (assertion_raised)."""
    return any("fused_moe" in before.text for before in lines[max(0, i - 2):i]) \
        and assertion_raised(line, lines, i, ctx) and not ready(lines)


def near_triton(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """A compiler's missing header is Triton's launcher build only where Triton is named around it (its cuda.h,
    its build.py, inductor's triton codegen), and it is the start's last failure: a package's optional C speed-up
    failing during pip install is not (a review)."""
    if not any("triton" in near.text.lower() for near in lines[max(0, i - 10):i + 30]):
        return False
    return last_error(line, lines, i, ctx) or went_no_further(line, lines, i, ctx)


def at_inductor_hints(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """dataclasses' refusal comes from torch Inductor's read of Triton's AttrsDescriptor: its code line is among the
    few lines above (the frame's code, the dataclasses frame and its raise)."""
    return any("fields(AttrsDescriptor)" in before.text for before in lines[max(0, i - 6):i])
