"""`vllm serve --config FILE.yaml`: the one doorway to YAML.

vLLM reads the file with ``yaml.safe_load`` (``FlexibleArgumentParser.load_config_file``,
0.32 and 0.33): a mapping of long option names to values, only ``.yaml`` and ``.yml``
files. The guard reads it the same way so that every value in it takes part in the
preflight, and hands vLLM the same ``--config FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vllm_guard.errors import ProfileError

CONFIG_SUFFIXES = ("yaml", "yml")


class ConfigFileError(ProfileError):
    """A --config file vLLM would refuse or cannot read (exit 3, like an invalid profile)."""


def read_config(path: str) -> list[tuple[str, Any]]:
    """The file's (key, value) pairs in order, as vLLM's load_config_file sees them.

    Raises:
        ConfigFileError: not .yaml/.yml, unreadable, not YAML, or not a mapping of names.
    """
    import yaml

    from vllm_guard.safefile import PROFILE_MAX_BYTES, FileProblem, read_limited

    extension = path.rsplit(".", 1)[-1]
    if extension not in CONFIG_SUFFIXES:
        raise ConfigFileError(f"--config {path}: vLLM reads only .yaml or .yml files, not .{extension}",
                              hint="rename the file, or give its options on the command line")
    try:
        data = yaml.safe_load(read_limited(Path(path), PROFILE_MAX_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ConfigFileError(f"--config {path}: no such file",
                              hint="vLLM reads the path relative to its working directory, as the guard does"
                              ) from None
    except FileProblem as e:
        raise ConfigFileError(f"--config {path}: cannot read it: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigFileError(f"--config {path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        raise ConfigFileError(f"--config {path}: invalid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigFileError(f"--config {path}: expected a mapping of option names to values, "
                              f"got {type(data).__name__}", hint="port: 8000\ntensor-parallel-size: 2")
    items = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise ConfigFileError(f"--config {path}: option names are strings, got {key!r}")
        items.append((key, value))
    return items


def dump_documents(documents: list[dict[str, Any]]) -> str:
    """YAML documents separated by ``---`` (the Kubernetes manifest of `vllm-guard manifest`), keys in order."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # every object spelled out: no &id001 / *id001
            return True

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        # A multi-line string (the profile in its ConfigMap) as a literal block, readable as written.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    _Dumper.add_representer(str, text)
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
