"""Where in vLLM a pasted exception's message is raised: the raise sites of vLLM's start-up path in 15 releases
(0.4.3 to 0.34.0), read from their source by scripts/gen_raise_sites.py into vllm_guard/data/vllm-raise-sites.json.

A message is looked up by its literal head (the text before the first field vLLM fills in). A head found only in
vLLM's settings checks says the settings were refused, as those checks' frames say (fallback._config_check) when a
paste keeps them: `usage_error`, medium. Any other head is evidence of where the message comes from, said beside
an `unknown`. Pure: data in, data out; the table is read once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from vllm_guard.diagnose import certainty, logread, progress
from vllm_guard.diagnose.diagnosis import EXCEPTION_LINE, WRAPPERS, Diagnosis, cut, per_log, ready
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.markers import BEFORE_START
from vllm_guard.diagnose.rules import RULES

_KEY_CHARS = 24  # the generator keeps heads of at least this many characters
_CUT_MIN_CHARS = 40  # a message cut where the paste ends still names its head from this many characters


@dataclass(frozen=True)
class Site:
    head: str
    exception: str
    file: str
    function: str
    first: str  # the first and last of the releases read that raise it
    last: str

    def where(self) -> str:
        releases = self.first if self.first == self.last else f"{self.first}-{self.last}"
        return f"{self.function} ({self.file}, vLLM {releases})"


@cache
def _index() -> dict[str, tuple[Site, ...]]:
    path = resources.files("vllm_guard").joinpath("data").joinpath("vllm-raise-sites.json")
    raw = json.loads(path.read_text("utf-8"))
    versions, files = raw["versions"], raw["files"]
    index: dict[str, list[Site]] = {}
    for head, exc, file_i, func, first, last in raw["sites"]:
        site = Site(head, exc, files[file_i], func, versions[first], versions[last])
        index.setdefault(head[:_KEY_CHARS], []).append(site)
    return {key: tuple(sites) for key, sites in index.items()}


def sites_for(message: str) -> tuple[Site, ...]:
    """The raise sites whose head the message begins with (or, cut where a paste ends, begins the head)."""
    text = " ".join(message.split()).strip("`*")
    if len(text) < _KEY_CHARS:
        return ()
    return tuple(s for s in _index().get(text[:_KEY_CHARS], ())
                 if text.startswith(s.head) or (len(text) >= _CUT_MIN_CHARS and s.head.startswith(text)))


# vLLM's settings checks: the check functions (not helpers, not per-request validation) of the config classes but
# the two that also read the model's files (config/model.py, config/vllm.py; 0.4-0.9's single config.py), of the
# engine's arguments and the platforms, and vllm serve's check of its own flags.
_SETTINGS_FILE = re.compile(r"^vllm/(?:config/(?!model\.py|vllm\.py|__init__\.py|utils\.py)\w+\.py|config\.py|"
                            r"engine/arg_utils\.py|platforms/(?!interface\.py)\w+\.py|entrypoints/\w+/cli_args\.py)$")
# (pydantic's validators are validate_*; not the per-request validate_request, nor validate_environ)
_CHECK_FUNCS = re.compile(r"^(?:__post_init__|_?verify_\w+|_validate_\w+|validate_(?!request\b|environ\b)\w+|"
                          r"check_and_update_config|create_engine_config|validate_parsed_serve_args)$")
_SETTINGS_EXCEPTIONS = frozenset(("ValueError", "NotImplementedError", "TypeError"))


# Refusals whose cause is not the settings: the GPU or platform, a dtype or quantization it lacks, a package not
# installed or of another version, the model's files. Read in the site's head and in the pasted message (the part
# vLLM fills in may say it: "... is not supported with Compute Capability < 8.0").
_ANOTHER_CLASS = re.compile(r"(?i:quantiz|bitsandbytes|bfloat16|float16|capabilit|install|not available|not found|"
                            r"version|architecture|platform|device|checkpoint|weights|not implemented)"
                            # the platforms by name, whole words ("cudagraph", "output", "input" are not theirs)
                            r"|\b(?:GPUs?|CUDA|ROCm|TPU|XPU|HPU|NPU)\b")


@cache  # a site's answer never changes; the rules' patterns are many
def is_settings_check(site: Site) -> bool:
    """A refusal of the settings alone: raised by a settings check, and not one whose words name another class
    (its own or a rule's)."""
    return (site.exception in _SETTINGS_EXCEPTIONS and bool(_SETTINGS_FILE.match(site.file))
            and bool(_CHECK_FUNCS.match(site.function)) and not _ANOTHER_CLASS.search(site.head)
            and not any(r.cls != "usage_error" and r.pattern.search(site.head) for r in RULES))


# The last exception of a paste is near its end: a log of a million error lines none of which is an exception is not
# read whole for it.
_TAIL_LINES = 5000


def last_raised(lines: list[LogLine]) -> tuple[int, tuple[Site, ...]] | None:
    """The paste's last exception that is not one of vLLM's wrappers, and the raise sites of its message (a line
    wrapped after it is read with it); None when there is none. Worked out once per log."""
    return per_log(lines, _last_raised)


def _last_raised(lines: list[LogLine]) -> tuple[int, tuple[Site, ...]] | None:
    for i in range(len(lines) - 1, max(-1, len(lines) - 1 - _TAIL_LINES), -1):
        text = lines[i].text
        if "Error: " not in text and "Exception: " not in text:
            continue
        m = EXCEPTION_LINE.search(text[:logread.MAX_LINE_CHARS])
        if m is None or WRAPPERS.search(text):
            continue
        message = m.group("msg")
        nxt = logread.continuation(lines, i)
        sites = (sites_for(f"{message} {nxt.text.strip()}") if nxt is not None else ()) or sites_for(message)
        return i, sites
    return None


def settings_check(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
                   ctx: dict[str, Any]) -> Diagnosis | None:
    """usage_error when the paste's last exception is a message only vLLM's settings checks raise and the paste
    shows no frames of its own to say otherwise (a bare error line)."""
    if ready(lines):
        return None
    found = last_raised(lines)
    if found is None or not found[1] or not all(is_settings_check(s) for s in found[1]):
        return None
    at, sites = found
    body = logread.body(lines[at].text)
    if _ANOTHER_CLASS.search(body):
        return None
    message = body[body.find(sites[0].head):] if sites[0].head in body else body
    if any(tb.exception is not None and tb.frames and (tb.exception == at or message in lines[tb.exception].text)
           for tb in tbs):
        return None  # its frames decide (fallback._config_check), not its words, also where it is logged again
    if progress.progress(lines).final != BEFORE_START:
        return None  # the start got past its settings: the stage the log shows says more than the words
    return Diagnosis("usage_error", BEFORE_START, {}, (cut(lines[at].text), f"raised by {sites[0].where()}"), signal,
                     "config_check", ctx, confidence="medium", template=_SOURCE, stage_from=certainty.MESSAGE)


_SOURCE = ("vLLM's settings checks' own messages, looked up among the raise sites of 15 releases (vLLM 0.4.3-0.34.0, "
           "vllm_guard/data/vllm-raise-sites.json from scripts/gen_raise_sites.py)")


def where_raised(lines: list[LogLine]) -> str | None:
    """Where vLLM raises the paste's last exception, for the evidence of an `unknown`; None when it is not vLLM's."""
    found = last_raised(lines)
    if found is None or not found[1]:
        return None
    sites = found[1]
    others = len({s.where() for s in sites}) - 1
    more = "" if others < 1 else " and in one other place" if others == 1 else f" and in {others} other places"
    return f"vLLM raises this message in {sites[0].where()}{more}"
