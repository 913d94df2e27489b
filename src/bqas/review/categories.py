"""New error categories: a failure kind not seen before for a judge of a tenant is flagged once.

Categories are short normalised strings derived from a record:

- ``gate:<name>`` - a pass/fail gate failed (``gate:safety``); with the offline check's finding kinds
  ``<gate>:<kind>`` (``safety:email``, ``safety:manipulation:ignore_instructions``);
- ``pii:<kind>`` - a kind in ``detected_pii`` (``pii:iban``);
- ``disagreement:<dimension>`` - the offline check and the LLM disagree on a dimension;
- ``unscored:<reason>`` - why the judge could not score (``unscored:llm_unavailable``);
- ``low:<dimension>`` - a failed verdict with this dimension in the bottom third of its range.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bqas.review.labels import spec_for
from bqas.review.records import insert_for, is_judgment, iso, record_source
from bqas.review.tables import ErrorCategory
from bqas.store.db import Store

if TYPE_CHECKING:
    from bqas.judgment.spec import JudgeRegistry

_NON_WORD = re.compile(r"[^a-z0-9]+")
_MANIPULATION = re.compile(r"judge manipulation \(([^)]+)\)")
_ENGINE_MANIPULATION = re.compile(r"judge manipulation in \S+ \(([^)]+)\)")
_UNSCORED = {
    "llm unavailable": "llm_unavailable",
    "llmerror": "llm_unavailable",
    "judge reply failed validation": "invalid_reply",
    "no dimension of the composite": "nothing_measured",
}


def slug(text: str, limit: int = 60) -> str:
    """Lower-case words joined by ``_`` (digits kept, everything else dropped)."""
    return _NON_WORD.sub("_", text.lower()).strip("_")[:limit] or "other"


# Reasons that carry figures of their own sample ("only 40% of the composite weight could be measured …"):
# one category whatever the figures, with a name that says what happened.
_UNSCORED_CONTAINS = {"of the composite weight could be measured": "too_little_measured"}


def _unscored(reason: str) -> str:
    low = reason.lower()
    for prefix, name in _UNSCORED.items():
        if low.startswith(prefix):
            return name
    for part, name in _UNSCORED_CONTAINS.items():
        if part in low:
            return name
    return slug(low.split(":", 1)[0])


def _note_kinds(note: str) -> list[str]:
    """Finding kinds from an offline gate's note (``email 'a@b.de'; judge manipulation (x)``)."""
    kinds: list[str] = []
    for part in note.split("; "):
        part = part.strip()
        if not part or part.startswith(("possible names", "empty text")):
            continue
        match = _MANIPULATION.match(part)
        if match:
            kinds.append("manipulation:" + slug(match.group(1)))
            continue
        word = part.split(" ", 1)[0]
        if word and "'" not in word:
            kinds.append(slug(word, 40))
    return kinds


def categories_of(record: Mapping[str, Any], registry: JudgeRegistry | None = None) -> dict[str, str]:
    """The error categories of one record, each with a short example text (what was seen)."""
    out: dict[str, str] = {}
    dims = record.get("dimensions") if isinstance(record.get("dimensions"), Mapping) else {}
    assert isinstance(dims, Mapping)
    spec = spec_for(registry, str(record.get("judge") or ""))
    for name, prov in dims.items():
        if not isinstance(prov, Mapping):
            continue
        if prov.get("value") == "fail":
            out.setdefault(f"gate:{name}", f"{name} failed")
            for kind in _note_kinds(str(prov.get("note") or "")):
                out.setdefault(f"{name}:{kind}", str(prov.get("note"))[:300])
    pii = record.get("detected_pii")
    if isinstance(pii, list):
        for entry in pii:
            kind = str(entry).split(":", 1)[0] if ":" in str(entry) else "unknown"
            out.setdefault(f"pii:{slug(kind, 40)}", f"detected_pii: {kind}")
    for reason in record.get("escalation_reasons") or []:
        text = str(reason)
        if text.startswith("disagreement: "):
            dim = text.removeprefix("disagreement: ").split(":", 1)[0]
            out.setdefault(f"disagreement:{slug(dim, 60)}", text[:300])
        found = _ENGINE_MANIPULATION.match(text)
        if found:  # bqas.judging.manipulation: "judge manipulation in <field> (<rule>, <rule>)"
            for rule in found.group(1).split(", "):
                out.setdefault(f"manipulation:{slug(rule, 60)}", text[:300])
    if record.get("status") == "unscored":
        reason = str(record.get("unscored_reason") or "unknown")
        out.setdefault(f"unscored:{_unscored(reason)}", reason[:300])
    if record.get("verdict") == "failed" and spec is not None:
        for name, prov in dims.items():
            spec_dim = spec.dimensions.get(str(name))
            value = prov.get("value") if isinstance(prov, Mapping) else None
            if spec_dim is not None and spec_dim.kind == "score":
                pct = spec_dim.to_percent(value)
                if pct is not None and pct < 100 / 3:
                    out.setdefault(f"low:{name}", f"{name} = {value}")
    return out


@dataclass(frozen=True)
class NewCategory:
    """An error category flagged for a judge of a tenant, when it was first seen and on which judgment."""

    tenant: str
    judge: str
    category: str
    first_seen: str  # ISO 8601 UTC
    source: str
    response_id: str
    example: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_known: set[tuple[str, str, str, str]] = set()
_known_lock = threading.Lock()


def flag_categories(
    store: Store,
    session: Session,
    tenant: str,
    records: Sequence[Mapping[str, Any]],
    *,
    source: str = "",
    registry: JudgeRegistry | None = None,
    now: float | None = None,
) -> list[NewCategory]:
    """Store the categories of ``records`` not yet known for their judge; returns those that are new.

    A category already flagged (by this or another process) is never returned again; categories this
    process has seen are skipped without a database round trip.
    """
    at = now or time.time()
    url = str(store.engine.url)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in records:
        if not is_judgment(rec):
            continue
        judge = str(rec["judge"])[:100]
        for category, example in categories_of(rec, registry).items():
            key = (url, tenant, judge, category[:200])
            if key in _known or (judge, category) in rows:
                continue
            rows[(judge, category)] = {
                "tenant": tenant,
                "judge": judge,
                "category": category[:200],
                "first_at": at,
                "source": record_source(rec, source),
                "response_id": str(rec["response_id"])[:300],
                "example": example,
            }
    if not rows:
        return []
    stmt = (
        insert_for(store)(ErrorCategory)
        .values(list(rows.values()))
        .on_conflict_do_nothing(index_elements=["tenant", "judge", "category"])
        .returning(ErrorCategory.judge, ErrorCategory.category)
    )
    inserted = {(str(a), str(b)) for a, b in session.execute(stmt).all()}
    with _known_lock:
        if len(_known) > 100_000:
            _known.clear()
        _known.update((url, tenant, judge, category) for judge, category in rows)
    return [
        NewCategory(tenant, r["judge"], r["category"], iso(at) or "", r["source"], r["response_id"], r["example"])
        for key, r in rows.items()
        if key in inserted
    ]


def forget_known() -> None:
    """Drop this process's cache of known categories (after a failed transaction that flagged some)."""
    with _known_lock:
        _known.clear()


def new_categories(
    store: Store, tenant: str | None = None, since: datetime | float | None = None, *, limit: int = 200
) -> list[NewCategory]:
    """Flagged categories, newest first (of one tenant, or all; only those first seen at/after ``since``)."""
    query = select(ErrorCategory).order_by(ErrorCategory.first_at.desc(), ErrorCategory.id.desc()).limit(limit)
    if tenant is not None:
        query = query.where(ErrorCategory.tenant == tenant)
    if since is not None:
        cutoff = since.timestamp() if isinstance(since, datetime) else float(since)
        query = query.where(ErrorCategory.first_at >= cutoff)
    with store.session() as s:
        rows = s.scalars(query).all()
        return [
            NewCategory(r.tenant, r.judge, r.category, iso(r.first_at) or "", r.source, r.response_id, r.example)
            for r in rows
        ]
