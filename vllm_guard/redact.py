"""Secrets never reach the guard's output or logs; vLLM still gets them unchanged."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"
# The user-info of a URL (RFC 3986: scheme://user:password@host): postgres://app:hunter2@db/x,
# https://user:token@proxy:3128. Bounded repetitions keep the scan linear on any line.
_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^\s/?#@\[\]]{1,1024})@")
SECRET_OPTION_DESTS = frozenset({"api_key", "hf_token"})
# PASSWD (MYSQL_PASSWD), AUTH (PROXY_AUTH, HTTP_AUTH), CREDENTIAL(S), PRIVATE (SSH_PRIVATE): the names users give
# secrets besides the common four.
SECRET_NAME_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL", "PRIVATE")


def is_secret_name(name: str) -> bool:
    """An environment variable or option name that holds a secret (HF_TOKEN, VLLM_API_KEY, ...)."""
    upper = name.upper().replace("-", "_")
    return any(word in upper for word in SECRET_NAME_WORDS)


def mask_url_credentials(text: str) -> str:
    """``postgres://app:hunter2@db/x`` -> ``postgres://***@db/x``; text without user-info is unchanged."""
    return _URL_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text) if "://" in text else text


def url_credentials(text: str) -> list[str]:
    """The user-info parts (``app:hunter2``) of the URLs in ``text``, and their password parts."""
    found = []
    for m in _URL_USERINFO.finditer(text):
        found.append(m.group(2))
        if ":" in m.group(2):
            found.append(m.group(2).partition(":")[2])
    return found


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Secret variables (by name) masked whole; URLs with user-info in any other (DATABASE_URL) masked there."""
    return {k: (MASK if is_secret_name(k) and v else mask_url_credentials(v)) for k, v in env.items()}


def redact_text(text: str, secrets: list[str]) -> str:
    """Mask known secret values wherever they appear in free text (error messages, logs), and the
    user-info of every URL."""
    for secret in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return mask_url_credentials(text)


def printable(text: object, max_chars: int | None = None) -> str:
    """Untrusted text made safe to show: no control characters (escape sequences, NUL, bell), no lone
    surrogates, and cut to ``max_chars`` with a mark saying how much was left out."""
    s = str(text)
    if not s.isprintable():
        s = "".join(c if c.isprintable() else " " if c in "\t\n\r" else "\ufffd" for c in s)
    if max_chars is not None and len(s) > max_chars:
        s = f"{s[:max_chars]}... ({len(s) - max_chars:,} more characters)"
    return s
