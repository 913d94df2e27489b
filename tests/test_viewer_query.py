"""The viewer's SQL (bqas.viewer.query): every filter, the sort and the paging against a plain-Python
reading of the same records, on SQLite and (when BQAS_TEST_POSTGRES_URL is set) PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bqas.store.db import Store, open_store
from bqas.viewer.query import (
    RunFilter,
    composite_histogram,
    list_results,
    paired_results,
    parse_run_filter,
    run_facets,
    tag_breakdown,
)
from pg_support import fresh_postgres_database
from viewer_runs import HOSTILE, make_run, record

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]
N = 600


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    with contextlib.ExitStack() as stack:
        # PostgreSQL: a database of this test's own, so that tests running at once under xdist do not
        # delete or add to each other's runs (the fixed run ids below).
        url = (
            f"sqlite:///{tmp_path / 'v.sqlite'}"
            if request.param == "sqlite"
            else stack.enter_context(fresh_postgres_database("bqas_vq"))
        )
        st = open_store(url)
        stack.callback(st.engine.dispose)
        make_run(st, "vq-a", N, seed=1)
        make_run(st, "vq-b", N, seed=2, shift=-6.0)
        yield st


def _records(seed: int, shift: float = 0.0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [record(i, "x", rng, shift) for i in range(N)]


def _ids(store: Store, flt: RunFilter, run: str = "vq-a") -> list[str]:
    out: list[str] = []
    page = 1
    while True:
        rows, total = list_results(store, run, flt, page=page, size=200)
        out += [r.sample_id for r in rows]
        if len(out) >= total:
            assert len(out) == total
            return out
        page += 1


def _expect(pred: Any) -> list[str]:
    return [r["sample_id"] for r in _records(1) if pred(r)]


def test_every_filter_matches_a_plain_reading_of_the_records(store: Store) -> None:
    cases: list[tuple[dict[str, str], Any]] = [
        ({"verdict": "failed"}, lambda r: r["verdict"] == "failed"),
        ({"decision": "escalate"}, lambda r: r["decision"] == "escalate"),
        ({"decision": "none"}, lambda r: r["decision"] is None),
        ({"judge": "voice"}, lambda r: True),
        ({"language": "zh"}, lambda r: r["language"] == "zh"),
        ({"intent": "music.play"}, lambda r: r["intent"] == "music.play"),
        ({"tag": "regression"}, lambda r: "regression" in r["tags"]),
        ({"tag": "长尾"}, lambda r: "长尾" in r["tags"]),
        ({"dim": "faithfulness", "min": "4"}, lambda r: r["faithfulness"] >= 4),
        ({"dim": "faithfulness", "min": "2", "max": "3"}, lambda r: 2 <= r["faithfulness"] <= 3),
        # Not-measured values are not in a dimension range.
        ({"dim": "coherence", "min": "0"}, lambda r: r["dimensions"]["coherence"]["measured"]),
        ({"escalated": "yes"}, lambda r: r["escalation"] is not None),
        ({"escalated": "no"}, lambda r: r["escalation"] is None),
        ({"unscored": "yes"}, lambda r: r["status"] == "unscored"),
        ({"q": "s00012"}, lambda r: "s00012" in r["sample_id"]),
        ({"q": "上海"}, lambda r: "上海" in r["inputs"]["user_input"]),
        ({"q": "{{ 7*7 }}"}, lambda r: r["inputs"]["user_input"] == HOSTILE),
        ({"q": "100%"}, lambda r: False),  # % is a literal, not a wildcard
        ({"q": "s_0001"}, lambda r: False),  # _ too
        ({"language": "de", "verdict": "production_ready", "tag": "weather"}, None),
    ]
    for params, pred in cases:
        flt, _ = parse_run_filter(params)
        if pred is None:
            expected = _expect(
                lambda r: r["language"] == "de" and r["verdict"] == "production_ready" and "weather" in r["tags"]
            )
        else:
            expected = _expect(pred)
        assert _ids(store, flt) == expected, params
    assert _ids(store, parse_run_filter({"escalated": "yes"})[0])  # the data has some of each
    assert _ids(store, parse_run_filter({"unscored": "yes"})[0])


def test_changed_vs_baseline_and_the_baseline_column(store: Store) -> None:
    a, b = _records(1), _records(2, -6.0)
    changed = [y["sample_id"] for x, y in zip(a, b, strict=True) if x["verdict"] != y["verdict"]]
    flt, _ = parse_run_filter({"baseline": "vq-a", "changed": "yes"})
    assert changed and _ids(store, flt, "vq-b") == changed
    rows, _total = list_results(store, "vq-b", parse_run_filter({"baseline": "vq-a"})[0], size=5)
    assert [r.baseline_verdict for r in rows] == [x["verdict"] for x in a[:5]]


def test_sort_pages_and_nulls_last(store: Store) -> None:
    scored = sorted((r for r in _records(1) if r["composite_score"] is not None), key=lambda r: -r["composite_score"])
    rows, total = list_results(store, "vq-a", parse_run_filter({"sort": "-composite"})[0], page=1, size=10)
    assert total == N and [r.composite for r in rows] == [r["composite_score"] for r in scored[:10]]
    last, _ = list_results(store, "vq-a", parse_run_filter({"sort": "composite"})[0], page=N // 10, size=10)
    assert last[-1].composite is None  # unscored results come last, not first
    second, _ = list_results(store, "vq-a", RunFilter(), page=2, size=10)
    assert [r.seq for r in second] == list(range(10, 20))


def test_facets_tags_histogram_and_pairs(store: Store) -> None:
    recs = _records(1)
    facets = run_facets(store, "vq-a")
    assert dict(facets.languages) == {"de": 200, "en": 200, "zh": 200}
    assert sum(n for _, n in facets.verdicts) == N
    tags = {t["tag"]: t for t in tag_breakdown(store, "vq-a")}
    assert tags["regression"]["n"] == sum("regression" in r["tags"] for r in recs)
    assert tags["weather"]["failed"] == sum("weather" in r["tags"] and r["verdict"] == "failed" for r in recs)
    hist = composite_histogram(store, "vq-a")
    scores = [r["composite_score"] for r in recs if r["composite_score"] is not None]
    assert sum(hist) == len(scores)
    assert hist[9] == sum(90 <= s <= 100 for s in scores) and hist[0] == sum(s < 10 for s in scores)
    pairs, total = paired_results(store, "vq-a", "vq-b", size=N)
    assert total == N
    flags = [p.changed for p in pairs]
    assert any(flags) and flags == sorted(flags, reverse=True)  # changed verdicts first
    only, n_changed = paired_results(store, "vq-a", "vq-b", changed_only=True)
    assert all(p.changed for p in only) and n_changed == sum(flags)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"decision": "maybe"}, "decision"),
        ({"dim": "x'); DROP TABLE results; --"}, "dim"),
        ({"dim": "faithfulness", "min": "abc"}, "min"),
        ({"dim": "faithfulness", "max": "nan"}, "max"),
        ({"min": "1"}, "min/max"),
        ({"escalated": "perhaps"}, "escalated"),
        ({"changed": "yes"}, "changed"),
        ({"sort": "id; --"}, "sort"),
        ({"q": "x" * 201}, "q"),
        ({"baseline": "../etc"}, "baseline"),
    ],
)
def test_bad_filters_name_the_parameter(params: dict[str, str], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        parse_run_filter(params)


def _repeated_run(store: Store, run_id: str, n: int = 120, repeats: int = 3) -> list[dict[str, Any]]:
    """A run judged ``repeats`` times per sample, the repeats' composites scattered around each sample's."""
    from bqas.runner.repeats import settle

    rng = random.Random(7)
    store.create_run(run_id, "viewer-test", {"judges": ["voice"], "repeats": repeats}, total=n * repeats)
    rows: list[tuple[str, int, dict[str, Any]]] = []
    for i in range(n):
        base = record(i, run_id, random.Random(i))
        for r in range(1, repeats + 1):
            rec = {**base, "repeat": r, "dimensions": dict(base["dimensions"])}
            if rec["composite_score"] is not None:
                composite = max(0.0, min(100.0, rec["composite_score"] + rng.gauss(0, 8)))
                rec["composite_score"] = round(composite, 2)
                rec["verdict"] = (
                    "production_ready" if composite >= 80 else "needs_review" if composite >= 60 else "failed"
                )
            rows.append((f"{rec['sample_id']}::voice", i, rec))
    store.add_results(run_id, rows)
    store.update_run(run_id, status="done")
    return list(settle(rec for _, _, rec in rows))


def test_settled_samples_list_filter_and_count_per_sample(store: Store) -> None:
    from bqas.runner.settled import write_settled
    from bqas.store.models import SettledRow

    canonical = _repeated_run(store, "vq-rep")
    _repeated_run(store, "vq-rep2")
    assert write_settled(store, "vq-rep") == 120 and write_settled(store, "vq-rep2") == 120
    assert write_settled(store, "vq-rep") == 120  # rewritten, not added to
    cases: list[tuple[dict[str, str], Any]] = [
        ({}, lambda r: True),
        ({"verdict": "failed"}, lambda r: r["verdict"] == "failed"),
        ({"straddles": "yes"}, lambda r: r["repeats"]["straddles"]),
        ({"straddles": "no", "language": "zh"}, lambda r: not r["repeats"]["straddles"] and r["language"] == "zh"),
        ({"tag": "regression"}, lambda r: "regression" in r["tags"]),
        ({"unscored": "yes"}, lambda r: r["status"] == "unscored"),
    ]
    assert any(r["repeats"]["straddles"] for r in canonical) and any(r["repeats"]["tie"] for r in canonical)
    for params, pred in cases:
        flt, _ = parse_run_filter(params)
        rows, total = list_results(store, "vq-rep", flt, size=500, table=SettledRow)
        want = [r["sample_id"] for r in canonical if pred(r)]
        assert [r.sample_id for r in rows] == want and total == len(want), params
        assert all(r.repeats == 3 for r in rows)
    rows, _ = list_results(store, "vq-rep", RunFilter(), size=500, table=SettledRow)
    by_id = {r["sample_id"]: r for r in canonical}
    for row in rows:  # the canonical verdict, the spread and the straddle flag of settle()
        info = by_id[row.sample_id]["repeats"]
        assert row.verdict == by_id[row.sample_id]["verdict"] and row.straddles == info["straddles"]
        assert row.spread == info["composite"]["std"]
    tags = {t["tag"]: t["n"] for t in tag_breakdown(store, "vq-rep", table=SettledRow)}
    assert tags["regression"] == sum(1 for r in canonical if "regression" in r["tags"])  # samples, not repeats
    pairs, total = paired_results(store, "vq-rep", "vq-rep2", size=500, tables=(SettledRow, SettledRow))
    assert total == 120 and len({p.sample_key for p in pairs}) == 120


def _fresh_database(kind: str, tmp_path: Path) -> Iterator[str]:
    """A new empty database: a SQLite file, or a PostgreSQL database created next to the test one."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.sqlite'}"
        return
    with fresh_postgres_database("bqas_mig") as url:
        yield url


@pytest.mark.parametrize("kind", BACKENDS)
def test_the_filter_columns_are_filled_from_the_records_of_an_older_store(kind: str, tmp_path: Path) -> None:
    """Migration 0008 copies decision, intent and escalated out of the records stored before it."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    for url in _fresh_database(kind, tmp_path):
        cfg = Config()
        cfg.set_main_option("script_location", "bqas.store:migrations")
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
        command.upgrade(cfg, "0007")  # a store as the previous BQAS wrote it: no filter columns
        records = _records(3)
        records[5]["intent"] = {"not": "a string"}  # stays NULL, as the runner would write it
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO runs (id, kind, scenario, config, status, total, started_at) "
                    "VALUES ('old', 'scenario', 's', '{}', 'done', 0, CURRENT_TIMESTAMP)"
                )
            )
            for i, rec in enumerate(records):
                conn.execute(
                    text(
                        "INSERT INTO results (run_id, sample_key, seq, repeat, sample_id, judge, status, verdict, "
                        "composite, language, record, created_at) VALUES ('old', :key, :seq, 1, :sid, 'voice', "
                        ":status, :verdict, :composite, :language, :record, CURRENT_TIMESTAMP)"
                    ),
                    {
                        "key": f"{rec['sample_id']}::voice",
                        "seq": i,
                        "sid": rec["sample_id"],
                        "status": rec["status"],
                        "verdict": rec["verdict"],
                        "composite": rec["composite_score"],
                        "language": rec["language"],
                        "record": json.dumps(rec, ensure_ascii=False),
                    },
                )
        engine.dispose()
        store = open_store(url)  # migrates to the head
        for params, pred in [
            ({"decision": "escalate"}, lambda r: r["decision"] == "escalate"),
            ({"decision": "none"}, lambda r: r["decision"] is None),
            ({"intent": "music.play"}, lambda r: r["intent"] == "music.play"),
            ({"escalated": "yes"}, lambda r: r["escalation"] is not None),
            ({"escalated": "no", "language": "de"}, lambda r: r["escalation"] is None and r["language"] == "de"),
        ]:
            flt, _ = parse_run_filter(params)
            rows, total = list_results(store, "old", flt, size=1000)
            want = [r["sample_id"] for r in records if pred(r)]
            assert [r.sample_id for r in rows] == want and total == len(want), params
        flt, _ = parse_run_filter({"intent": "music.play"})
        assert records[5]["sample_id"] not in {r.sample_id for r in list_results(store, "old", flt, size=1000)[0]}
        store.engine.dispose()
