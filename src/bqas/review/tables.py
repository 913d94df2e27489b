"""Tables of the review loop (migration ``0003``): queue, memory of judgments, categories, alerts, sessions.

Columns that hold user text or ids are ``Redacted*`` types (:mod:`bqas.store.redacted`): with
``BQAS_REDACT_PII`` on, PII is masked on the way into the database.

Times used in window queries are epoch seconds (``Float``): they compare the same way on SQLite and
PostgreSQL, where time-zone aware ``DateTime`` columns do not.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from bqas.store.models import Base
from bqas.store.redacted import RedactedId, RedactedJSON, RedactedText

# ``duplicate``: settled by the decision on another item of its group (same sample, judge, configuration).
ITEM_STATUSES: tuple[str, ...] = ("open", "reviewed", "dismissed", "duplicate")


class ReviewItem(Base):
    """One escalated judgment waiting for (or holding) a human decision. Unique per tenant/source/response/judge."""

    __tablename__ = "review_items"
    __table_args__ = (
        UniqueConstraint("tenant", "source", "response_id", "judge", name="uq_review_items_key"),
        Index("ix_review_items_tenant_status_at", "tenant", "status", "at"),
        Index("ix_review_items_tenant_group", "tenant", "group_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(200))
    response_id: Mapped[str] = mapped_column(RedactedId(300))
    judge: Mapped[str] = mapped_column(String(100))
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    composite: Mapped[float | None] = mapped_column(Float, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="open")
    reasons: Mapped[list[str]] = mapped_column(RedactedJSON)
    record: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)
    inputs: Mapped[dict[str, Any] | None] = mapped_column(RedactedJSON, nullable=True)
    at: Mapped[float] = mapped_column(Float)  # when the judgment was made (epoch seconds)
    reviewed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    reviewer: Mapped[str | None] = mapped_column(String(100), nullable=True)
    human_verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    human_values: Mapped[dict[str, Any] | None] = mapped_column(RedactedJSON, nullable=True)
    human_composite: Mapped[float | None] = mapped_column(Float, nullable=True)
    comment: Mapped[str | None] = mapped_column(RedactedText, nullable=True)
    # sha256 of (sample id, judge, inputs, backend, model, language): the same sample escalated by several runs
    # shares it (migration 0005; NULL for items queued before, each its own group).
    group_key: Mapped[str | None] = mapped_column(String(64), nullable=True, default=None)


class Judgment(Base):
    """A past judgment with an embedding of its input (the memory); human values once it was reviewed."""

    __tablename__ = "review_judgments"
    __table_args__ = (
        UniqueConstraint("tenant", "source", "response_id", "judge", name="uq_review_judgments_key"),
        Index("ix_review_judgments_failed", "tenant", "judge", "verdict", "at"),
        Index("ix_review_judgments_reviewed", "tenant", "judge", "reviewed_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(200))
    response_id: Mapped[str] = mapped_column(RedactedId(300))
    judge: Mapped[str] = mapped_column(String(100))
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    composite: Mapped[float | None] = mapped_column(Float, nullable=True)
    scores: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)  # the judge's dimension values
    at: Mapped[float] = mapped_column(Float)
    embedder: Mapped[str | None] = mapped_column(String(40), nullable=True)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)  # float32, little-endian
    review_item_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reviewed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    human_verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    human_values: Mapped[dict[str, Any] | None] = mapped_column(RedactedJSON, nullable=True)
    human_composite: Mapped[float | None] = mapped_column(Float, nullable=True)


class ErrorCategory(Base):
    """An error category seen for the first time for a judge of a tenant (flagged once)."""

    __tablename__ = "review_categories"
    __table_args__ = (UniqueConstraint("tenant", "judge", "category", name="uq_review_categories_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100))
    judge: Mapped[str] = mapped_column(String(100))
    category: Mapped[str] = mapped_column(String(200))
    first_at: Mapped[float] = mapped_column(Float, index=True)
    source: Mapped[str] = mapped_column(String(200))
    response_id: Mapped[str] = mapped_column(RedactedId(300))
    example: Mapped[str | None] = mapped_column(RedactedText, nullable=True)


class AlertState(Base):
    """When the last alert of a tenant/judge went out: the one-alert-per-window rule lives here."""

    __tablename__ = "review_alert_state"

    tenant: Mapped[str] = mapped_column(String(100), primary_key=True)
    judge: Mapped[str] = mapped_column(String(100), primary_key=True)
    last_alert_at: Mapped[float] = mapped_column(Float)


class Alert(Base):
    """One alert that was raised, with its payload and delivery outcome."""

    __tablename__ = "review_alerts"
    __table_args__ = (Index("ix_review_alerts_tenant_at", "tenant", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant: Mapped[str] = mapped_column(String(100))
    judge: Mapped[str] = mapped_column(String(100))
    at: Mapped[float] = mapped_column(Float)
    count: Mapped[int] = mapped_column(Integer)
    payload: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)
    status: Mapped[str] = mapped_column(String(16), default="pending")  # pending, sent, failed, no_webhook
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(RedactedText, nullable=True)


class ReviewSession(Base):
    """A logged-in review page session. Only the SHA-256 of the cookie value is stored."""

    __tablename__ = "review_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant: Mapped[str] = mapped_column(String(100))
    key_hash: Mapped[str] = mapped_column(String(64))
    key_prefix: Mapped[str] = mapped_column(String(16))
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
