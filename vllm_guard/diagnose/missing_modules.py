"""An import that found nothing as the reading of a start that names no decisive message: an installed package's
(or vLLM's own) import of a module not installed, where a traceback shows who imported it, and a paste of Python's
line alone. Pure."""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose import certainty, conditions, logread, progress
from vllm_guard.diagnose.catalogue_support import SUPPORT_SOURCES
from vllm_guard.diagnose.diagnosis import WRAPPERS, Diagnosis, cut, per_log, ready, skipped_plugin_lines
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.markers import BEFORE_START

# Where an installed package's code raised it: a user's own script calling its own function wrongly is a bug there.
INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
# vLLM's own package in a frame's path (not a framework's module that is named vllm, "xinference/model/llm/vllm/").
IN_VLLM = re.compile(r"/vllm/(?:v1|engine|entrypoints|model_executor|transformers_utils|worker|executor|distributed|"
                     r"platforms|attention|multimodal|config|lora|compilation|inputs|tokenizers)(?:/|\.py$)")
# An installed package's own code, or a vLLM platform plugin's package (often an editable install from a source
# tree, not under site-packages): the plugins by name, not any folder called vllm_something (a user's vllm_demo/).
PLUGIN_PACKAGE = re.compile(r"[/\\](?:vllm_(?:ascend|omni|gaudi|spyre|rbln|metax|kunlun|mlu|musa)|tpu_inference)[/\\]")
# Python's own words for an import that finds nothing. Not vLLM itself (vLLM not installed in the environment that
# ran, or a module of it: rules_versions.py's vllm_module) and not transformers' dynamic-module package for remote
# code (a cache being written by another process, not a missing install).
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>(?!vllm(?:\.|'|$)|transformers_modules\b)"
                        r"[A-Za-z_][\w.]{0,200})'")


def _package_missing(lines: list[LogLine], tbs: list[logread.Traceback],
                     reached: progress.Progress) -> logread.Traceback | None:
    """The start's last error is an installed package importing a module that is not installed: a dependency its
    install left out (xgrammar's triton on a TPU host, blind27/b27-008), or a plugin's compiled part not built
    (vllm-ascend's custom_ops, blind23/b23-005), or vLLM's own import of an optional dependency a setting asks for
    (VLLM_USE_MODELSCOPE without modelscope, from a source tree: blind92/b92-002). A user's own script importing
    what it lacks is not read."""
    tb = next((t for t in reversed(tbs) if t.exception is not None and not WRAPPERS.search(lines[t.exception].text)),
              None)
    if tb is None or tb.exception is None or not tb.frames or "No module named" not in lines[tb.exception].text:
        return None
    importer = tb.frames[-1].path
    m = _NO_MODULE.search(lines[tb.exception].text)
    if m is None or not (INSTALLED.search(importer) or PLUGIN_PACKAGE.search(importer) or IN_VLLM.search(importer)):
        return None
    # an import that a library caught and went on from is not the failure when another error follows (the same
    # message relayed again, Ray's "[repeated 7x across cluster]", is not another), nor when vLLM logged it as a
    # plugin it skipped, nor when the start's progress lines went on past it
    if not conditions.last_error(m.group(0), lines, tb.exception, {}):
        return None
    if tb.exception in per_log(lines, skipped_plugin_lines):  # the skipped plugin's traceback, or one chained to it
        return None
    return None if went_on(lines, tb.exception, m.group(0)) or reached.final != reached.at[tb.exception] else tb


def _bare_missing(lines: list[LogLine], tbs: list[logread.Traceback], reached: progress.Progress) -> int | None:
    """The index of Python's 'No module named X' line where the log keeps no frame at all (a paste of the line
    alone: blind91/b91-006, b91-015) and nothing failed or went on after it; None otherwise. With frames, the framed
    reading decides who imported it."""
    if any(tb.frames for tb in tbs):
        return None
    i = next((k for k in range(len(lines) - 1, -1, -1) if "No module named" in lines[k].text), None)
    if i is None or (m := _NO_MODULE.search(lines[i].text)) is None:
        return None
    if not conditions.last_error(m.group(0), lines, i, {}) or i in per_log(lines, skipped_plugin_lines):
        return None
    # no stage marks progress before the engine starts: a record after it that is no error (the banner, the engine's
    # set-up, a rank's or Ray's waiting) is the start going on, as is any progress past its stage
    return None if went_on(lines, i, m.group(0)) or reached.final != reached.at[i] else i


def went_on(lines: list[LogLine], i: int, said: str) -> bool:
    """A log record of the same process after line i that is no error (vLLM's INFO, WARNING or DEBUG: the banner,
    the engine's set-up, Ray's waiting), other than the same words again. Another process waiting is what one rank's
    failure leaves behind (the others wait on it), and a shell's or a container's report of the exit is not the start
    going on (blind27/b27-008: zsh's "[1] 902018 killed vllm serve ...")."""
    proc = lines[i].proc
    return any(after.proc == proc and after.text.startswith(GOING_ON) and said not in after.text
               for after in lines[i + 1:])


GOING_ON = ("INFO", "WARNING", "DEBUG")


def package_missing(lines: list[LogLine], tbs: list[logread.Traceback], reached: progress.Progress,
                    signal: int | None, ctx: dict[str, Any]) -> Diagnosis | None:
    """version_mismatch (medium) when an import of a module not installed ended the start: by an installed package
    or vLLM itself where the traceback shows it, or Python's line alone where the paste keeps nothing else."""
    missing = _package_missing(lines, tbs, reached)  # before ready(): a log without the import costs nothing
    if missing is not None and not ready(lines):
        return raised_by_frame(lines, missing, "imported by", "package_missing", "package_missing", signal, ctx)
    bare = _bare_missing(lines, tbs, reached)
    if bare is None or ready(lines):
        return None
    return Diagnosis("version_mismatch", reached.final, {}, (cut(lines[bare].text),), signal, "module_missing", ctx,
                     confidence="medium", template=SUPPORT_SOURCES["module_missing"],
                     stage_from=certainty.PROGRESS if reached.final != BEFORE_START else certainty.NO_STAGE)


def raised_by_frame(lines: list[LogLine], tb: logread.Traceback, how: str, detail: str, source: str,
                    signal: int | None, ctx: dict[str, Any], frame: logread.Frame | None = None) -> Diagnosis:
    """version_mismatch (medium) from a traceback's exception and the installed code whose frame raised it (or
    ``frame``, where the last frames are a helper's)."""
    frame, raised = frame or tb.frames[-1], (cut(lines[tb.exception].text),) if tb.exception is not None else ()
    shown = (*raised, f"{how} {frame.func} ({cut(frame.path)})")
    return Diagnosis("version_mismatch", BEFORE_START, {}, shown, signal, detail, ctx, confidence="medium",
                     template=SUPPORT_SOURCES[source], stage_from=certainty.FRAMES)
