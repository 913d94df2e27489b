"""The redaction switch and the masker behind it, for the layers that write data down (store, logs, caches).

Whether redaction is on is a process-wide setting (``BQAS_REDACT_PII``, or :func:`enable_redaction`). What
a mask hides is the PII detector's business, which sits in a layer above the store and the logs: it
installs itself as the masker (:func:`use_masker`; :mod:`bqas.privacy` does so when imported, and the
command line, the service, Ray actors, offline worker processes and the pytest plugin install it). A text
to redact while no masker is installed raises instead of being written unmasked; a log record says that
its text was withheld (:mod:`bqas.logs`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from typing import Any

Masker = Callable[[str], str]
_override: bool | None = None
_masker: Masker | None = None


@cache
def _from_environment() -> bool:
    from pydantic_settings import BaseSettings, SettingsConfigDict

    class _Privacy(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="BQAS_", extra="ignore")
        redact_pii: bool = False

    return _Privacy().redact_pii


def redaction_enabled() -> bool:
    """Is redaction on in this process (``BQAS_REDACT_PII``, or switched on by :func:`enable_redaction`)?"""
    return _override if _override is not None else _from_environment()


def enable_redaction(enabled: bool | None = True) -> None:
    """Switch redaction on (or off) for the whole process; None goes back to the environment setting."""
    global _override
    _override = enabled
    _from_environment.cache_clear()


def use_masker(masker: Masker) -> None:
    """Mask with ``masker`` (a text in, the same text with what must not be stored masked out)."""
    global _masker
    if masker is not _masker:
        _masker = masker
        redact_text.cache_clear()


def masker_installed() -> bool:
    """Has a masker been installed in this process (:func:`use_masker`)?"""
    return _masker is not None


@lru_cache(maxsize=4096)
def redact_text(text: str) -> str:
    """``text`` masked by the installed masker.

    Cached: the same inputs are written several times (the record's ``inputs``, the queue item's
    ``inputs``, one result per judge), and detection is the expensive part (benchmarks/service/bench_redaction.py)."""
    if _masker is None:
        raise RuntimeError("PII redaction is on (BQAS_REDACT_PII) but no masker is installed (import bqas.privacy)")
    return _masker(text)


def redact(value: Any) -> Any:
    """``value`` with PII masked in every string, dict keys included (lists and dicts are copied)."""
    if isinstance(value, str):
        return redact_text(value) if value else value
    if isinstance(value, Mapping):
        return {(redact_text(k) if isinstance(k, str) else k): redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def redact_id(value: str) -> str:
    """An id with its PII masked and, when something was masked, ``~`` and 10 hex of its SHA-256 appended."""
    masked = redact_text(value)
    if masked == value:
        return value
    return f"{masked}~{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
