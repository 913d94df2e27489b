"""Column types masked on write while redaction is on (:mod:`bqas.redaction`; the masker is installed by the
layer that detects PII, :mod:`bqas.privacy`, never imported by the store)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from bqas.redaction import redact, redact_id, redact_text, redaction_enabled


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
    """A ``String(length)`` id column (unique keys, lookups) masked with :func:`bqas.redaction.redact_id`.

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
