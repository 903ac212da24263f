"""The only module that imports `huggingface_hub`: config.json and weight sizes; the weights only when
`serve` fetches them before vLLM starts (``download_snapshot``, guard.download).

Sources, in order: a local directory; the local Hugging Face cache (offline);
the Hub (config.json and safetensors metadata only); the bundled facts of
popular models. The result says which source answered.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from vllm_guard.errors import GuardError
from vllm_guard.exit_codes import ExitCode
from vllm_guard.facts.model import ModelFacts
from vllm_guard.probes import bundled, model_config
from vllm_guard.safefile import MODEL_JSON_MAX_BYTES, FileProblem, open_regular, read_limited

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
# safetensors dtype names -> bytes per element (safetensors format spec).
SAFETENSORS_DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2,
                           "I16": 2, "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1}
HUB_CONNECT_TIMEOUT_S = 2.0


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def probe_model(
    model: str,
    *,
    revision: str | None,
    environ: Mapping[str, str],
    cache_dir: str,
    disable_sliding_window: bool = False,
) -> ModelFacts:
    """Gather model facts from the first source that knows the model; never raises for an unknown model."""
    notes: list[str] = []
    hub_notes: list[str] = []  # said only when nothing else answered: then they are why the facts are unknown
    offline = _truthy(environ.get("HF_HUB_OFFLINE"))
    found = _from_local_dir(model) or _from_cache(model, revision, cache_dir)
    if found is None and not offline and _looks_like_repo_id(model):
        found = _from_hub(model, revision, environ, cache_dir, hub_notes)
    if found is None:
        found = _from_bundled(model)
    if found is None:
        return ModelFacts(model=model, source="unknown", notes=tuple(unknown_model_notes(model, offline, hub_notes)))
    source, config, weights, weights_source, weights_local = found
    fields = model_config.normalize(config, disable_sliding_window=disable_sliding_window)
    if weights is None:
        weights = model_config.estimate_weights_bytes(fields, config)
        weights_source = "estimate" if weights is not None else None
        if weights is not None:
            notes.append("weight size estimated from config.json (no safetensors metadata found)")
    fields["notes"] = tuple(notes) + tuple(fields["notes"])
    return ModelFacts(model=model, source=source, weights_bytes=weights, weights_source=weights_source,
                      weights_local=weights_local, **fields)


_Found = tuple[str, Mapping[str, Any], "int | None", "str | None", "bool | None"]


def looks_like_path(model: str) -> bool:
    """A local path as written (/models/x, ./x, ~/x): a Hub id is OWNER/NAME and never starts like these."""
    return model.startswith(("/", "./", "../", "~")) or model in (".", "..")


def unknown_model_notes(model: str, offline: bool, hub_notes: list[str]) -> list[str]:
    """Why nothing is known about a model, in the terms of where the guard looked, and the way out."""
    if looks_like_path(model):
        return [f"{model}: no such directory (a local model is a directory holding config.json)"]
    where = ["not a local directory", "not in the Hugging Face cache"]
    if offline:
        where.append("HF_HUB_OFFLINE=1: the Hub was not asked")
    elif hub_notes:
        where += hub_notes
    where.append("not among the bundled models")
    notes = ["model facts unknown: " + ", ".join(where)]
    close = bundled.closest(model)
    if close:
        notes.append(f"did you mean {close}?")
    notes.append("without the Hub, a directory holding just the model's config.json (and "
                 "model.safetensors.index.json, for the weight size) works as MODEL; `vllm-guard models` lists "
                 "the bundled models")
    return notes


def _looks_like_repo_id(model: str) -> bool:
    parts = model.split("/")
    return 1 <= len(parts) <= 2 and all(parts) and not model.startswith((".", "~"))


def _read_json(path: Path) -> Any:
    """A model's JSON file (config.json, the safetensors index); None when absent or not JSON.

    Raises:
        GuardError: the file is a FIFO, a device, a directory or larger than any real one (exit 4): vLLM
            would hang or fail on it too, and guessing past it would hide the problem.
    """
    try:
        return json.loads(read_limited(path, MODEL_JSON_MAX_BYTES).decode("utf-8"))
    except FileProblem as e:
        raise GuardError(f"cannot read the model's {path.name}: {e}",
                         hint=f"vLLM reads it too: it must be a regular JSON file of at most "
                         f"{MODEL_JSON_MAX_BYTES // 2**20} MiB; download the model again "
                         "(huggingface-cli download MODEL)", exit_code=ExitCode.PREFLIGHT_FAILED) from None
    except (OSError, ValueError, RecursionError):
        return None


def _from_local_dir(model: str) -> _Found | None:
    root = Path(model).expanduser()
    try:
        is_dir = root.is_dir()
    except OSError:  # ENAMETOOLONG, EACCES on a parent: not a directory the guard can read
        return None
    config = _read_json(root / "config.json") if is_dir else None
    if not isinstance(config, dict):
        return None
    index = _read_json(root / INDEX_FILE)
    weights: int | None = None
    source: str | None = None
    if isinstance(index, dict):
        weights = _index_total(index)
        source = "index" if weights is not None else None
        files = _weight_files(index)
        local = bool(files) and all((root / f).is_file() for f in files)
    else:
        shards = sorted(root.glob("*.safetensors"))
        sizes = [safetensors_data_bytes(p) for p in shards]
        if shards and all(s is not None for s in sizes):
            weights, source = sum(s for s in sizes if s is not None), "safetensors"
        elif bins := sorted(root.glob("*.bin")):
            weights, source = sum(p.stat().st_size for p in bins), "files"
        local = bool(shards) or source == "files"
    return "local", config, weights, source, local


def _weight_files(index: Mapping[str, Any]) -> set[str]:
    weight_map = index.get("weight_map")
    return {f for f in weight_map.values() if isinstance(f, str)} if isinstance(weight_map, dict) else set()


def _index_total(index: Mapping[str, Any]) -> int | None:
    metadata = index.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return int(total) if isinstance(total, (int, float)) and total > 0 else None


def safetensors_data_bytes(path: Path) -> int | None:
    """Bytes of tensor data in a .safetensors file, from its header alone (format: u64 length + JSON)."""
    try:
        with open_regular(path) as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if length > 100 * 2**20:
                return None
            header = json.loads(f.read(length))
    except (OSError, ValueError, struct.error, FileProblem):
        return None
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    return max(ends) if ends else 0


def _cache_holds(model: str, cache_dir: str | None) -> bool:
    """Whether the Hugging Face cache may hold this model repo: False only when it has no ``models--ORG--NAME``
    folder, the layout huggingface_hub writes (``file_download.repo_folder_name``, stable since 0.10). Then
    nothing of the repo is cached, and huggingface_hub (about 0.1 s to import) is not needed to say so. With no
    cache directory given, huggingface_hub's own default decides."""
    if cache_dir is None:
        return True
    try:
        return (Path(cache_dir) / ("models--" + model.replace("/", "--"))).is_dir()
    except (OSError, ValueError):  # a path too long for the file system, a NUL byte: nothing cached there
        return False


def _from_cache(model: str, revision: str | None, cache_dir: str) -> _Found | None:
    if not _looks_like_repo_id(model) or not _cache_holds(model, cache_dir):
        return None
    from huggingface_hub import try_to_load_from_cache

    def cached(name: str) -> Path | None:
        try:
            hit = try_to_load_from_cache(model, name, cache_dir=cache_dir, revision=revision)
        except (ValueError, OSError):  # an id huggingface_hub rejects: not in the cache
            return None
        return Path(hit) if isinstance(hit, str) else None

    config_path = cached("config.json")
    config = _read_json(config_path) if config_path else None
    if not isinstance(config, dict):
        return None
    weights: int | None = None
    source: str | None = None
    local: bool | None = False
    index_path = cached(INDEX_FILE)
    index = _read_json(index_path) if index_path else None
    if isinstance(index, dict):
        weights = _index_total(index)
        source = "index" if weights is not None else None
        files = _weight_files(index)
        local = bool(files) and all(cached(f) is not None for f in files)
    elif single := cached(SINGLE_FILE):
        weights, source, local = safetensors_data_bytes(single), "safetensors", True
    return "cache", config, weights, source, local


def _hub_reachable(environ: Mapping[str, str]) -> bool:
    """A quick TCP connect, so an offline machine answers in milliseconds, not after the Hub client's retries."""
    endpoint = environ.get("HF_ENDPOINT") or "https://huggingface.co"
    url = urlparse(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        import socket  # only when the Hub is asked: the offline check never opens one

        with socket.create_connection((url.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def _from_hub(model: str, revision: str | None, environ: Mapping[str, str], cache_dir: str,
              notes: list[str]) -> _Found | None:
    if not _hub_reachable(environ):
        notes.append("the Hugging Face Hub is not reachable from here")
        return None
    from huggingface_hub import get_safetensors_metadata, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, NotASafetensorsRepoError

    token = environ.get("HF_TOKEN") or None
    try:
        config_path = hf_hub_download(model, "config.json", revision=revision, cache_dir=cache_dir, token=token)
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        reason = {401: "needs a token (HF_TOKEN)", 403: "is gated: accept its licence on the Hub",
                  404: "was not found"}.get(status or 0, f"failed ({e.__class__.__name__})")
        notes.append(f"the Hub: {model} {reason}")
        return None
    except (OSError, ValueError) as e:
        notes.append(f"the Hub: could not read config.json ({e.__class__.__name__})")
        return None
    config = _read_json(Path(config_path))
    if not isinstance(config, dict):
        return None
    weights: int | None = None
    try:
        meta = get_safetensors_metadata(model, revision=revision, token=token)
        counts = meta.parameter_count
        weights = sum(n * SAFETENSORS_DTYPE_BYTES.get(dtype, 2) for dtype, n in counts.items())
    except (NotASafetensorsRepoError, HfHubHTTPError, OSError, ValueError):
        notes.append("the Hub has no safetensors metadata for this model")
    return "hub", config, weights, "hub-metadata" if weights else None, False


def _from_bundled(model: str) -> _Found | None:
    found = bundled.find(model)
    if found is None:
        return None
    config, weights = found
    return "bundled", config, weights, "index" if weights else None, None


def readable_here(model: str, revision: str | None, cache_dir: str, *, offline: bool) -> tuple[bool | None, str]:
    """Whether vLLM on this machine can read the model without downloading it, and where from.

    True: a local directory with config.json, or config.json in the Hugging Face cache. False: a local
    path that is not there, or a Hub id missing from the cache while HF_HUB_OFFLINE is set. None: a
    Hub id that vLLM would download here (needs the network, and HF_TOKEN for a gated model).
    """
    path = Path(model).expanduser()
    if not _looks_like_repo_id(model) or path.is_dir():
        if (path / "config.json").is_file():
            return True, f"local directory {path}"
        return False, f"{path} is not a directory with config.json here"
    hit = None
    if _cache_holds(model, cache_dir):
        from huggingface_hub import try_to_load_from_cache

        try:
            hit = try_to_load_from_cache(model, "config.json", cache_dir=cache_dir, revision=revision)
        except (ValueError, OSError):
            hit = None
    if isinstance(hit, str):
        return True, f"Hugging Face cache {cache_dir}"
    if offline:
        return False, f"not in the Hugging Face cache {cache_dir}, and HF_HUB_OFFLINE is set"
    return None, f"not in the Hugging Face cache {cache_dir}: vLLM would download it there"


def download_snapshot(model: str, revision: str | None, cache_dir: str, environ: Mapping[str, str], *,
                      allow: tuple[str, ...], ignore: tuple[str, ...], bars: bool) -> str:
    """Fetch the repository's files into the cache vLLM reads (the same ``cache_dir``), and return its path.

    ``bars``: huggingface_hub's own tqdm bars (on a terminal); off one the caller writes lines instead.

    Raises:
        GuardError: what the Hub answered (a token needed, a gated or missing repository, no network).
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    if not bars:
        disable_progress_bars()
    try:
        path = snapshot_download(model, revision=revision, cache_dir=cache_dir, token=environ.get("HF_TOKEN") or None,
                                 allow_patterns=list(allow), ignore_patterns=list(ignore))
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        reason = {401: "needs a token (HF_TOKEN)", 403: "is gated: accept its licence on the Hub",
                  404: "was not found"}.get(status or 0, f"failed ({e.__class__.__name__})")
        raise GuardError(f"downloading {model}: the Hub says it {reason}") from None
    except (OSError, ValueError) as e:  # no network, a full disk, an offline flag set underneath
        raise GuardError(f"downloading {model} failed: {e.__class__.__name__}: {str(e)[:300]}") from None
    finally:
        if not bars and not was_disabled:
            enable_progress_bars()
    return str(path)
