"""Readings said only when no decisive message matched: the one function that raises a failure, when a paste cut
its message; vLLM's own settings checks by where they raise; and supporting evidence (a binding error on a call from
vLLM's code, a program written for another vLLM release, vLLM's registry naming an architecture it could not
import, a disk-space warning beside a download's traceback, and last the warnings a start goes on after: an
extension that does not load, no platform and no driver library). Pure."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from vllm_guard.diagnose import certainty, conditions, install, logread, raise_sites, signatures
from vllm_guard.diagnose.catalogue_support import FRAME_SOURCES, SUPPORT_SOURCES
from vllm_guard.diagnose.diagnosis import EXCEPTION_LINE, WRAPPERS, Diagnosis, cut, last_errors, ready
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.markers import BEFORE_START, LOADING
from vllm_guard.diagnose.missing_modules import IN_VLLM, raised_by_frame
from vllm_guard.options.table import load_table, normalize_option_string, table_versions

# Supporting evidence: not a failure by itself, decisive only when the start failed where it points.
_DISK_WARNING = re.compile(r"The expected file size is: (?P<expected_file_mb>[\d.]{1,20}) MB\..{0,1000}?only has "
                           r"(?P<free_disk_mb>[\d.]{1,20}) MB free disk space"
                           r"|only has (?P<free_mb>[\d.]{1,20}) MB free disk space")
_DOWNLOAD_FRAMES = frozenset(("snapshot_download", "hf_hub_download", "download_weights_from_hf", "http_get",
                              "_download_to_tmp_and_move", "download_model", "_download_file"))


def raised_in(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
              ctx: dict[str, Any]) -> Diagnosis | None:
    """A class from the one function that raised it, when the paste cut its message (blind3/b3-010, b3-034), or
    from vLLM's own settings checks when no rule knows their message."""
    for tb in reversed(tbs):
        known = FRAME_SOURCES.get(tb.frames[-1].func) if tb.frames else None
        if known is not None and tb.frames[-1].func in _AT_ITS_RAISE and not _cut_at_its_raise(lines, tb):
            continue
        if known is not None:
            cls, stage, source = known
            evidence = (f"raised in {tb.frames[-1].func} ({cut(tb.frames[-1].path)})", *last_errors(lines, tbs, 2))
            return Diagnosis(cls, stage, {}, evidence, signal, context=ctx, confidence="medium", template=source,
                             stage_from=certainty.FRAMES)
    return (_config_check(lines, tbs, signal, ctx) or _flag_check(lines, tbs, signal, ctx)
            or raise_sites.settings_check(lines, tbs, signal, ctx))


# Functions that also call others that can fail otherwise (resolve_transformers_arch imports a remote-code class
# through transformers, which can fail for the network or the code): read only where the paste shows the frame at its
# own `raise ValueError(` and any exception line shown is a ValueError.
_AT_ITS_RAISE = frozenset({"resolve_transformers_arch"})


def _cut_at_its_raise(lines: list[LogLine], tb: logread.Traceback) -> bool:
    if tb.exception is not None and "ValueError" not in lines[tb.exception].text:
        return False
    end = len(lines) if tb.exception is None else tb.exception
    at = max((k for k in range(tb.first, end) if logread.frame_of(lines[k].text) == tb.frames[-1]), default=None)
    code = next((logread.body(line.text).strip() for line in lines[at + 1:at + 3]
                 if not logread.CARETS.fullmatch(logread.body(line.text))), "") if at is not None else ""
    return code.startswith("raise ValueError(")


# vLLM's settings checks: vllm/config.py (0.4-0.9), vllm/config/*.py (0.10-0.33), engine/arg_utils.py's
# create_engine_config and the platform's checks (platforms/*.py check_and_update_config, get_attn_backend_cls:
# "CPU backend only supports V1.") raise ValueError for a combination of settings they refuse. From 0.10 the
# config classes are pydantic dataclasses (vllm/config/utils.py @config over pydantic.dataclasses.dataclass):
# pydantic re-raises a check's ValueError as "N validation error(s) for SchedulerConfig" with "Value error,
# <message>" on the next line, and a Field(ge=1) bound as "Input should be greater than or equal to 1".
# ModelConfig's and VllmConfig's checks also read the model's files and the platform (a JSON decode error of a
# model's config, blind3/b3-037), so only the other classes' refusals say the settings are wrong by where they
# raise: 0.10+ keeps those two in config/model.py and config/vllm.py, read only when their refusal names one of
# vLLM's settings; 0.4-0.9's one config.py holds all the classes, so there only the checks' own functions count.
_CONFIG_FILE = re.compile(r"/vllm/(?:config/(?!model\.py|vllm\.py|__init__\.py)\w{1,64}\.py|engine/arg_utils\.py|"
                          r"platforms/\w{1,64}\.py)$")
_OLD_CONFIG_FILE = re.compile(r"/vllm/config\.py$")
_CHECK_FUNCS = re.compile(r"^(?:_verify_\w{1,64}|verify_with_\w{1,64}|__post_init__)$")
_VALIDATION = re.compile(r"ValidationError: \d{1,3} validation errors? for (?P<config>\w{1,64}Config)\b")
_READS_THE_MODEL = frozenset(("ModelConfig", "VllmConfig"))
# vLLM's settings classes whose names no other program a start runs uses for a pydantic class (not ModelConfig or
# VllmConfig, whose checks read the model too): their refusal reads so where a paste keeps no frame to say whose it
# is (blind101/b101-010: "1 validation error for ParallelConfig ... num_redundant_experts should be used with EPLB").
_VLLM_CONFIGS = frozenset(("ParallelConfig", "CacheConfig", "SchedulerConfig", "CompilationConfig", "PassConfig",
                           "SpeculativeConfig", "LoRAConfig", "MultiModalConfig", "StructuredOutputsConfig",
                           "KVTransferConfig", "ECTransferConfig", "EPLBConfig", "KVEventsConfig", "PoolerConfig",
                           "ObservabilityConfig", "AttentionConfig", "KernelConfig", "MambaConfig", "OffloadConfig"))


def _config_check(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
                  ctx: dict[str, Any]) -> Diagnosis | None:
    """usage_error from the last exception that is not a wrapper, when vLLM's settings checks raised it."""
    tb = next((t for t in reversed(tbs) if t.exception is not None and not WRAPPERS.search(lines[t.exception].text)),
              None)
    if tb is None or tb.exception is None:
        return _bare_validation(lines, signal, ctx) if not any(t.frames for t in tbs) else None
    text = lines[tb.exception].text
    m = _VALIDATION.search(text) if "validation error" in text else None
    if m is not None:
        if not any(IN_VLLM.search(f.path) for f in tb.frames):
            return None  # another program's config class (Ray Serve's LLMConfig, a user's) says nothing of vLLM's
        shown = tuple(cut(line.text) for line in lines[tb.exception:tb.exception + 3] if line.text.strip())
        if m.group("config") in _READS_THE_MODEL:
            # its checks read the model's files too: a refusal that names one of vLLM's settings is about the
            # settings ("Value error, Tiered MoE supports max_num_seqs 1 through 4", a patched vLLM's; blind21/b21-006)
            setting = _setting_named(" ".join(shown[1:]))
            if setting is None:
                return None
            shown = (*shown[:2], f"names vLLM's setting {setting}")
    elif tb.frames and (_CONFIG_FILE.search(tb.frames[-1].path) or (_OLD_CONFIG_FILE.search(tb.frames[-1].path) and
                                                                     _CHECK_FUNCS.match(tb.frames[-1].func))) \
            and (re.search(r"(?:^|[\s\]])ValueError: \S", text) or (
                # a check function's NotImplementedError (V0 0.5's "Pipeline parallelism is not supported yet with
                # multiprocessing.", blind62/b62-005), not a platform helper's ("Unsupported OS")
                "NotImplementedError: " in text and _CHECK_FUNCS.match(tb.frames[-1].func) is not None)):
        shown = (cut(text), f"raised in {tb.frames[-1].func} ({cut(tb.frames[-1].path)})")
    else:
        return None
    return Diagnosis("usage_error", BEFORE_START, {}, shown, signal, "config_check", ctx, confidence="medium",
                     template=SUPPORT_SOURCES["config_check"], stage_from=certainty.FRAMES)


def _bare_validation(lines: list[LogLine], signal: int | None, ctx: dict[str, Any]) -> Diagnosis | None:
    """usage_error from pydantic's refusal of one of vLLM's settings classes, in a paste with no traceback, as the
    last error of a start that never got ready."""
    i = next((k for k in range(len(lines) - 1, -1, -1) if "validation error" in lines[k].text), None)
    m = _VALIDATION.search(lines[i].text) if i is not None else None
    if i is None or m is None or m.group("config") not in _VLLM_CONFIGS or ready(lines):
        return None
    if not conditions.last_error(m.group(0), lines, i, {}):
        return None
    shown = tuple(cut(line.text) for line in lines[i:i + 3] if line.text.strip())
    return Diagnosis("usage_error", BEFORE_START, {}, shown, signal, "config_check", ctx, confidence="medium",
                     template=SUPPORT_SOURCES["config_check"], stage_from=certainty.NO_STAGE)


# Any file of vLLM's package: its argument parser's own checks live in vllm/utils.py (0.8) or vllm/utils/ (0.32).
_VLLM_FILE = re.compile(r"[/\\]vllm[/\\](?:[\w.-]{1,64}[/\\]){0,6}[\w.-]{1,64}\.py$")
# A flag an exception's message names.
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]{1,64}\b")
# A setting by its field name: two words or more, not a file name (generation_config.json), a dotted key or a path.
_SETTING = re.compile(r"(?<![\w./-])[a-z][a-z0-9]{1,30}(?:_[a-z0-9]{1,30}){1,6}(?![\w-]|\.\w)")


@cache
def _known_options() -> tuple[frozenset[str], frozenset[str]]:
    """Every option string and field name of the bundled option tables (an older log names an option since removed,
    --num-scheduler-steps)."""
    tables = [load_table(version) for version in table_versions()]
    return (frozenset(s for t in tables for s in t.by_string), frozenset(d for t in tables for d in t.by_dest))


def _setting_named(message: str) -> str | None:
    """One of vLLM's settings a message names by its field name, two words or more (max_num_seqs, not model)."""
    dests = _known_options()[1]
    return next((w for w in _SETTING.findall(message.partition(" [type=")[0]) if w in dests), None)


def _flag_check(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
                ctx: dict[str, Any]) -> Diagnosis | None:
    """usage_error from a paste's last exception when it is a ValueError that names one of vLLM's own options, with
    no frames, or vLLM's, to say where it was raised: a settings check telling the user which flag to change. vLLM
    0.32's config/*.py, engine/arg_utils.py and platforms/*.py raise about 70 such ValueErrors ("Use
    --enforce-eager.", "set `--allow-deprecated-quantization`"); platform forks do alike (tt-inference-server's "Set
    --max_model_len to 32768 or lower in vLLM.", blind6/b6-010). The flag must be in an option table, spelled whole;
    another program's traceback naming --model or --port is its own."""
    if ready(lines):
        return None
    at, last = next(((i, m) for i in range(len(lines) - 1, -1, -1) if (m := EXCEPTION_LINE.search(lines[i].text))),
                    (None, None))
    if at is None or last is None or last.group("exc") != "ValueError":
        return None
    frames = next((tb.frames for tb in tbs if tb.exception == at), ())
    if frames and not _VLLM_FILE.search(frames[-1].path):
        return None
    known = _known_options()[0]
    flag = next((f for f in _FLAG.findall(lines[at].text) if normalize_option_string(f) in known), None)
    if flag is None:
        return None
    return Diagnosis("usage_error", BEFORE_START, {}, (cut(lines[at].text), f"names vLLM's option {flag}"), signal,
                     "config_check", ctx, confidence="medium", template=SUPPORT_SOURCES["config_check"],
                     stage_from=certainty.MESSAGE)


_INSPECTION = re.compile(r"Error in inspecting model architecture '(?P<architecture>[\w.-]{1,128})'"
                         r"|Model architectures \[[^\]]{0,500}\] failed to be inspected")
# The inspection subprocess's own error, as vLLM relays its output: an import that fails there is the install's
_SUBPROCESS_IMPORT = re.compile(r"(?:ModuleNotFoundError|ImportError): \S")


# vLLM's API server turns SIGTERM into KeyboardInterrupt("terminated") (entrypoints/openai/api_server.py
# signal_handler, 0.4-0.33): the traceback shows where the start was when it was stopped.
_TERMINATED = re.compile(r"KeyboardInterrupt: terminated")
_HUB_CALL = re.compile(r"[/\\](?:huggingface_hub|transformers)[/\\]")
# A read from a socket: Python's ssl and socket, httpcore's and urllib3's streams.
_NETWORK_READ = re.compile(r"[/\\](?:ssl|socket)\.py$|[/\\](?:httpcore|urllib3|h11|anyio)[/\\]")


def _stopped_on_the_hub(lines: list[LogLine], tbs: list[logread.Traceback]) -> logread.Traceback | None:
    """A start stopped from outside (SIGTERM) while it waited for a Hugging Face Hub answer: the frames just
    inside vLLM's signal handler are a socket read under a huggingface_hub or transformers call (blind19/b19-003,
    a tokenizer's list_repo_tree blocked in an SSL read)."""
    for tb in reversed(tbs):
        if tb.exception is None or len(tb.frames) < 3 or not _TERMINATED.search(lines[tb.exception].text):
            continue
        inner = [f for f in tb.frames if f.func != "signal_handler"][-4:]
        if any(_NETWORK_READ.search(f.path) for f in inner) and any(_HUB_CALL.search(f.path) for f in tb.frames):
            return tb
    return None


# The readings of `supported` that rest on a warning a start may go on after (vLLM's own _C import warning): said
# only where the paste shows a failure or ends there (classify._lead_decides); the others rest on evidence that no
# start gets past.
WARNING_READINGS = frozenset({SUPPORT_SOURCES["vllm_c_undefined"]})


def supported(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
              ctx: dict[str, Any]) -> Diagnosis | None:
    """A class from supporting evidence: a warning that explains a failure the log shows without naming it."""
    download = any(f.func in _DOWNLOAD_FRAMES for tb in tbs for f in tb.frames)
    signature = signatures.library_signature(lines, tbs)
    if signature is not None:
        return raised_by_frame(lines, signature, "called from", "python_package", "library_signature", signal, ctx)
    patched = signatures.library_patch(lines, tbs)
    if patched is not None:
        return raised_by_frame(lines, patched[0], "patched in", patched[2], "library_patch", signal, ctx,
                               frame=patched[1])
    started = ready(lines)
    if not started:
        both = signatures.multiple_values(lines, tbs)
        if both is not None:
            shown = tuple(dict.fromkeys((cut(both[0].text), *last_errors(lines, tbs, 2))))
            return Diagnosis("version_mismatch", BEFORE_START, {}, shown, signal, both[1], ctx,
                             confidence="medium", template=SUPPORT_SOURCES["multiple_values"],
                             stage_from=certainty.MESSAGE)
        bound = next((line for line in lines
                      if "incompatible" in line.text and signatures.PYBIND.search(line.text)), None)
        if bound is not None:
            # the Python side (vLLM, a platform plugin) and the compiled library it calls are at different releases
            return Diagnosis("version_mismatch", BEFORE_START, {}, (cut(bound.text), *last_errors(lines, tbs, 2)),
                             signal, "python_package", ctx, confidence="medium",
                             template=SUPPORT_SOURCES["pybind_signature"], stage_from=certainty.MESSAGE)
    for i, line in enumerate(lines):
        if signatures.vllm_api_mismatch(lines, i):
            return Diagnosis("version_mismatch", BEFORE_START, {}, (cut(line.text), *last_errors(lines, tbs, 2)),
                             signal, "vllm_api", ctx, confidence="medium", template=SUPPORT_SOURCES["vllm_api"],
                             stage_from=certainty.MESSAGE)
    if not started and (stopped := _stopped_on_the_hub(lines, tbs)) is not None:
        hub = next(f for f in stopped.frames if _HUB_CALL.search(f.path))
        waited = (f"stopped (SIGTERM) while waiting for the Hugging Face Hub: {hub.func} ({cut(hub.path)})",
                  f"last frame: {stopped.frames[-2].func} ({cut(stopped.frames[-2].path)})")
        return Diagnosis("network", BEFORE_START, {}, waited, signal, "hub", ctx, confidence="medium",
                         template=SUPPORT_SOURCES["hub_stalled"], stage_from=certainty.FRAMES)
    why = _inspection_import(lines)
    if why is not None:
        # the subprocess's own error is an import that failed: the install, as the hint below says (blind155/b155-014:
        # torch's inductor importing triton on ppc64le, "'triton' is not a package")
        return Diagnosis("version_mismatch", BEFORE_START, {}, (cut(why.text), *last_errors(lines, tbs, 2)), signal,
                         "python_package", ctx, confidence="medium", template=SUPPORT_SOURCES["inspection_failed"],
                         stage_from=certainty.MESSAGE)
    for line in lines:
        if "inspect" in line.text and (m := _INSPECTION.search(line.text)):
            # vLLM's registry names the architecture it could not import; the cause is in its subprocess's output
            # (most often an install that does not import), which no rule read. vLLM raises "failed to be
            # inspected" only for an architecture it supports (registry.py _raise_for_unsupported, 0.6.4-0.33), and
            # real reports are labelled both ways (blind5/b5-006 unsupported_architecture, blind13/b13-015 and
            # blind37/b37-011 unknown): a candidate, not a class; the install, as the advice says, is the likelier.
            evidence = tuple(dict.fromkeys((cut(line.text), *last_errors(lines, tbs, 3))))
            return Diagnosis("unknown", BEFORE_START, {}, evidence, signal, "inspection_failed", ctx,
                             confidence="none", template=SUPPORT_SOURCES["inspection_failed"],
                             stage_from=certainty.MESSAGE,
                             hint=("version_mismatch", "vLLM supports the architecture but could not import its "
                                   "class in a subprocess: most often an install that does not import (torch, "
                                   "transformers or a kernel package of another version); the subprocess's own "
                                   "error, above vLLM's line when the log has it, says which"))

    for line in lines:
        if "free disk space" in line.text:
            m = _DISK_WARNING.search(line.text)
            if m:
                numbers = (numbers_of(m, "expected_file_mb", "free_disk_mb")
                           or {"free_disk_mb": float(m.group("free_mb"))})
                # Without the download's traceback, only a file that cannot fit in a start that never got
                # ready: huggingface_hub warns (and goes on) when statvfs may be wrong (llm-d #857).
                short = numbers.get("free_disk_mb", 1.0) < numbers.get("expected_file_mb", 0.0)
                if not download and (not short or started):
                    continue
                evidence = (*last_errors(lines, tbs, 3), f"supporting: {cut(line.text)}")
                return Diagnosis("disk_full", LOADING, numbers, evidence, signal, "download_warning", ctx,
                                 confidence="medium", template=certainty.DISK_WARNING_SOURCE,
                                 stage_from=certainty.FRAMES)
    if not started:
        return _usage_cut(lines, signal, ctx) or install.reading(lines, tbs, signal, ctx)
    return None


# argparse's usage text of vLLM's own parsers: "usage: vllm serve [model_tag] [options]" (0.10+), "usage: vllm serve
# <model_tag> [options]" (0.5-0.9), "usage: api_server.py [-h] ..." (the api_server modules); not vllm-guard's own
_USAGE = re.compile(r"^usage: (?:vllm(?: serve)?|vllm-(?!guard\b)[a-z]{1,32}|api_server\.py) [\[<]")


def _usage_cut(lines: list[LogLine], signal: int | None, ctx: dict[str, Any]) -> Diagnosis | None:
    """usage_error (medium) where a paste stops inside vLLM's usage text: argparse prints it before its error line
    and exit status 2, and --help would go on to its sections (blind125/b125-016, b125-017: the line naming the
    refused argument is past the excerpt's end)."""
    end = len(lines)
    while end and not lines[end - 1].text.strip():
        end -= 1
    for i in range(end - 1, max(-1, end - 200), -1):
        text = lines[i].text
        if _USAGE.match(text):
            said = "the paste stops inside vLLM's usage text, before the error line that names what it refused"
            return Diagnosis("usage_error", BEFORE_START, {}, (cut(text), said), signal, "usage_cut", ctx,
                             confidence="medium", template=SUPPORT_SOURCES["usage_cut"], stage_from=certainty.MESSAGE)
        if not text.startswith((" ", "\t")):  # the usage text's own lines are indented under its first
            return None
    return None


def _inspection_import(lines: list[LogLine]) -> LogLine | None:
    """The last import error between vLLM's first 'Error in inspecting model architecture' line (the subprocess's
    output it relays follows) and its last line of the inspection ('... failed to be inspected'); None when there
    is none."""
    marks = [i for i, line in enumerate(lines) if "inspect" in line.text and _INSPECTION.search(line.text)]
    if not marks or "Error in inspecting" not in lines[marks[0]].text:
        return None
    return next((lines[i] for i in range(marks[-1], marks[0], -1) if _SUBPROCESS_IMPORT.search(lines[i].text)), None)
