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

from sqlalchemy import (
    JSON,
    String,
    and_,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    not_,
    or_,
    select,
    text,
    type_coerce,
)
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement, TextClause

from bqas.store.db import Store
from bqas.store.models import ResultRow, SettledRow

# The results of a run, or for a run judged with --repeats its settled samples (one row per sample):
# the queries below run on either (the columns they use are the same).
Table = type[ResultRow] | type[SettledRow]

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
    "straddles",
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
    straddles: bool | None = None  # repeated runs: samples whose repeats disagree (straddle a threshold)
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
        straddles=_flag(values, "straddles"),
        changed=bool(changed),
        baseline=values["baseline"] or None,
        sort=sort,
    )
    return flt, values


def _record(table: Table = ResultRow) -> Any:
    # RedactedJSON is a TypeDecorator; coerce to plain JSON so its index operators are available.
    return type_coerce(table.record, JSON)


def _like(value: str) -> str:
    return "%" + value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _tag_clause(store: Store, tag: str, table: Table = ResultRow) -> TextClause:
    """Whether the record's ``tags`` list holds ``tag`` (json_each / json_array_elements_text)."""
    rec = f"{table.__tablename__}.record"  # one of two fixed table names, never input
    if store.dialect == "postgresql":
        return text(
            f"EXISTS (SELECT 1 FROM json_array_elements_text(CASE WHEN json_typeof({rec} -> 'tags') = "
            f"'array' THEN {rec} -> 'tags' ELSE '[]'::json END) AS t(v) WHERE t.v = :tag)"
        ).bindparams(tag=tag)
    return text(f"EXISTS (SELECT 1 FROM json_each({rec}, '$.tags') AS t WHERE t.value = :tag)").bindparams(tag=tag)


def _clauses(
    store: Store, run_id: str, flt: RunFilter, T: Table = ResultRow, base_table: Table = ResultRow
) -> list[ColumnElement[bool] | TextClause]:
    rec = _record(T)
    where: list[ColumnElement[bool] | TextClause] = [T.run_id == run_id]
    if flt.q:
        from bqas.viewer.search import candidates

        # The index narrows the rows down (SQLite); the LIKE decides, as it did for every row before.
        narrowed = candidates(store, T, run_id, flt.q)
        if narrowed is not None:
            where.append(narrowed)
        pattern = _like(flt.q)
        where.append(
            or_(
                T.sample_id.like(pattern, escape="\\"),
                cast(T.record, String).like(pattern, escape="\\"),
            )
        )
    if flt.verdict:
        where.append(T.verdict.is_(None) if flt.verdict == "none" else T.verdict == flt.verdict)
    # decision, intent and escalated are indexed columns copied from the record (migration 0008).
    if flt.decision:
        where.append(T.decision.is_(None) if flt.decision == "none" else T.decision == flt.decision)
    if flt.judge:
        where.append(T.judge == flt.judge)
    if flt.language:
        where.append(T.language == flt.language)
    if flt.intent:
        where.append(T.intent == flt.intent)
    if flt.tag:
        where.append(_tag_clause(store, flt.tag, T))
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
        where.append(T.escalated.is_(flt.escalated))
    if flt.unscored is not None:
        where.append(T.status == "unscored" if flt.unscored else T.status != "unscored")
    if flt.straddles is not None:
        # A run judged once has no straddling sample.
        straddles = SettledRow.straddles.is_(True) if T is SettledRow else false()
        where.append(straddles if flt.straddles else not_(straddles))
    if flt.changed and flt.baseline:
        base = aliased(base_table)
        where.append(
            exists().where(
                base.run_id == flt.baseline,
                base.sample_key == T.sample_key,
                or_(
                    base.verdict != T.verdict,
                    and_(base.verdict.is_(None), T.verdict.is_not(None)),
                    and_(base.verdict.is_not(None), T.verdict.is_(None)),
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
    # Repeated runs (settled samples): the repeat count, straddle flag and the composite's spread (std).
    repeats: int | None = None
    straddles: bool | None = None
    spread: float | None = None
    response: str | None = None  # the judged answer (inputs.response), shown clipped in the table


def list_results(
    store: Store,
    run_id: str,
    flt: RunFilter,
    *,
    page: int = 1,
    size: int = PAGE_SIZE,
    table: Table = ResultRow,
    base_table: Table = ResultRow,
) -> tuple[list[Row], int]:
    """One page of the run's results (or settled samples: ``table``) under the filter, and how many match.

    A settled sample's ``id`` is its canonical repeat's result id (the sample page's)."""
    T = table
    rec = _record(T)
    where = _clauses(store, run_id, flt, T, base_table)
    column, desc = SORTS[flt.sort]
    order_col = getattr(T, column)
    order: list[Any] = [order_col.desc() if desc else order_col.asc(), T.seq, T.id]
    if column != "seq":  # NULLs last in both directions (an unscored composite is not the best or the worst)
        order.insert(0, order_col.is_(None))
    # Two steps: the page's row ids first (sorting plain columns, the (run_id, seq) index for the default
    # order), then the record fields of those 50 rows only; selecting them in the sorted query made
    # SQLite extract JSON from every row before the OFFSET (seconds on the last page of 100,000).
    ids_stmt = select(T.id).where(*where).order_by(*order).offset((page - 1) * size).limit(size)
    settled = T is SettledRow
    columns: list[Any] = [
        T.id,
        SettledRow.result_id if settled else T.id,
        T.seq,
        T.sample_id,
        T.judge,
        T.status,
        T.verdict,
        T.composite,
        T.language,
        rec["decision"].as_string(),
        rec["decided_by"].as_string(),
        rec["escalation"].as_string(),
        rec["intent"].as_string(),
        rec[("expected", "verdict")].as_string(),
    ]
    with store.session() as s:
        total = int(s.scalar(select(func.count()).select_from(T).where(*where)) or 0)
        ids = list(s.scalars(ids_stmt))
        if not ids:
            return [], total
        stmt = select(*columns).where(T.id.in_(ids))
        if flt.baseline:
            base = aliased(base_table)
            # One baseline row per sample: a repeated baseline is joined through its settled samples.
            stmt = stmt.add_columns(base.verdict).outerjoin(
                base, and_(base.run_id == flt.baseline, base.sample_key == T.sample_key)
            )
        else:
            stmt = stmt.add_columns(literal(None))
        if settled:
            stmt = stmt.add_columns(SettledRow.repeats, SettledRow.straddles, SettledRow.spread)
        else:
            stmt = stmt.add_columns(literal(None), literal(None), literal(None))
        stmt = stmt.add_columns(rec[("inputs", "response")].as_string())
        found = {row[0]: row[1:] for row in s.execute(stmt).all()}
    return [Row(*found[i]) for i in ids if i in found], total


def filtered_histogram(
    store: Store, run_id: str, flt: RunFilter, bins: int = 10, table: Table = ResultRow, base_table: Table = ResultRow
) -> list[int]:
    """Counts of the composite score in ``bins`` equal bins over the results the filter shows (one query)."""
    return _histogram(store, table, bins, *_clauses(store, run_id, flt, table, base_table))


@dataclass
class RunFacets:
    """The values a filter can take in this run, with counts (for the select boxes)."""

    verdicts: list[tuple[str, int]] = field(default_factory=list)
    judges: list[tuple[str, int]] = field(default_factory=list)
    languages: list[tuple[str, int]] = field(default_factory=list)
    statuses: list[tuple[str, int]] = field(default_factory=list)


def run_facets(store: Store, run_id: str, table: Table = ResultRow) -> RunFacets:
    """Counts per verdict, judge, language and status (GROUP BY on indexed columns)."""
    out = RunFacets()
    with store.session() as s:
        for attr, column in (
            ("verdicts", table.verdict),
            ("judges", table.judge),
            ("languages", table.language),
            ("statuses", table.status),
        ):
            rows = s.execute(
                select(column, func.count()).where(table.run_id == run_id).group_by(column).order_by(column)
            ).all()
            setattr(out, attr, [(str(v) if v is not None else "none", int(n)) for v, n in rows])
    return out


def tag_breakdown(store: Store, run_id: str, limit: int = 100, table: Table = ResultRow) -> list[dict[str, Any]]:
    """Per tag: samples, passes (production_ready), failures, mean composite; most frequent tags first."""
    t = table.__tablename__  # one of two fixed table names, never input
    if store.dialect == "postgresql":
        source = (
            f"FROM {t}, json_array_elements_text(CASE WHEN json_typeof({t}.record -> 'tags') = 'array' "
            f"THEN {t}.record -> 'tags' ELSE '[]'::json END) AS t(value)"
        )
    else:
        source = f"FROM {t}, json_each({t}.record, '$.tags') AS t"
    sql = text(
        f"SELECT t.value, COUNT(*), SUM(CASE WHEN {t}.verdict = 'production_ready' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {t}.verdict = 'failed' THEN 1 ELSE 0 END), AVG({t}.composite) "
        f"{source} WHERE {t}.run_id = :run GROUP BY t.value ORDER BY COUNT(*) DESC, t.value LIMIT :limit"
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


def composite_histogram(store: Store, run_id: str, bins: int = 10, table: Table = ResultRow) -> list[int]:
    """Counts of the composite score (0–100) in ``bins`` equal bins, the top edge in the last (one query)."""
    return _histogram(store, table, bins, table.run_id == run_id)


def _histogram(store: Store, table: Table, bins: int, *where: Any) -> list[int]:
    """Counts of the composite score (0–100) in ``bins`` equal bins among the rows ``where`` selects, the top
    edge in the last bin (one query)."""
    width = 100.0 / bins
    sums = [
        func.sum(
            case(
                (
                    and_(
                        table.composite >= i * width,
                        table.composite < (i + 1) * width if i < bins - 1 else table.composite <= 100.0,
                    ),
                    1,
                ),
                else_=0,
            )
        )
        for i in range(bins)
    ]
    with store.session() as s:
        row = s.execute(select(*sums).where(*where)).one()
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
    record["_seq"], record["_key"], record["_id"] = row[1], row[2], result_id
    return record


def result_id_of_sample(
    store: Store, run_id: str, sample_id: str, judge: str | None = None, table: Table = ResultRow
) -> int | None:
    """The result id the sample page of ``sample_id`` shows: of ``judge`` when given, else of the sample's
    first judgment in the run; for a repeated run its canonical repeat."""
    link = SettledRow.result_id if table is SettledRow else table.id
    where = [table.run_id == run_id, table.sample_id == sample_id]
    if judge is not None:
        where.append(table.judge == judge)
    with store.session() as s:
        value = s.scalar(select(link).where(*where).order_by(table.seq, table.id).limit(1))
    return int(value) if value is not None else None


def get_exchange(store: Store, run_id: str, result_id: int) -> dict[str, Any] | None:
    """The stored LLM exchange of one result (its own column, read by the sample page only)."""
    with store.session() as s:
        value = s.scalar(select(ResultRow.exchange).where(ResultRow.run_id == run_id, ResultRow.id == result_id))
    return dict(value) if isinstance(value, Mapping) else None


def earlier_turns(store: Store, run_id: str, sample_id: str) -> list[dict[str, Any]]:
    """The turns of a conversation before this one (a turn's sample id is ``SAMPLE#N``): for each, what the
    user said and what the assistant answered, as the run's records hold them."""
    base, sep, index = sample_id.rpartition("#")
    if not sep or not index.isdigit() or int(index) == 0:
        return []
    ids = [f"{base}#{i}" for i in range(int(index))]
    with store.session() as s:
        rows = s.execute(
            select(ResultRow.sample_id, ResultRow.record)
            .where(ResultRow.run_id == run_id, ResultRow.sample_id.in_(ids))
            .order_by(ResultRow.seq, ResultRow.id)
        ).all()
    turns: dict[str, dict[str, Any]] = {}
    for sid, record in rows:
        if sid in turns or not isinstance(record, Mapping):
            continue
        found = record.get("inputs")
        inputs: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        turns[sid] = {
            "turn": int(sid.rpartition("#")[2]),
            "user": inputs.get("user_input") or inputs.get("question") or inputs.get("input"),
            "assistant": inputs.get("response") or inputs.get("answer"),
        }
    return sorted(turns.values(), key=lambda t: int(t["turn"]))


def record_by_key(
    store: Store, run_id: str, sample_key: str, table: Table = ResultRow
) -> tuple[int, dict[str, Any]] | None:
    """(result id, record) of one sample key in a run (for settled samples: the canonical repeat's id)."""
    link = SettledRow.result_id if table is SettledRow else table.id
    with store.session() as s:
        row = s.execute(
            select(link, table.record).where(table.run_id == run_id, table.sample_key == sample_key)
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
    response_a: str | None = None
    response_b: str | None = None

    @property
    def changed(self) -> bool:
        return self.verdict_a != self.verdict_b

    def response_diff(self) -> list[tuple[str, str]]:
        """The two answers word by word: ("same" | "del" | "ins", text); empty when they are equal."""
        import difflib

        a, b = (self.response_a or "").split(" "), (self.response_b or "").split(" ")
        if a == b:
            return []
        out: list[tuple[str, str]] = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op == "equal":
                out.append(("same", " ".join(a[i1:i2])))
                continue
            if i2 > i1:
                out.append(("del", " ".join(a[i1:i2])))
            if j2 > j1:
                out.append(("ins", " ".join(b[j1:j2])))
        return out


def paired_results(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    page: int = 1,
    size: int = PAGE_SIZE,
    changed_only: bool = False,
    tables: tuple[Table, Table] = (ResultRow, ResultRow),
) -> tuple[list[PairRow], int]:
    """Samples in both runs (joined on the unique sample key), changed verdicts first, paged in SQL.

    A run judged with ``--repeats`` takes part with its settled samples (``tables``): one pair per sample."""
    a, b = aliased(tables[0]), aliased(tables[1])
    id_a = a.result_id if tables[0] is SettledRow else a.id  # type: ignore[union-attr]
    id_b = b.result_id if tables[1] is SettledRow else b.id  # type: ignore[union-attr]
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
        select(
            a.sample_key,
            a.sample_id,
            a.judge,
            id_a,
            id_b,
            a.verdict,
            b.verdict,
            a.composite,
            b.composite,
            type_coerce(a.record, JSON)[("inputs", "response")].as_string(),
            type_coerce(b.record, JSON)[("inputs", "response")].as_string(),
        )
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


def distinct_values(store: Store, run_id: str, key: str, limit: int = 200, table: Table = ResultRow) -> Sequence[str]:
    """Distinct values of a filter column (intent) for a select box, bounded (its (run, field) index)."""
    column = {"intent": table.intent, "decision": table.decision, "language": table.language}[key]
    with store.session() as s:
        rows = s.scalars(
            select(column).where(table.run_id == run_id, column.is_not(None)).distinct().order_by(column).limit(limit)
        ).all()
    return [str(v) for v in rows]


@dataclass(frozen=True)
class RepeatRow:
    """One repeat of a sample judged with ``--repeats``."""

    id: int
    repeat: int
    status: str
    verdict: str | None
    composite: float | None


def repeats_of(store: Store, run_id: str, sample_key: str) -> list[RepeatRow]:
    """Every repeat of one sample key in a run, in repeat order (the unique index on run, key, repeat)."""
    with store.session() as s:
        rows = s.execute(
            select(ResultRow.id, ResultRow.repeat, ResultRow.status, ResultRow.verdict, ResultRow.composite)
            .where(ResultRow.run_id == run_id, ResultRow.sample_key == sample_key)
            .order_by(ResultRow.repeat)
        ).all()
    return [RepeatRow(*row) for row in rows]


def settled_of(store: Store, run_id: str, sample_key: str) -> dict[str, Any] | None:
    """The settled sample of one key (canonical record, repeats, straddle and tie flags, spread) or None."""
    with store.session() as s:
        row = s.execute(
            select(
                SettledRow.result_id,
                SettledRow.verdict,
                SettledRow.repeats,
                SettledRow.straddles,
                SettledRow.tie,
                SettledRow.spread,
                SettledRow.record,
            ).where(SettledRow.run_id == run_id, SettledRow.sample_key == sample_key)
        ).first()
    if row is None:
        return None
    names = ("result_id", "verdict", "repeats", "straddles", "tie", "spread", "record")
    return dict(zip(names, row, strict=True))
