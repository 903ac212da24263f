"""Secrets never reach the guard's output or logs; vLLM still gets them unchanged."""

from __future__ import annotations

from collections.abc import Mapping

MASK = "***"
SECRET_OPTION_DESTS = frozenset({"api_key", "hf_token"})
SECRET_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


def is_secret_name(name: str) -> bool:
    """An environment variable or option name that holds a secret (HF_TOKEN, VLLM_API_KEY, ...)."""
    upper = name.upper().replace("-", "_")
    return any(word in upper for word in SECRET_NAME_WORDS)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def redact_text(text: str, secrets: list[str]) -> str:
    """Mask known secret values wherever they appear in free text (error messages, logs)."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def printable(text: object, max_chars: int | None = None) -> str:
    """Untrusted text made safe to show: no control characters (escape sequences, NUL, bell), no lone
    surrogates, and cut to ``max_chars`` with a mark saying how much was left out."""
    s = str(text)
    if not s.isprintable():
        s = "".join(c if c.isprintable() else " " if c in "\t\n\r" else "\ufffd" for c in s)
    if max_chars is not None and len(s) > max_chars:
        s = f"{s[:max_chars]}... ({len(s) - max_chars:,} more characters)"
    return s
