"""The viewer's SQL: one run's results filtered, sorted and paged in the database (never all loaded).

Filters on record fields (decision, intent, tags, dimension values, escalation) go through SQLAlchemy's
JSON index operators, which compile to ``json_extract`` on SQLite and ``->``/``->>`` on PostgreSQL; the
keys are bound parameters, so a dimension name from the URL never becomes SQL text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import JSON, String, and_, case, cast, exists, func, or_, select, text, type_coerce
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement, TextClause

from bqas.store.db import Store
from bqas.store.models import ResultRow

PAGE_SIZE = 50
MAX_PAGE = 10**7
MAX_SEARCH = 200
FILTER_KEYS: tuple[str, ...] = (
    "q",
    "verdict",
    "decision",
    "judge",
    "language",
    "intent",
    "tag",
    "dim",
    "min",
    "max",
    "escalated",
    "unscored",
    "changed",
    "baseline",
    "sort",
)
SORTS: dict[str, tuple[str, bool]] = {
    "seq": ("seq", False),
    "composite": ("composite", False),
    "-composite": ("composite", True),
    "verdict": ("verdict", False),
    "sample": ("sample_id", False),
}
DECISIONS = ("accept", "reject", "escalate", "none")
_DIM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class RunFilter:
    """What the run table shows; every field optional."""

    q: str | None = None
    verdict: str | None = None
    decision: str | None = None
    judge: str | None = None
    language: str | None = None
    intent: str | None = None
    tag: str | None = None
    dim: str | None = None
    dim_min: float | None = None
    dim_max: float | None = None
    escalated: bool | None = None
    unscored: bool | None = None
    changed: bool = False
    baseline: str | None = None
    sort: str = "seq"


def _flag(values: Mapping[str, str], key: str) -> bool | None:
    raw = values.get(key, "")
    if raw in ("", "any"):
        return None
    if raw in ("1", "yes", "true"):
        return True
    if raw in ("0", "no", "false"):
        return False
    raise ValueError(f"{key}: expected yes, no or any, got {raw[:40]!r}")


def _number(values: Mapping[str, str], key: str) -> float | None:
    raw = values.get(key, "")
    if not raw:
        return None
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{key}: expected a number, got {raw[:40]!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{key}: expected a finite number")
    return number


def parse_run_filter(params: Mapping[str, str]) -> tuple[RunFilter, dict[str, str]]:
    """The filter from query parameters; ValueError naming the parameter when one is malformed."""
    values = {k: (params.get(k) or "").strip() for k in FILTER_KEYS}
    if len(values["q"]) > MAX_SEARCH:
        raise ValueError(f"q: at most {MAX_SEARCH} characters")
    if values["decision"] and values["decision"] not in DECISIONS:
        raise ValueError(f"decision: expected one of {', '.join(DECISIONS)}")
    if values["dim"] and not _DIM_NAME.match(values["dim"]):
        raise ValueError("dim: expected a dimension name (letters, digits, _ . -)")
    if values["baseline"] and not _RUN_ID.match(values["baseline"]):
        raise ValueError("baseline: expected a run id")
    sort = values["sort"] or "seq"
    if sort not in SORTS:
        raise ValueError(f"sort: expected one of {', '.join(SORTS)}")
    values["sort"] = sort
    low, high = _number(values, "min"), _number(values, "max")
    if (low is not None or high is not None) and not values["dim"]:
        raise ValueError("min/max: name the dimension (dim) they apply to")
    changed = _flag(values, "changed")
    if changed and not values["baseline"]:
        raise ValueError("changed: needs a baseline run (baseline)")
    flt = RunFilter(
        q=values["q"] or None,
        verdict=values["verdict"] or None,
        decision=values["decision"] or None,
        judge=values["judge"] or None,
        language=values["language"] or None,
        intent=values["intent"] or None,
        tag=values["tag"] or None,
        dim=values["dim"] or None,
        dim_min=low,
        dim_max=high,
        escalated=_flag(values, "escalated"),
        unscored=_flag(values, "unscored"),
        changed=bool(changed),
        baseline=values["baseline"] or None,
        sort=sort,
    )
    return flt, values


def _record() -> Any:
    # RedactedJSON is a TypeDecorator; coerce to plain JSON so its index operators are available.
    return type_coerce(ResultRow.record, JSON)


def _like(value: str) -> str:
    return "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _tag_clause(store: Store, tag: str) -> TextClause:
    """Whether the record's ``tags`` list holds ``tag`` (json_each / json_array_elements_text)."""
    if store.dialect == "postgresql":
        return text(
            "EXISTS (SELECT 1 FROM json_array_elements_text(CASE WHEN json_typeof(results.record -> 'tags') = "
            "'array' THEN results.record -> 'tags' ELSE '[]'::json END) AS t(v) WHERE t.v = :tag)"
        ).bindparams(tag=tag)
    return text("EXISTS (SELECT 1 FROM json_each(results.record, '$.tags') AS t WHERE t.value = :tag)").bindparams(
        tag=tag
    )


def _clauses(store: Store, run_id: str, flt: RunFilter) -> list[ColumnElement[bool] | TextClause]:
    rec = _record()
    where: list[ColumnElement[bool] | TextClause] = [ResultRow.run_id == run_id]
    if flt.q:
        pattern = _like(flt.q)
        where.append(
            or_(
                ResultRow.sample_id.like(pattern, escape="\\"),
                cast(ResultRow.record, String).like(pattern, escape="\\"),
            )
        )
    if flt.verdict:
        where.append(ResultRow.verdict.is_(None) if flt.verdict == "none" else ResultRow.verdict == flt.verdict)
    if flt.decision:
        decision = rec["decision"].as_string()
        where.append(decision.is_(None) if flt.decision == "none" else decision == flt.decision)
    if flt.judge:
        where.append(ResultRow.judge == flt.judge)
    if flt.language:
        where.append(ResultRow.language == flt.language)
    if flt.intent:
        where.append(rec["intent"].as_string() == flt.intent)
    if flt.tag:
        where.append(_tag_clause(store, flt.tag))
    if flt.dim:
        # One JSON path (one json_extract per row, not one per key). A dimension that was not measured
        # has no value (DimensionProvenance.value is None then), so it falls out of every range.
        value = rec[("dimensions", flt.dim, "value")].as_float()
        where.append(value.is_not(None))
        if flt.dim_min is not None:
            where.append(value >= flt.dim_min)
        if flt.dim_max is not None:
            where.append(value <= flt.dim_max)
    if flt.escalated is not None:
        escalation = rec["escalation"].as_string()
        where.append(escalation.is_not(None) if flt.escalated else escalation.is_(None))
    if flt.unscored is not None:
        where.append(ResultRow.status == "unscored" if flt.unscored else ResultRow.status != "unscored")
    if flt.changed and flt.baseline:
        base = aliased(ResultRow)
        where.append(
            exists().where(
                base.run_id == flt.baseline,
                base.sample_key == ResultRow.sample_key,
                or_(
                    base.verdict != ResultRow.verdict,
                    and_(base.verdict.is_(None), ResultRow.verdict.is_not(None)),
                    and_(base.verdict.is_not(None), ResultRow.verdict.is_(None)),
                ),
            )
        )
    return where


@dataclass(frozen=True)
class Row:
    """One result in the run table: the indexed columns plus a few record fields."""

    id: int
    seq: int
    sample_id: str
    judge: str
    status: str
    verdict: str | None
    composite: float | None
    language: str | None
    decision: str | None
    decided_by: str | None
    escalation: str | None
    intent: str | None
    expected_verdict: str | None
    baseline_verdict: str | None = None


def list_results(
    store: Store, run_id: str, flt: RunFilter, *, page: int = 1, size: int = PAGE_SIZE
) -> tuple[list[Row], int]:
    """One page of the run's results under the filter, and how many match in all."""
    rec = _record()
    where = _clauses(store, run_id, flt)
    column, desc = SORTS[flt.sort]
    order_col = getattr(ResultRow, column)
    order: list[Any] = [order_col.desc() if desc else order_col.asc(), ResultRow.seq, ResultRow.id]
    if column != "seq":  # NULLs last in both directions (an unscored composite is not the best or the worst)
        order.insert(0, order_col.is_(None))
    # Two steps: the page's row ids first (sorting plain columns, the (run_id, seq) index for the default
    # order), then the record fields of those 50 rows only; selecting them in the sorted query made
    # SQLite extract JSON from every row before the OFFSET (seconds on the last page of 100,000).
    ids_stmt = select(ResultRow.id).where(*where).order_by(*order).offset((page - 1) * size).limit(size)
    columns: list[Any] = [
        ResultRow.id,
        ResultRow.seq,
        ResultRow.sample_id,
        ResultRow.judge,
        ResultRow.status,
        ResultRow.verdict,
        ResultRow.composite,
        ResultRow.language,
        rec["decision"].as_string(),
        rec["decided_by"].as_string(),
        rec["escalation"].as_string(),
        rec["intent"].as_string(),
        rec[("expected", "verdict")].as_string(),
    ]
    with store.session() as s:
        total = int(s.scalar(select(func.count()).select_from(ResultRow).where(*where)) or 0)
        ids = list(s.scalars(ids_stmt))
        if not ids:
            return [], total
        stmt = select(*columns).where(ResultRow.id.in_(ids))
        if flt.baseline:
            base = aliased(ResultRow)
            stmt = stmt.add_columns(base.verdict).outerjoin(
                base, and_(base.run_id == flt.baseline, base.sample_key == ResultRow.sample_key)
            )
        found = {row[0]: row for row in s.execute(stmt).all()}
    return [Row(*found[i]) for i in ids if i in found], total


@dataclass
class RunFacets:
    """The values a filter can take in this run, with counts (for the select boxes)."""

    verdicts: list[tuple[str, int]] = field(default_factory=list)
    judges: list[tuple[str, int]] = field(default_factory=list)
    languages: list[tuple[str, int]] = field(default_factory=list)
    statuses: list[tuple[str, int]] = field(default_factory=list)


def run_facets(store: Store, run_id: str) -> RunFacets:
    """Counts per verdict, judge, language and status (GROUP BY on indexed columns)."""
    out = RunFacets()
    with store.session() as s:
        for attr, column in (
            ("verdicts", ResultRow.verdict),
            ("judges", ResultRow.judge),
            ("languages", ResultRow.language),
            ("statuses", ResultRow.status),
        ):
            rows = s.execute(
                select(column, func.count()).where(ResultRow.run_id == run_id).group_by(column).order_by(column)
            ).all()
            setattr(out, attr, [(str(v) if v is not None else "none", int(n)) for v, n in rows])
    return out


def tag_breakdown(store: Store, run_id: str, limit: int = 100) -> list[dict[str, Any]]:
    """Per tag: samples, passes (production_ready), failures, mean composite; most frequent tags first."""
    if store.dialect == "postgresql":
        source = (
            "FROM results, json_array_elements_text(CASE WHEN json_typeof(results.record -> 'tags') = 'array' "
            "THEN results.record -> 'tags' ELSE '[]'::json END) AS t(value)"
        )
    else:
        source = "FROM results, json_each(results.record, '$.tags') AS t"
    sql = text(
        "SELECT t.value, COUNT(*), SUM(CASE WHEN results.verdict = 'production_ready' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN results.verdict = 'failed' THEN 1 ELSE 0 END), AVG(results.composite) "
        f"{source} WHERE results.run_id = :run GROUP BY t.value ORDER BY COUNT(*) DESC, t.value LIMIT :limit"
    )
    with store.engine.connect() as conn:
        rows = conn.execute(sql, {"run": run_id, "limit": limit}).all()
    return [
        {
            "tag": str(tag),
            "n": int(n),
            "passed": int(passed or 0),
            "failed": int(failed or 0),
            "pass_rate": (int(passed or 0) / int(n)) if n else None,
            "mean": float(mean) if mean is not None else None,
        }
        for tag, n, passed, failed, mean in rows
    ]


def composite_histogram(store: Store, run_id: str, bins: int = 10) -> list[int]:
    """Counts of the composite score (0–100) in ``bins`` equal bins, the top edge in the last (one query)."""
    width = 100.0 / bins
    sums = [
        func.sum(
            case(
                (
                    and_(
                        ResultRow.composite >= i * width,
                        ResultRow.composite < (i + 1) * width if i < bins - 1 else ResultRow.composite <= 100.0,
                    ),
                    1,
                ),
                else_=0,
            )
        )
        for i in range(bins)
    ]
    with store.session() as s:
        row = s.execute(select(*sums).where(ResultRow.run_id == run_id)).one()
    return [int(v or 0) for v in row]


def get_result(store: Store, run_id: str, result_id: int) -> dict[str, Any] | None:
    """One stored record of the run by its row id (None when it is not this run's)."""
    with store.session() as s:
        row = s.execute(
            select(ResultRow.record, ResultRow.seq, ResultRow.sample_key).where(
                ResultRow.run_id == run_id, ResultRow.id == result_id
            )
        ).first()
    if row is None:
        return None
    record = dict(row[0]) if isinstance(row[0], Mapping) else {"value": row[0]}
    record["_seq"], record["_key"] = row[1], row[2]
    return record


def record_by_key(store: Store, run_id: str, sample_key: str) -> tuple[int, dict[str, Any]] | None:
    """(row id, record) of one sample key in a run (the unique index on run_id, sample_key)."""
    with store.session() as s:
        row = s.execute(
            select(ResultRow.id, ResultRow.record).where(ResultRow.run_id == run_id, ResultRow.sample_key == sample_key)
        ).first()
    return (int(row[0]), dict(row[1])) if row is not None else None


@dataclass(frozen=True)
class PairRow:
    """The same sample under run A and run B."""

    sample_key: str
    sample_id: str
    judge: str
    id_a: int
    id_b: int
    verdict_a: str | None
    verdict_b: str | None
    composite_a: float | None
    composite_b: float | None

    @property
    def changed(self) -> bool:
        return self.verdict_a != self.verdict_b


def paired_results(
    store: Store, run_a: str, run_b: str, *, page: int = 1, size: int = PAGE_SIZE, changed_only: bool = False
) -> tuple[list[PairRow], int]:
    """Samples in both runs (joined on the unique sample key), changed verdicts first, paged in SQL."""
    a, b = aliased(ResultRow), aliased(ResultRow)
    differs = or_(
        a.verdict != b.verdict,
        and_(a.verdict.is_(None), b.verdict.is_not(None)),
        and_(a.verdict.is_not(None), b.verdict.is_(None)),
    )
    join = and_(a.run_id == run_a, b.run_id == run_b, a.sample_key == b.sample_key)
    where: list[ColumnElement[bool]] = [join]
    if changed_only:
        where.append(differs)
    stmt = (
        select(a.sample_key, a.sample_id, a.judge, a.id, b.id, a.verdict, b.verdict, a.composite, b.composite)
        .select_from(a)
        .join(b, join)
        .where(*where)
        .order_by(case((differs, 0), else_=1), b.seq, b.id)
        .offset((page - 1) * size)
        .limit(size)
    )
    count = select(func.count()).select_from(a).join(b, join).where(*where)
    with store.session() as s:
        total = int(s.scalar(count) or 0)
        rows = s.execute(stmt).all()
    return [PairRow(*row) for row in rows], total


def distinct_values(store: Store, run_id: str, key: str, limit: int = 200) -> Sequence[str]:
    """Distinct string values of a top-level record field (intent) for a select box, bounded."""
    value = _record()[key].as_string()
    with store.session() as s:
        rows = s.scalars(
            select(value).where(ResultRow.run_id == run_id, value.is_not(None)).distinct().order_by(value).limit(limit)
        ).all()
    return [str(v) for v in rows]
