"""The model configs shipped with the guard (data/bundled-models.json), so `check` and `init` plan offline and for
gated models without a token: each a subset of the model's config.json with where it was read, and aliases of a
bundled base's shapes with their evidence (issue 27)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any


@cache
def _data() -> dict[str, Any]:
    return dict(json.loads(resources.files("vllm_guard").joinpath("data").joinpath("bundled-models.json").read_text()))


@cache
def entries() -> dict[str, Any]:
    """Bundled ids -> {config, source, weights_bytes?}; an alias (a model of a bundled base's shapes: an -Instruct
    model, or DiffusionGemma's one Gemma 4 backbone) gets its base's config with what its entry under "aliases"
    records as its own: max_position_embeddings, its architectures and model_type, its checkpoint's size."""
    data = _data()
    models = dict(data["models"])
    for alias, spec in (data.get("aliases") or {}).items():
        base = models[spec["base"]]
        config = dict(base["config"])
        for key in ("max_position_embeddings", "architectures", "model_type"):
            if key in spec:
                config[key] = spec[key]
        models[alias] = {"config": config, "source": spec["source"],
                         "weights_bytes": spec.get("weights_bytes", base.get("weights_bytes"))}
    return models


# Suffixes of common pre-quantized checkpoints (lower case) -> the quantization_config their config.json
# carries: Qwen's own -AWQ and -GPTQ-Int4/Int8 (4 or 8 bits, group 128), FP8 (Qwen, RedHatAI -FP8-dynamic),
# RedHatAI's compressed-tensors -quantized.w4a16 / -w8a16 (group 128). The variant keeps its base's
# architecture; its weight size is estimated in its own format (model_config.estimate_weights_bytes).
QUANTIZED_SUFFIXES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("-awq", {"quant_method": "awq", "bits": 4, "group_size": 128}),
    ("-gptq-int4", {"quant_method": "gptq", "bits": 4, "group_size": 128}),
    ("-gptq-int8", {"quant_method": "gptq", "bits": 8, "group_size": 128}),
    ("-fp8-dynamic", {"quant_method": "fp8"}),
    ("-fp8", {"quant_method": "fp8"}),
    ("-quantized.w4a16", {"quant_method": "compressed-tensors", "bits": 4, "group_size": 128}),
    ("-quantized.w8a16", {"quant_method": "compressed-tensors", "bits": 8, "group_size": 128}),
)


@cache
def _by_lower_name() -> dict[str, str]:
    """Lower-cased ids and bare names (after the owner) -> the bundled id; a name two owners share is left out."""
    index: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for model_id in entries():
        index[model_id.lower()] = model_id
        names.setdefault(model_id.lower().rsplit("/", 1)[-1], []).append(model_id)
    for name, ids in names.items():
        if len(ids) == 1:
            index.setdefault(name, ids[0])
    return index


def find(model: str) -> tuple[Mapping[str, Any], int | None] | None:
    """(config, the index's total bytes or None) of a bundled model by its id in any case; a quantized variant of
    one by its base plus its own format (its weights then estimated in that format)."""
    wanted = model.rstrip("/").lower()
    index = _by_lower_name()
    found = index.get(wanted)
    if found is not None:
        entry = entries()[found]
        return entry["config"], entry.get("weights_bytes")
    for suffix, quant in QUANTIZED_SUFFIXES:
        if wanted.endswith(suffix):
            base = wanted[: -len(suffix)]
            base_id = index.get(base) or index.get(base.rsplit("/", 1)[-1])
            if base_id is None:
                return None
            config = dict(entries()[base_id]["config"])
            config["quantization_config"] = dict(quant)
            return config, None
    return None


def closest(model: str) -> str | None:
    """The bundled id nearest a mistyped one (difflib, cutoff 0.8), or None."""
    names = _by_lower_name()
    close = difflib.get_close_matches(model.lower(), list(names), n=1, cutoff=0.8)
    return names[close[0]] if close else None


def models() -> list[str]:
    return sorted(entries())


def summary() -> list[tuple[str, str]]:
    """(id, what it is) for `vllm-guard models`: the architecture and, where bundled, the weight size."""
    out = []
    for model_id in models():
        entry = entries()[model_id]
        arch = ", ".join(entry["config"].get("architectures") or []) or entry["config"].get("model_type") or "?"
        weights = entry.get("weights_bytes")
        out.append((model_id, arch + (f", weights {weights / 2**30:,.2f} GiB" if weights else "")))
    return out
