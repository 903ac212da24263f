"""Values the guard suggests, spelled so they can be pasted: TOML for a profile, a flag for a command line.

Python's ``str(True)`` is ``True``, which is not TOML; tomli-w writes what a profile's parser reads back.
"""

from __future__ import annotations

from typing import Any

import tomli_w


def toml_value(value: Any) -> str:
    """``true``, ``0.85``, ``"fp8"``, ``[0, 1]``: the value as it is written on the right of ``=`` in a profile
    (one line: tomli-w writes arrays over several)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return tomli_w.dumps({"v": value}).partition("=")[2].strip()


def toml_document(doc: dict[str, Any]) -> str:
    """A whole profile (init writes one): tables and values as a profile's parser reads them back."""
    return tomli_w.dumps(doc)


def toml_line(key: str, value: Any) -> str:
    """``enforce-eager = true``: one line for a profile's [vllm] table."""
    return f"{key} = {toml_value(value)}"


def flag(key: str, value: Any) -> str:
    """``--enforce-eager``, ``--no-enforce-eager``, ``--max-model-len 8192``: the `vllm serve` spelling."""
    if value is True:
        return f"--{key}"
    if value is False:
        return f"--no-{key}"
    return f"--{key} {value}"


def as_written(key: str, value: Any, *, command_line: bool) -> str:
    """The suggestion in the form the user wrote their settings in: a flag, or a profile line."""
    return flag(key, value) if command_line else toml_line(key, value)


def previous(key: str, old: Any, *, set_by_user: bool, command_line: bool) -> str:
    """What the user had: their own value, or vLLM's default when they never set the key."""
    if not set_by_user:
        return f"not set; vLLM's default is {toml_value(old) if old is not None else 'unknown'}"
    where = "the command line" if command_line else "the profile"
    return f"{where} says {as_written(key, old, command_line=command_line)}"
