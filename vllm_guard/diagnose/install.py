"""Pure: an install that does not fit, read from what vLLM logs as it imports, in a start that never got ready and
names no decisive failure (fallback.supported's last readings): no platform and the reason the log gives for it, and
vLLM's own warning that its compiled extension did not load.
"""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose import certainty, logread
from vllm_guard.diagnose.catalogue_support import SUPPORT_SOURCES
from vllm_guard.diagnose.diagnosis import EXCEPTION_LINE, WRAPPERS, Diagnosis, cut, last_errors
from vllm_guard.diagnose.logread import MAX_LINE_CHARS, WRAPPED_PREFIXED_MIN, LogLine
from vllm_guard.diagnose.markers import BEFORE_START

# vLLM's warning when its compiled extension does not load (vllm-ascend's for its kernels alike), for an undefined
# symbol or a CUDA library of the build's own that is not there (libcudart, libcublas: a CUDA build on a machine
# without that CUDA); not macOS's "symbol not found in flat namespace" of a local build, a platform's missing
# module, nor the driver's libcuda.so.1 (no GPU given to the process: read first, in `reading`).
_C_UNDEFINED = re.compile(r"Failed to import (?:from vllm\._(?:core_)?C with ImportError\(|vllm_ascend_C:).{0,1000}?"
                          r"(?:undefined symbol|lib(?:cudart|cublas|cublasLt|nvrtc)\.so\.\d{1,3}: cannot open shared "
                          # torch's own GPU library: a ROCm build of vLLM under a CUDA torch or the reverse (b19-001)
                          r"object file|lib(?:torch|c10)_(?:hip|cuda)\.so: cannot open shared object file"
                          # a wheel built for a newer C library than the OS has (blind84/b84-001: Ubuntu 20.04)
                          r"|version `GLIBC_[\d.]{1,8}' not found"
                          # vllm-ascend's own kernels library, not built or not on the loader's path (blind151/b151-001:
                          # its ops then missing, "'_OpNamespace' '_C_ascend' object has no attribute")
                          r"|libvllm_ascend\w{0,40}\.so: cannot open shared object file)")

# vLLM 0.10+ found no platform, and the log says why: the NVIDIA driver's own library is not there (no GPU given to the
# process: a container without the NVIDIA runtime, a pod without a GPU), or vLLM's package metadata is not (its
# platform plugins ask importlib.metadata for its version, platforms/__init__.py vllm_version_matches_substr: a source
# tree or a fork's package that does not install as "vllm"; blind121/b121-002, b121-003, Pascal builds)
_NO_PLATFORM_BECAUSE = (("libcuda.so.1: cannot open shared object", "too_few_gpus", "no_gpu", "no_driver"),
                        ("The vLLM package was not found, so its version could not be inspected", "version_mismatch",
                         "vllm_metadata", "vllm_metadata"))


def reading(lines: list[LogLine], tbs: list[logread.Traceback], signal: int | None,
            ctx: dict[str, Any]) -> Diagnosis | None:
    """version_mismatch or too_few_gpus (medium) from vLLM's import-time warnings, or None."""
    no_platform = _said(lines, "No platform detected, vLLM is running on UnspecifiedPlatform")
    for words, cls, detail, source in _NO_PLATFORM_BECAUSE:
        why = _said(lines, words) if no_platform is not None else None
        if why is not None and no_platform is not None:
            return Diagnosis(cls, BEFORE_START, {}, (cut(no_platform), cut(why), *last_errors(lines, tbs, 2)),
                             signal, detail, ctx, confidence="medium", template=SUPPORT_SOURCES[source],
                             stage_from=certainty.MESSAGE)
    for line in lines:
        if "Failed to import" in line.text and _C_UNDEFINED.search(line.text) and not _raised_else(lines, tbs):
            # vLLM's own warning (_custom_ops.py, 0.4-0.33) and it goes on, but an undefined symbol means the
            # extension that is there was built for another torch: in a start that failed with no decisive
            # message, the likeliest cause (blind3/b3-020, blind4/b4-029, blind8/b8-023).
            detail = "glibc" if "GLIBC_" in line.text else "extension_abi"
            return Diagnosis("version_mismatch", BEFORE_START, {}, (cut(line.text), *last_errors(lines, tbs, 2)),
                             signal, detail, ctx, confidence="medium",
                             template=SUPPORT_SOURCES["vllm_c_undefined"], stage_from=certainty.MESSAGE)
    return None


# What a start without vLLM's compiled ops raises when it calls one: the op's namespace, a symbol, an import, and
# xformers' refusal when its own extensions, built for the same other torch, did not load ("No operator found for
# `memory_efficient_attention_forward`", the first call of a V0 profile run for many models)
_OPS_FAILURE = re.compile(r"_C\b|_OpNamespace|symbol|ImportError|ModuleNotFoundError|OSError|AttributeError"
                          r"|No operator found for")


def _raised_else(lines: list[LogLine], tbs: list[logread.Traceback]) -> bool:
    """A traceback that ends in an exception of its own, not vLLM's wrappers and nothing a missing compiled op
    raises: the start failed there, whatever the _C warning before it (blind116/b116-002: vLLM 0.11's CPU worker
    parsing lscpu's output, 'json.decoder.JSONDecodeError', under WSL)."""
    for tb in tbs:
        if tb.exception is None:
            continue
        text = lines[tb.exception].text[:MAX_LINE_CHARS]
        if EXCEPTION_LINE.search(text) and not WRAPPERS.search(text) and not _OPS_FAILURE.search(text):
            return True
    return False


def _said(lines: list[LogLine], words: str) -> str | None:
    """The line that says these words, or the line and its continuation (logread.continuation; the line's start is
    the phrase's, so a shorter line counts as wrapped) a terminal wrapped them over, rejoined (blind121/b121-003 at
    80 columns: a review's finding)."""
    for i, line in enumerate(lines):
        if words in line.text:
            return line.text
        if words[:12] in line.text and (nxt := logread.continuation(lines, i, WRAPPED_PREFIXED_MIN)) is not None:
            for joined in (line.text + nxt.text, f"{line.text} {nxt.text}"):
                if words in joined:
                    return joined
    return None
