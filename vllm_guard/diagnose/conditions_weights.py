"""Conditions of the rules that read vLLM's list of weights a checkpoint did not initialise ("Following weights were
not initialized from checkpoint: {...}"): which part of a model the names are. Part of the rules' conditions
(conditions.py), kept apart to keep that file readable. Pure."""

from __future__ import annotations

import re
from typing import Any

from vllm_guard.diagnose.logread import LogLine

# The prefixes of a multimodal model's towers in vLLM's classes (qwen*_vl.py's visual, gemma3_mm.py's
# vision_tower, llava's vision_tower and multi_modal_projector, gemma4_mm.py's embed_vision and audio_tower, mllama4's
# vision_model).
_TOWER_WEIGHT = re.compile(r"(?:model\.)?(?:visual|vision_tower|vision_model|multi_modal_projector|embed_vision|"
                           r"audio_tower|audio_model|embed_audio)\.")
_MISSING_NAMES = re.compile(r"'([\w.]{1,300})'")


def _missing_names(line: str, lines: list[LogLine], i: int) -> list[str]:
    """The weight names vLLM's set lists, read on to its closing brace where a paste wrapped the set over lines
    (blind89/b89-003: a line of two names each)."""
    listed = line[line.find("checkpoint: {"):]
    names = _MISSING_NAMES.findall(listed)
    if "}" in listed:
        return names
    for after in lines[i + 1:i + 200]:
        part = after.text.split("}", 1)[0]
        names += [n for n in _MISSING_NAMES.findall(part) if n not in names]
        if "}" in after.text:
            break
    return names


def only_tower_weights(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """vLLM's 'Following weights were not initialized from checkpoint: {...}' lists only a vision or audio tower's
    weights: a checkpoint without the tower (a text-only export of a multimodal architecture)."""
    names = _missing_names(line, lines, i)
    return bool(names) and all(_TOWER_WEIGHT.match(n) for n in names)


# The parts of a multi-token-prediction (MTP) draft layer in vLLM's *_mtp.py classes (deepseek_mtp.py's enorm, hnorm,
# eh_proj and shared_head; glm4_moe_mtp.py's and glm_ocr_mtp.py's mtp_block; qwen3_next_mtp.py's and qwen3_5_mtp.py's
# "mtp." prefix; mimo_mtp.py's mtp_layers).
_MTP_PART = re.compile(r"(?:^|\.)(?:enorm|hnorm|eh_proj|shared_head|mtp_block)\.|(?:^|\.)mtp(?:_layers)?\.")
_LAYER_INDEX = re.compile(r"\blayers\.(\d{1,4})\.")


def only_mtp_weights(line: str, lines: list[LogLine], i: int, ctx: dict[str, Any]) -> bool:
    """vLLM's 'Following weights were not initialized from checkpoint: {...}' lists only an MTP draft layer's weights:
    each name is an MTP part, or sits in a layer whose other names are (the draft's own attention and MLP)."""
    names = [n for n in _missing_names(line, lines, i) if n not in _MTP_SHARED]
    mtp_layers = {m.group(1) for n in names if _MTP_PART.search(n) and (m := _LAYER_INDEX.search(n))}
    return bool(names) and any(_MTP_PART.search(n) for n in names) and all(
        _MTP_PART.search(n) or ((m := _LAYER_INDEX.search(n)) is not None and m.group(1) in mtp_layers) for n in names)


# The draft's own copy of the embedding, which its loader names at the top level (deepseek_mtp.py and
# glm4_moe_mtp.py of vLLM 0.11-0.34, glm_ocr_mtp.py of 0.20-0.34, _rewrite_spec_layer_name: shared_weight_names =
# ["embed_tokens"]); in a set that names an MTP part it is the draft's (blind138/b138-016: GLM-OCR's export without
# its layer 16)
_MTP_SHARED = frozenset({"model.embed_tokens.weight"})
