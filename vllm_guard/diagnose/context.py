"""Pure: the settings a vLLM log reveals (its config and args dumps, the worker's memory line), which the ladder's
next step starts from and port_in_use names."""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose import commandline, logread, progress
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.options.argv import namespace as argv_namespace
from vllm_guard.options.argv import parse_command_line
from vllm_guard.options.table import choose_table

_CONTEXT_WORDS = logread.any_of(("port", "max model len", "max_seq_len", "max_model_len", "max_num",
                                 "gpu_memory_utilization", "enforce_eager", "kv_cache_dtype", "Enforce eager",
                                 "Starting vLLM server", "vllm serve", "vllm.entrypoints", "docker run",
                                 "podman run"))

# The command a paste shows (commandline.py): the start's settings as they were given, read as vLLM's parser
# reads them, from the one command the start ran (read()); blind8/b8-020: the command and its error, pasted, run
# eager. vLLM's own dumps of its settings win wherever they stand (a paste may put the command after the log).
_COMMAND_SETTINGS = ("port", "max_model_len", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
                     "enforce_eager", "kv_cache_dtype")

# Settings the log itself reveals, used for the next step and for port_in_use.
_CONTEXT = (
    (re.compile(r"'port': (\d+)"), "port"),
    (re.compile(r"Starting vLLM server on https?://[^:\s]{1,255}:(\d+)"), "port"),
    (re.compile(r"Using max model len (\d+)"), "max_model_len"),
    (re.compile(r"max_seq_len=(\d+)"), "max_model_len"),
    # 0.8+'s "non-default args: {..., 'max_model_len': 8192}", logged before a config check can refuse the start
    (re.compile(r"'max_model_len': (\d+)"), "max_model_len"),
    (re.compile(r"max_num_batched_tokens=(\d+)"), "max_num_batched_tokens"),
    (re.compile(r"'max_num_seqs': (\d+)"), "max_num_seqs"),
    (re.compile(r"'gpu_memory_utilization': ([\d.]+)"), "gpu_memory_utilization"),
    # V0's worker (0.6.4-0.10 worker.py determine_num_available_blocks): "... total_gpu_memory (44.34GiB) x
    # gpu_memory_utilization (0.90) = 39.91GiB"
    (re.compile(r"x gpu_memory_utilization \(([\d.]+)\)"), "gpu_memory_utilization"),
    # Only as an item of the engine's config, its Namespace or its args ("..., enforce_eager=False, ...",
    # "'enforce_eager': True"), never as advice: V0's model_runner (0.4-0.10) logs "To run the model in eager mode,
    # set 'enforce_eager=True' ..." on every start that captures CUDA graphs, so a graph-capture OOM read "already
    # eager" (blind3/b3-038); vllm-ascend's "Or set `enforce_eager=True`" (blind158/b158-003) is an exception's.
    (re.compile(r"(?:^|[(,] ?)enforce_eager=(True|False)\b"), "enforce_eager"),
    (re.compile(r"'enforce_eager': (True|False)\b"), "enforce_eager"),
    (re.compile(r"kv_cache_dtype=(\w+)"), "kv_cache_dtype"),
    (re.compile(r"'kv_cache_dtype': '(\w+)'"), "kv_cache_dtype"),
    (re.compile(r"Enforce eager set"), "enforce_eager"),
)


def _in_raised(lines: list[LogLine], i: int) -> bool:
    """Line i is an exception's own line, or one a terminal wrapped its message onto: its words are the message's
    (vllm-ascend's "Or set `enforce_eager=True`", blind158/b158-003), not the start's settings. Asked only of the
    few lines that name a setting, so a crash loop's every line is not read back."""
    j = i
    for _ in range(logread.WRAPPED_RUN_MAX):
        if logread.raised(lines[j].text):
            return True
        if j == 0 or logread.continuation(lines, j - 1) is None:
            return False
        j -= 1
    return False


def _settings(args: list[str] | None) -> dict[str, Any]:
    """The settings vLLM's parser reads from a command's arguments; none where the shell or vLLM's parser could not
    read them (an unclosed quote, an option vLLM refuses)."""
    if args is None:
        return {}
    try:
        given = argv_namespace(parse_command_line(args, choose_table(None, "a log").table, allow_unknown=True))
    except (ValueError, RecursionError):  # ArgvProblem: what vLLM's parser refuses
        return {}
    return {key: value for key in _COMMAND_SETTINGS if (value := given.get(key)) is not None
            and _usable(key, value)}


def _usable(key: str, value: Any) -> bool:
    """A number the ladder can step from: not vLLM's -1 for "auto" (--max-model-len auto), not a port past 65535."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return value > 0 and (key != "port" or value <= 65535)


def _top_level(line: str, at: int) -> bool:
    """A dict's item at ``at`` is at the first level of vLLM's "non-default args: {...}" on this line, not a nested
    config's ("'speculative_config': {'max_model_len': 2048}", the draft model's), nor on a line a terminal wrapped off
    the dump, whose nesting this line alone cannot tell (a review's cases)."""
    start = line.rfind("args: {", 0, at)
    return start >= 0 and line.count("{", start, at) - line.count("}", start, at) == 1


def read(lines: list[LogLine]) -> dict[str, Any]:
    """Settings the log reveals: vLLM's own records, the last mention winning (the engine's resolved value comes
    last), over the command line the start ran."""
    ctx: dict[str, Any] = {}
    # The start's command: the last one with output after it (a paste may add the next command it tried after the
    # log, which segments.segments keeps with the start it follows: a review's case), else the last one.
    given: dict[str, Any] = {}
    given_ran = False
    skip_to = -1
    for i, line in enumerate(entry.text for entry in lines):
        # the settings are in vLLM's INFO records (its config and args dumps) and a command, never in an error's lines
        if i <= skip_to or line.startswith(progress.NOT_PROGRESS) or not _CONTEXT_WORDS.search(line):
            continue
        if commandline.maybe(line) and (found := commandline.command(lines, i)) is not None:
            skip_to = found.last  # (its continued lines are its own: not read again)
            ran = skip_to + 1 < len(lines) and not (commandline.maybe(lines[skip_to + 1].text)
                                                    and commandline.command(lines, skip_to + 1) is not None)
            if ran or not given_ran:
                given, given_ran = _settings(found.args), ran
            continue
        if _in_raised(lines, i):
            continue
        for pattern, key in _CONTEXT:
            m = next((m for m in pattern.finditer(line) if line[m.start()] != "'" or _top_level(line, m.start())),
                     None)
            if not m:
                continue
            value: Any
            if key == "enforce_eager":
                value = m.group(1) != "False" if m.groups() else True
            elif key == "kv_cache_dtype":
                value = m.group(1)
            elif key == "gpu_memory_utilization":
                value = float(m.group(1))
            else:
                value = int(m.group(1))
            ctx[key] = value
    return {**given, **ctx}
