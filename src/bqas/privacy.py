"""PII redaction where data leaves BQAS for storage or logs (setting ``BQAS_REDACT_PII``, default off).

With redaction on, whatever the safety checks' PII detector (:mod:`bqas.offline.pii`) finds is masked
(``[EMAIL]``, ``[PHONE]``, ``[PERSON]`` …) before it is written anywhere:

- the store: columns declared :class:`RedactedJSON` or :class:`RedactedText` (records, inputs,
  reasoning, categories' examples, alerts, job items, errors, comments) are masked on the way in, dict
  keys included; id columns (:class:`RedactedId`) keep a short hash of the original after the mask, so
  two ids that differ only in their PII stay two rows;
- the LLM response cache (:mod:`bqas.llm.cache`): the reply text;
- log records (:mod:`bqas.logs`).

A job's request is the one deliberate exception: it must stay readable while the job may still be scored
(a restarted worker scores it from the store) and is scrubbed with :func:`redact` when the job finishes.
Detection runs with the German, English and Chinese rules one after the other, so the stored text holds
nothing that the check of any judge language would find. Masking is idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

from sqlalchemy import JSON, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

LANGUAGES: tuple[str, ...] = ("de", "en", "zh")
_override: bool | None = None


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
    """Switch redaction on (or off) for the whole process; None goes back to the environment setting.

    The service calls this when its settings say ``redact_pii``; tests reset it."""
    global _override
    _override = enabled
    _from_environment.cache_clear()


@lru_cache(maxsize=4096)
def redact_text(text: str) -> str:
    """``text`` with every PII finding (de, en and zh rules) masked.

    Cached: the same inputs are written several times (the record's ``inputs``, the queue item's
    ``inputs``, one result per judge), and detection is the expensive part (benchmarks/service/bench_redaction.py)."""
    from bqas.offline.pii import detect_pii, mask_pii

    for language in LANGUAGES:
        findings = detect_pii(text, language)
        if findings:
            text = mask_pii(text, findings)
    return text


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


class RedactedJSON(TypeDecorator[Any]):
    """A JSON column whose strings (and keys) are masked on write while redaction is on."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return redact(value) if value is not None and redaction_enabled() else value


class RedactedText(TypeDecorator[str]):
    """A text column masked on write while redaction is on."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return redact_text(value) if value and redaction_enabled() else value


class RedactedId(TypeDecorator[str]):
    """A ``String(length)`` id column (unique keys, lookups) masked with :func:`redact_id`.

    Lookups pass through the same function, so ``WHERE response_id = :id`` still finds the row."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if not value or not redaction_enabled():
            return value
        masked = redact_id(value)
        length = getattr(self.impl, "length", None)
        if length and len(masked) > length:  # keep the hash, which tells ids apart
            masked = masked[: length - 11] + masked[-11:]
        return masked
