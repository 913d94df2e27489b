"""The run page's free-text search (``q``) through an index instead of a scan of every record.

SQLite keeps ``results_fts`` (migration 0012: FTS5 over a view of the results, trigram tokenizer, no
positions). A run's
results go into it when the run is first searched, and the rows added since on later searches
(``results_fts_state``), so runs that are never searched cost nothing and `bqas run` writes no index.
Filling it for a large run takes a while (a minute for 50,000 results on a busy 2-core machine): that is
done in a background thread in chunks of short transactions (a `bqas run` writing to the same store is
not held up), and until it is done the search scans as before. A few new rows are indexed at once.

The index gives the candidate rows (those holding every three-character piece of the text); the same
``LIKE`` as before then decides among them, so the matches are exactly those of the scan. Text shorter
than three characters has no piece and is scanned. PostgreSQL needs nothing here: its trigram GIN index
serves the ``LIKE`` itself.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import ColumnElement, column, select, table, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from bqas.store.db import Store
from bqas.store.models import ResultRow

log = logging.getLogger("bqas.viewer")

#: The trigram tokenizer needs three characters; shorter text is scanned.
MIN_CHARS = 3
#: Rows per indexing transaction; a run with fewer new rows than this is indexed during the search.
CHUNK = 2000
_FTS = table("results_fts", column("rowid"))
_lock = threading.Lock()  # one indexing pass per process at a time (two would insert the same rows)
_building: dict[str, threading.Thread] = {}  # runs being indexed in the background, by run id


def _state(store: Store, run_id: str) -> tuple[int, int | None] | None:
    """(indexed up to this result id, the run's newest result id), or None without an index."""
    with store.session() as s:
        try:
            done = s.execute(text("SELECT max_id FROM results_fts_state WHERE run_id = :run"), {"run": run_id}).scalar()
        except OperationalError:  # no such table: an SQLite without FTS5 / trigram when the store was made
            return None
        newest = s.scalar(select(ResultRow.id).where(ResultRow.run_id == run_id).order_by(ResultRow.id.desc()).limit(1))
    return int(done or 0), newest


def _index_chunk(store: Store, run_id: str) -> bool:
    """Index the next ``CHUNK`` rows of the run not yet in the index; False when there were none."""
    with _lock, store.session.begin() as s:
        done = s.execute(text("SELECT max_id FROM results_fts_state WHERE run_id = :run"), {"run": run_id}).scalar()
        ids = list(
            s.scalars(
                select(ResultRow.id)
                .where(ResultRow.run_id == run_id, ResultRow.id > (done or 0))
                .order_by(ResultRow.id)
                .limit(CHUNK)
            )
        )
        if not ids:
            return False
        s.execute(
            text(
                "INSERT INTO results_fts(rowid, body) SELECT id, sample_id || char(10) || record FROM results "
                "WHERE run_id = :run AND id > :done AND id <= :last"
            ),
            {"run": run_id, "done": done or 0, "last": ids[-1]},
        )
        s.execute(
            text(
                "INSERT INTO results_fts_state(run_id, max_id) VALUES (:run, :last) "
                "ON CONFLICT(run_id) DO UPDATE SET max_id = excluded.max_id"
            ),
            {"run": run_id, "last": ids[-1]},
        )
    return True


def _index_in_background(store: Store, run_id: str) -> None:
    def work() -> None:
        try:
            while _index_chunk(store, run_id):
                pass
        except (OperationalError, ProgrammingError) as exc:
            log.warning("free-text search index of run %s: %s", run_id, exc)
        finally:
            _building.pop(run_id, None)

    with _lock:
        if run_id in _building:
            return
        thread = threading.Thread(target=work, name=f"bqas-search-index-{run_id}", daemon=True)
        _building[run_id] = thread
    thread.start()


def wait_for_index(run_id: str, timeout: float | None = None) -> None:
    """Wait until the background indexing of ``run_id`` (if any) is done (tests, benchmarks)."""
    thread = _building.get(run_id)
    if thread is not None:
        thread.join(timeout)


def candidates(store: Store, table_: Any, run_id: str, q: str) -> ColumnElement[bool] | None:
    """A clause limiting ``table_`` to the rows the index says may hold ``q``, or None (scan them all):
    PostgreSQL (its own index serves the scan's LIKE), the settled table of repeated runs, short text, a
    store without the index, or a run whose index is still being filled."""
    if store.dialect != "sqlite" or table_ is not ResultRow or len(q) < MIN_CHARS:
        return None
    try:
        state = _state(store, run_id)
        if state is None:
            return None
        done, newest = state
        if newest is not None and newest > done:
            if run_id in _building or newest - done > CHUNK:
                _index_in_background(store, run_id)
                return None
            while _index_chunk(store, run_id):
                pass
    except (OperationalError, ProgrammingError) as exc:  # e.g. a read-only store: search by scanning
        log.warning("free-text search without its index: %s", exc)
        return None
    return table_.id.in_(select(_FTS.c.rowid).where(text("results_fts MATCH :q").bindparams(q=match_query(q))))


def match_query(q: str) -> str:
    """Every three-character piece of ``q``, each a quoted term, joined by AND (the index keeps no
    positions, so not their order: the LIKE afterwards checks that)."""
    pieces = sorted({q[i : i + 3].lower() for i in range(len(q) - 2)})
    return " AND ".join('"' + p.replace('"', '""') + '"' for p in pieces)
