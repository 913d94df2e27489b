"""The per-tenant review queue: escalated judgments in, human decisions (gold labels) out.

Statuses: ``open`` (waiting), ``reviewed`` (a person set the verdict and labels: a gold label),
``dismissed`` (looked at, no label) and ``duplicate`` (settled by the decision on another item of its
group: the same sample content, judge and configuration escalated by another run; the queue shows
each group once). An item is unique per tenant + source + response id + judge, so
enqueueing the same results twice (a resumed run, a retried job) adds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import String, and_, cast, func, or_, select, update
from sqlalchemy.orm import Session, aliased

from bqas.review.labels import confirmed_form_values, human_composite, label_fields, parse_labels, spec_for
from bqas.review.records import dimension_values, insert_for, record_inputs, record_source, record_time
from bqas.review.tables import ITEM_STATUSES, Judgment, ReviewItem
from bqas.store.db import Store

if TYPE_CHECKING:
    from bqas.judgment.spec import JudgeRegistry

PAGE_SIZE = 50


@dataclass(frozen=True)
class ItemView:
    """A review item as read from the store."""

    id: int
    tenant: str
    source: str
    response_id: str
    judge: str
    language: str | None
    verdict: str | None
    composite: float | None
    status: str
    reasons: list[str]
    record: dict[str, Any]
    inputs: dict[str, Any] | None
    at: float
    reviewed_at: float | None
    reviewer: str | None
    human_verdict: str | None
    human_values: dict[str, Any] | None
    human_composite: float | None
    comment: str | None
    group_key: str | None = None


_FIELDS = [f.name for f in fields(ItemView)]


def _view(row: ReviewItem) -> ItemView:
    return ItemView(**{name: getattr(row, name) for name in _FIELDS})


def group_key(record: Mapping[str, Any], inputs: Any) -> str:
    """The review group of a record: the same sample (id and content), judge and configuration (backend,
    model, language) give the same key, whichever run or job escalated it. The sample id is part of it so
    that two different samples that happen to share a text stay two items."""
    import hashlib
    import json

    parts = [
        record.get("response_id"),
        record.get("judge"),
        inputs,
        record.get("backend"),
        record.get("model"),
        record.get("language"),
    ]
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def item_rows(
    tenant: str,
    records: Sequence[Mapping[str, Any]],
    *,
    source: str = "",
    samples: Sequence[Mapping[str, Any] | None] | None = None,
    registry: JudgeRegistry | None = None,
) -> list[dict[str, Any]]:
    """Rows for the escalated records (those with ``escalation``); ``samples`` align with ``records``."""
    rows: list[dict[str, Any]] = []
    now = time.time()
    for i, rec in enumerate(records):
        if not rec.get("escalation") or not rec.get("judge") or not rec.get("response_id"):
            continue
        spec = spec_for(registry, str(rec["judge"]))
        sample = samples[i] if samples is not None and i < len(samples) else None
        inputs = record_inputs(rec, sample, list(spec.inputs) if spec else None)
        rows.append(
            {
                "tenant": tenant,
                "source": record_source(rec, source),
                "response_id": str(rec["response_id"])[:300],
                "judge": str(rec["judge"])[:100],
                "language": rec.get("language"),
                "verdict": rec.get("verdict"),
                "composite": rec.get("composite_score"),
                "status": "open",
                "reasons": [str(r) for r in rec.get("escalation_reasons") or []],
                "record": dict(rec),
                "inputs": inputs,
                "at": record_time(rec, now),
                "group_key": group_key(rec, inputs),
            }
        )
    return rows


def insert_items(store: Store, session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert queue rows in one statement; rows already queued are skipped. Returns how many were new.

    A row whose group (same sample, judge, answer and configuration) already has an open item of another
    run or job goes in as ``duplicate``: an unchanged re-run does not ask for the same decision again (the
    item is kept, so the run still lists its escalations)."""
    if not rows:
        return 0
    for tenant in sorted({str(r["tenant"]) for r in rows}):
        keys = sorted({str(r["group_key"]) for r in rows if r.get("group_key") and r["tenant"] == tenant})
        if not keys:
            continue
        waiting = {
            (str(key), str(source))
            for key, source in session.execute(
                select(ReviewItem.group_key, ReviewItem.source).where(
                    ReviewItem.tenant == tenant, ReviewItem.status == "open", ReviewItem.group_key.in_(keys)
                )
            ).all()
        }
        open_keys: dict[str, set[str]] = {}
        for key, source in waiting:
            open_keys.setdefault(key, set()).add(source)
        for row in rows:
            others = open_keys.get(str(row.get("group_key")), set()) - {str(row["source"])}
            if row["tenant"] == tenant and others and row["status"] == "open":
                row["status"] = "duplicate"
    # executemany (compiled once, cached) rather than .values(rows), which compiled a new statement per batch.
    stmt = (
        insert_for(store)(ReviewItem.__table__)
        .on_conflict_do_nothing(index_elements=["tenant", "source", "response_id", "judge"])
        .returning(ReviewItem.__table__.c.id)
    )
    added = len(session.connection().execute(stmt, rows).all())
    for tenant in sorted({str(r["tenant"]) for r in rows}) if added else []:
        keys = sorted({str(r["group_key"]) for r in rows if r.get("group_key") and r["tenant"] == tenant})
        # A sample whose group a person already decided (another run's item) needs no second decision.
        settled = (
            select(ReviewItem.group_key)
            .where(
                ReviewItem.tenant == tenant,
                ReviewItem.group_key.in_(keys),
                ReviewItem.status.in_(("reviewed", "dismissed")),
            )
            .scalar_subquery()
        )
        session.execute(
            update(ReviewItem)
            .where(ReviewItem.tenant == tenant, ReviewItem.status == "open", ReviewItem.group_key.in_(settled))
            .values(status="duplicate")
        )
    return added


def enqueue_escalations(
    store: Store,
    tenant: str,
    records: Sequence[Mapping[str, Any]],
    *,
    source: str = "",
    samples: Sequence[Mapping[str, Any] | None] | None = None,
    registry: JudgeRegistry | None = None,
) -> int:
    """Put every record with ``escalation`` into ``tenant``'s queue; returns how many were newly queued.

    The record keeps everything (scores, provenance, reasoning, reasons); the inputs come from the
    record's ``inputs`` (the runner adds them) or from ``samples`` aligned with ``records``. ``source``
    is used for records without ``source``/``run_id``/``job_id``.
    """
    rows = item_rows(tenant, records, source=source, samples=samples, registry=registry)
    if not rows:
        return 0
    with store.session.begin() as s:
        return insert_items(store, s, rows)


@dataclass(frozen=True)
class ItemFilter:
    """Filters of the queue view (None: any)."""

    judge: str | None = None
    verdict: str | None = None
    language: str | None = None
    status: str | None = "open"
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive
    source: str | None = None  # the run (or job) that escalated the item

    def clauses(self, tenant: str) -> list[Any]:
        out: list[Any] = [ReviewItem.tenant == tenant]
        if self.judge:
            out.append(ReviewItem.judge == self.judge)
        if self.verdict:
            out.append(ReviewItem.verdict == self.verdict)
        if self.language:
            out.append(ReviewItem.language == self.language)
        if self.status:
            out.append(ReviewItem.status == self.status)
        if self.since is not None:
            out.append(ReviewItem.at >= self.since)
        if self.until is not None:
            out.append(ReviewItem.at < self.until)
        if self.source:
            # The run's own items, and the item standing for its group where the run's item is a duplicate
            # (the same sample escalated again by a re-run waits under the first run's item).
            other = aliased(ReviewItem)
            groups = select(func.coalesce(other.group_key, cast(other.id, String))).where(
                other.tenant == tenant, other.source == self.source
            )
            out.append(or_(ReviewItem.source == self.source, _grouping().in_(groups)))
        return out


def _grouping() -> Any:
    # Items queued before groups existed (no key) are groups of their own.
    return func.coalesce(ReviewItem.group_key, cast(ReviewItem.id, String))


def _representatives(where: list[Any]) -> Any:
    """Ids of the newest item of each group under the filter: the queue shows a group once."""
    return select(func.max(ReviewItem.id)).where(*where).group_by(_grouping())


# Queue order: newest first, id as tie-breaker (stable paging and next/previous).
_ORDER = (ReviewItem.at.desc(), ReviewItem.id.desc())


def list_items(
    store: Store, tenant: str, flt: ItemFilter, *, offset: int = 0, limit: int = PAGE_SIZE
) -> tuple[list[ItemView], int]:
    """One page of the tenant's queue under ``flt`` and the total count."""
    where = flt.clauses(tenant)
    shown = [*where, ReviewItem.id.in_(_representatives(where))]
    with store.session() as s:
        total = int(s.scalar(select(func.count(ReviewItem.id)).where(*shown)) or 0)
        rows = s.scalars(select(ReviewItem).where(*shown).order_by(*_ORDER).offset(offset).limit(limit)).all()
        return [_view(r) for r in rows], total


@dataclass(frozen=True)
class GroupMember:
    """One item of a review group: which run (and scenario) escalated it, and its status."""

    id: int
    source: str
    scenario: str | None
    status: str


def group_members(store: Store, tenant: str, items: Sequence[ItemView]) -> dict[int, list[GroupMember]]:
    """For each item, the items of its group (itself included), oldest first, with their run's scenario."""
    from bqas.store.models import Run

    keys = sorted({i.group_key for i in items if i.group_key})
    with store.session() as s:
        rows = (
            s.execute(
                select(ReviewItem.id, ReviewItem.group_key, ReviewItem.source, ReviewItem.status)
                .where(ReviewItem.tenant == tenant, ReviewItem.group_key.in_(keys))
                .order_by(ReviewItem.id)
            ).all()
            if keys
            else []
        )
        sources = sorted({str(r[2]) for r in rows} | {i.source for i in items})
        scenarios = dict(s.execute(select(Run.id, Run.scenario).where(Run.id.in_(sources))).all()) if sources else {}
    by_key: dict[str, list[GroupMember]] = {}
    for rid, key, source, status in rows:
        by_key.setdefault(str(key), []).append(GroupMember(int(rid), str(source), scenarios.get(source), str(status)))
    return {
        i.id: by_key.get(i.group_key or "", []) or [GroupMember(i.id, i.source, scenarios.get(i.source), i.status)]
        for i in items
    }


def get_item(store: Store, tenant: str, item_id: int) -> ItemView | None:
    """An item of ``tenant`` (None when it does not exist or belongs to another tenant)."""
    with store.session() as s:
        row = s.get(ReviewItem, item_id)
        return _view(row) if row is not None and row.tenant == tenant else None


def adjacent_ids(store: Store, tenant: str, item: ItemView, flt: ItemFilter) -> tuple[int | None, int | None]:
    """(previous, next) item ids around ``item`` in queue order under ``flt``."""
    where = flt.clauses(tenant)
    where = [*where, ReviewItem.id.in_(_representatives(where))]
    newer = or_(ReviewItem.at > item.at, and_(ReviewItem.at == item.at, ReviewItem.id > item.id))
    older = or_(ReviewItem.at < item.at, and_(ReviewItem.at == item.at, ReviewItem.id < item.id))
    with store.session() as s:
        prev = s.scalar(
            select(ReviewItem.id).where(*where, newer).order_by(ReviewItem.at.asc(), ReviewItem.id.asc()).limit(1)
        )
        nxt = s.scalar(select(ReviewItem.id).where(*where, older).order_by(*_ORDER).limit(1))
    return prev, nxt


def facets(store: Store, tenant: str) -> dict[str, list[str]]:
    """The judges, verdicts and languages present in the tenant's queue (for the filter selects)."""
    out: dict[str, list[str]] = {}
    with store.session() as s:
        for name, column in (
            ("judge", ReviewItem.judge),
            ("verdict", ReviewItem.verdict),
            ("language", ReviewItem.language),
        ):
            values = s.scalars(select(column).where(ReviewItem.tenant == tenant).distinct()).all()
            out[name] = sorted(str(v) for v in values if v)
        newest = (
            select(ReviewItem.source, func.max(ReviewItem.at).label("last"))
            .where(ReviewItem.tenant == tenant)
            .group_by(ReviewItem.source)
            .order_by(func.max(ReviewItem.at).desc())
            .limit(100)
        )
        out["run"] = [str(row[0]) for row in s.execute(newest).all()]
    return out


def status_counts(store: Store, tenant: str) -> dict[str, int]:
    """Items per status of the tenant."""
    with store.session() as s:
        rows = s.execute(
            select(ReviewItem.status, func.count(ReviewItem.id))
            .where(ReviewItem.tenant == tenant)
            .group_by(ReviewItem.status)
        ).all()
    counts = {status: 0 for status in ITEM_STATUSES}
    counts.update({str(a): int(b) for a, b in rows})
    return counts


def source_counts(store: Store, tenant: str, source: str) -> dict[str, int]:
    """Items of one run or job per status."""
    with store.session() as s:
        rows = s.execute(
            select(ReviewItem.status, func.count(ReviewItem.id))
            .where(ReviewItem.tenant == tenant, ReviewItem.source == source)
            .group_by(ReviewItem.status)
        ).all()
    counts = {status: 0 for status in ITEM_STATUSES}
    counts.update({str(a): int(b) for a, b in rows})
    return counts


def open_count(store: Store, tenant: str, source: str | None = None) -> int:
    """Open items of the tenant (of one run or job with ``source``)."""
    where = [ReviewItem.tenant == tenant, ReviewItem.status == "open"]
    if source is not None:
        where.append(ReviewItem.source == source)
    with store.session() as s:
        return int(s.scalar(select(func.count(ReviewItem.id)).where(*where)) or 0)


class ReviewError(ValueError):
    """The submitted review is not valid (messages name the fields)."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def submit_review(
    store: Store,
    tenant: str,
    item_id: int,
    *,
    verdict: str | None,
    raw_values: Mapping[str, str],
    comment: str | None,
    reviewer: str | None,
    registry: JudgeRegistry | None = None,
    confirmed: Collection[str] = (),
) -> ItemView | None:
    """Record a human decision; the item becomes ``reviewed`` (a gold label) and enters the memory.

    ``raw_values`` are the form's strings per dimension ("" = no label). ``confirmed`` names dimensions
    whose judge value the reviewer explicitly accepted (a typed value wins); every other dimension
    stays out of the label, so a gold label never holds a judge value nobody looked at. Raises
    :class:`ReviewError` on invalid input; returns None when the item is not the tenant's.
    """
    item = get_item(store, tenant, item_id)
    if item is None:
        return None
    spec = spec_for(registry, item.judge)
    fields = label_fields(spec, item.record)
    typed = {name: text for name, text in raw_values.items() if (text or "").strip()}
    raw = {**confirmed_form_values(fields, dimension_values(item.record), confirmed), **typed}
    human_verdict, values, errors = parse_labels(fields, verdict, raw)
    if errors:
        raise ReviewError(errors)
    composite = human_composite(spec, values)
    now = time.time()
    comment = (comment or "").strip()[:5000] or None
    with store.session.begin() as s:
        s.execute(
            update(ReviewItem)
            .where(ReviewItem.id == item_id, ReviewItem.tenant == tenant)
            .values(
                status="reviewed",
                reviewed_at=now,
                reviewer=reviewer,
                human_verdict=human_verdict,
                human_values=values,
                human_composite=composite,
                comment=comment,
            )
        )
        _settle_group(s, item, reviewer, now)
        _remember(store, s, item, human_verdict, values, composite, now)
    return get_item(store, tenant, item_id)


def _settle_group(s: Session, item: ItemView, reviewer: str | None, now: float) -> None:
    """The other open items of the item's group (other runs of the same sample) need no decision now."""
    if not item.group_key:
        return
    s.execute(
        update(ReviewItem)
        .where(
            ReviewItem.tenant == item.tenant,
            ReviewItem.group_key == item.group_key,
            ReviewItem.status == "open",
            ReviewItem.id != item.id,
        )
        .values(status="duplicate", reviewed_at=now, reviewer=reviewer)
    )


def _remember(
    store: Store,
    s: Session,
    item: ItemView,
    verdict: str | None,
    values: dict[str, Any],
    composite: float | None,
    now: float,
) -> None:
    """Put the human values on the item's memory row (created, with its embedding, when missing)."""
    from bqas.review.memory import embedder, input_text, to_bytes

    human = {
        "review_item_id": item.id,
        "reviewed_at": now,
        "human_verdict": verdict,
        "human_values": values,
        "human_composite": composite,
    }
    key = (
        Judgment.tenant == item.tenant,
        Judgment.source == item.source,
        Judgment.response_id == item.response_id,
        Judgment.judge == item.judge,
    )
    row = s.execute(select(Judgment.id, Judgment.embedding).where(*key)).first()
    from bqas.review.settings import get_review_settings

    text = input_text(item.inputs, get_review_settings().memory_max_chars)
    emb = embedder()
    if row is not None and row[1] is not None:
        s.execute(update(Judgment).where(Judgment.id == row[0]).values(**human))
        return
    vector = to_bytes(emb.embed([text])[0]) if text else None
    if row is not None:
        s.execute(update(Judgment).where(Judgment.id == row[0]).values(embedding=vector, embedder=emb.name, **human))
        return
    s.execute(
        insert_for(store)(Judgment)
        .values(
            tenant=item.tenant,
            source=item.source,
            response_id=item.response_id,
            judge=item.judge,
            language=item.language,
            verdict=item.verdict,
            composite=item.composite,
            scores=dimension_values(item.record),
            at=item.at,
            embedder=emb.name if vector else None,
            embedding=vector,
            **human,
        )
        .on_conflict_do_nothing(index_elements=["tenant", "source", "response_id", "judge"])
    )


def dismiss_item(store: Store, tenant: str, item_id: int, reviewer: str | None) -> bool:
    """Mark an item ``dismissed`` (no label); False when it is not the tenant's."""
    with store.session.begin() as s:
        result = s.execute(
            update(ReviewItem)
            .where(ReviewItem.id == item_id, ReviewItem.tenant == tenant)
            .values(status="dismissed", reviewed_at=time.time(), reviewer=reviewer)
        )
        if not getattr(result, "rowcount", 0):
            return False
        # A dismissed item is no gold label: take a human value it had out of the memory again.
        item = s.get(ReviewItem, item_id)
        assert item is not None
        _settle_group(s, _view(item), reviewer, time.time())
        s.execute(
            update(Judgment)
            .where(Judgment.review_item_id == item_id, Judgment.tenant == tenant)
            .values(reviewed_at=None, human_verdict=None, human_values=None, human_composite=None)
        )
        return True
