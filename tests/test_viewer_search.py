"""The run page's free-text search through the SQLite trigram index (bqas.viewer.search): the same matches
as a scan of every record, the run indexed on its first search and rows added later found too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import text

from bqas.store.db import Store, open_store
from bqas.store.models import ResultRow
from bqas.viewer import search
from bqas.viewer.query import RunFilter, list_results
from viewer_runs import make_run, record

QUERIES = ("s00012", "s000123", "Antwort 17", "ANTWORT 17", "上海", "{{ 7*7 }}", "100%", "s_0001", "xyz-none", "ign")


def _ids(store: Store, run_id: str, q: str) -> list[int]:
    rows, total = list_results(store, run_id, RunFilter(q=q), size=10_000)
    assert total == len(rows)
    return sorted(r.id for r in rows)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = open_store(f"sqlite:///{tmp_path / 'search.sqlite'}")
    make_run(store, "r-a", 700, seed=3)
    make_run(store, "r-b", 300, seed=4)
    return store


def test_index_gives_the_matches_of_a_scan(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    indexed = {q: _ids(store, "r-a", q) for q in QUERIES}
    with store.session() as s:
        state = dict(s.execute(text("SELECT run_id, max_id FROM results_fts_state")).all())
    assert list(state) == ["r-a"]  # indexed on its first search; r-b, never searched, is not
    monkeypatch.setattr(search, "candidates", lambda *a, **k: None)  # the scan, as before the index
    scanned = {q: _ids(store, "r-a", q) for q in QUERIES}
    assert indexed == scanned
    assert len(indexed["s00012"]) == 10 and indexed["Antwort 17"] and indexed["xyz-none"] == []
    assert indexed["ANTWORT 17"] == indexed["Antwort 17"]  # case-insensitive, as SQLite's LIKE


def test_the_index_answers_the_query(store: Store) -> None:
    clause = search.candidates(store, ResultRow, "r-a", "Antwort 17")
    assert clause is not None
    with store.session() as s:
        plan = " ".join(
            str(row[-1])
            for row in s.execute(
                text("EXPLAIN QUERY PLAN SELECT rowid FROM results_fts WHERE results_fts MATCH :p"),
                {"p": search.match_query("Antwort 17")},
            )
        )
    assert "VIRTUAL TABLE INDEX" in plan
    assert search.candidates(store, ResultRow, "r-a", "上海") is None  # < 3


def test_rows_added_after_the_first_search_are_found(store: Store) -> None:
    assert _ids(store, "r-a", "s000800") == []
    rng = random.Random(9)
    late = record(800, "r-a", rng)
    store.add_results("r-a", [(f"{late['sample_id']}::voice", 800, late)])
    assert len(_ids(store, "r-a", "s000800")) == 1
    assert _ids(store, "r-b", "s000800") == []


def test_a_large_run_is_indexed_in_the_background_and_scanned_meanwhile(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "CHUNK", 100)  # r-b's 300 rows are "large" now
    assert search.candidates(store, ResultRow, "r-b", "Antwort 17") is None  # scanned while it is filled
    search.wait_for_index("r-b", timeout=60)
    assert search.candidates(store, ResultRow, "r-b", "Antwort 17") is not None
    with store.session() as s:
        done = s.execute(text("SELECT max_id FROM results_fts_state WHERE run_id = 'r-b'")).scalar()
        newest = s.execute(text("SELECT max(id) FROM results WHERE run_id = 'r-b'")).scalar()
    assert done == newest
    monkeypatch.setattr(search, "candidates", lambda *a, **k: None)
    scanned = _ids(store, "r-b", "Antwort 17")
    monkeypatch.undo()
    assert _ids(store, "r-b", "Antwort 17") == scanned
