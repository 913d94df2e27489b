"""Tables of the results store. Schema changes go through Alembic migrations (``migrations/versions``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bqas.store.redacted import RedactedId, RedactedJSON

# The viewer's common filters: a (run, field, seq) index each (migration 0008), so that a filter's count
# and its pages in sample order read the index, not the records.
FILTER_FIELDS: tuple[str, ...] = ("verdict", "decision", "language", "intent", "escalated", "status")


def filter_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record fields copied into the indexed filter columns (strings within the column's length)."""
    decision, intent = record.get("decision"), record.get("intent")
    return {
        "decision": decision if isinstance(decision, str) and len(decision) <= 16 else None,
        "intent": intent if isinstance(intent, str) and len(intent) <= 200 else None,
        "escalated": record.get("escalation") is not None,
    }


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON}


class Run(Base):
    """One run of a scenario (or of a calibration, or a scoring job)."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), default="scenario")
    scenario: Mapped[str] = mapped_column(String(200))
    scenario_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default="running")
    total: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The process running it now (``host:pid:token``) and its lease's end (epoch s); see runner/lease.py.
    lease_owner: Mapped[str | None] = mapped_column(String(100), nullable=True, default=None)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)


class ResultRow(Base):
    """One judgment of one sample by one judge in one repeat (``--repeats``, from 1).

    (``sample_key``, ``repeat``) is unique per run: resuming never duplicates."""

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("run_id", "sample_key", "repeat", name="uq_results_run_sample_repeat"),
        Index("ix_results_run_seq", "run_id", "seq"),
        *(Index(f"ix_results_run_{name}", "run_id", name, "seq") for name in FILTER_FIELDS),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), ForeignKey("runs.id", ondelete="CASCADE"))
    sample_key: Mapped[str] = mapped_column(RedactedId(400))
    seq: Mapped[int] = mapped_column(Integer)
    repeat: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    sample_id: Mapped[str] = mapped_column(RedactedId(300))
    judge: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(20))
    verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    composite: Mapped[float | None] = mapped_column(Float, nullable=True)
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Copied out of the record for the viewer's indexed filters (migration 0008); the record stays the source.
    decision: Mapped[str | None] = mapped_column(String(16), nullable=True, default=None)
    intent: Mapped[str | None] = mapped_column(RedactedId(200), nullable=True, default=None)  # dataset text
    escalated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    record: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)  # masked with BQAS_REDACT_PII
    # The judgment's LLM attempts (replies, tokens, latency, cache hits; bqas.judging.exchange), for the
    # viewer's sample page; NULL without an LLM call. Masked like the record.
    exchange: Mapped[dict[str, Any] | None] = mapped_column(RedactedJSON, nullable=True, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class SettledRow(Base):
    """One sample (sample, judge) of a run judged with ``--repeats``: its canonical record (majority
    verdict, ties escalated; ``bqas.runner.repeats``) with the spread over the repeats, written when the run
    finishes, so that the viewer lists, filters, counts and pages per sample, not per repeat.

    The columns mirror :class:`ResultRow`'s (the viewer's queries run on either); ``result_id`` is the
    results row of the canonical repeat (the sample page)."""

    __tablename__ = "settled_results"
    __table_args__ = (
        UniqueConstraint("run_id", "sample_key", name="uq_settled_run_sample"),
        Index("ix_settled_run_seq", "run_id", "seq"),
        *(Index(f"ix_settled_results_run_{name}", "run_id", name, "seq") for name in FILTER_FIELDS),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), ForeignKey("runs.id", ondelete="CASCADE"))
    sample_key: Mapped[str] = mapped_column(RedactedId(400))
    seq: Mapped[int] = mapped_column(Integer)
    result_id: Mapped[int] = mapped_column(Integer)
    sample_id: Mapped[str] = mapped_column(RedactedId(300))
    judge: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(20))
    verdict: Mapped[str | None] = mapped_column(String(32), nullable=True)
    composite: Mapped[float | None] = mapped_column(Float, nullable=True)
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    decision: Mapped[str | None] = mapped_column(String(16), nullable=True, default=None)
    intent: Mapped[str | None] = mapped_column(RedactedId(200), nullable=True, default=None)  # dataset text
    escalated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    repeats: Mapped[int] = mapped_column(Integer)
    straddles: Mapped[bool] = mapped_column(Boolean)
    tie: Mapped[bool] = mapped_column(Boolean)
    spread: Mapped[float | None] = mapped_column(Float, nullable=True)  # std of the composite over the repeats
    record: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)  # the canonical record, masked like results


class TargetReplyRow(Base):
    """One answer of the assistant under test (bqas.targets) to one turn of one sample of a run: the mapped
    judge inputs, HTTP status, latency, tokens and the first bytes of the raw reply (or the target error).

    (``sample_id``, ``turn``) is unique per run: ``--resume`` never asks the target again for a stored one,
    and ``--reuse-target-replies`` reads another run's."""

    __tablename__ = "target_replies"
    __table_args__ = (UniqueConstraint("run_id", "sample_id", "turn", name="uq_target_replies_run_sample_turn"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64), ForeignKey("runs.id", ondelete="CASCADE"))
    sample_id: Mapped[str] = mapped_column(RedactedId(300))
    turn: Mapped[int] = mapped_column(Integer)
    reply: Mapped[dict[str, Any]] = mapped_column(RedactedJSON)  # masked with BQAS_REDACT_PII, like results
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
