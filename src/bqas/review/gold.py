"""Reviewed items as gold labels, in the scenario sample format that ``bqas calibrate`` reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import select

from bqas.review.records import iso
from bqas.review.tables import ReviewItem
from bqas.store.db import Store


def gold_line(item: ReviewItem) -> dict[str, Any]:
    """One gold line: ``id``, the judge's input fields, ``language``, ``judge``, ``expected``, ``comment``."""
    line: dict[str, Any] = {"id": item.response_id}
    line.update(item.inputs or {})
    line.update(
        {
            "id": item.response_id,
            "language": item.language,
            "judge": item.judge,
            "expected": {"verdict": item.human_verdict, **(item.human_values or {})},
            "comment": item.comment or "",
            "source": item.source,
            "review_id": item.id,
            "reviewed_at": iso(item.reviewed_at),
            "reviewer": item.reviewer,
        }
    )
    return line


def iter_gold(store: Store, tenant: str, judge: str | None = None, batch: int = 500) -> Iterator[dict[str, Any]]:
    """The tenant's reviewed items (optionally of one judge) as gold lines, oldest first, in batches."""
    last = 0
    while True:
        query = (
            select(ReviewItem)
            .where(ReviewItem.tenant == tenant, ReviewItem.status == "reviewed", ReviewItem.id > last)
            .order_by(ReviewItem.id)
            .limit(batch)
        )
        if judge is not None:
            query = query.where(ReviewItem.judge == judge)
        with store.session() as s:
            rows = s.scalars(query).all()
            lines = [gold_line(r) for r in rows]
        if not rows:
            return
        yield from lines
        last = rows[-1].id


def gold_records(store: Store, tenant: str, judge: str | None = None) -> list[dict[str, Any]]:
    """All gold lines of a tenant (see :func:`iter_gold`)."""
    return list(iter_gold(store, tenant, judge))
