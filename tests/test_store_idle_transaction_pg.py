"""A process frozen in the middle of a store transaction (a Ray node or job worker SIGSTOPped, its VM
paused) must not block the writes of whoever takes its work over: the server ends its transaction after
``BQAS_DB_IDLE_IN_TRANSACTION_SECONDS`` without a statement and frees its row locks.

The frozen process is real: a child writes results through ``Store.add_results`` (or a job's turn through
``add_item``) and stops itself with SIGSTOP just before its COMMIT, holding the rows' locks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import select, text

from bqas.settings import Settings, get_settings
from bqas.store.db import Store, database_limits, database_unavailable, open_store
from bqas.store.models import ResultRow
from pg_support import fresh_postgres_database

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one with scripts/ci-postgres.sh)")

RUN = "r-frozen"
KEYS = [f"s{i}::voice" for i in range(3)]
# The bound of the test (the shipped default is 60 s), and a statement timeout well above it: with the bound,
# the taker's INSERT waits on the frozen rows until the server ends their transaction, then goes through.
BOUND = "2"
STATEMENT_TIMEOUT = "8"

# Stops this process (SIGSTOP) at its first COMMIT: after its statements ran, before the server is told to
# commit them. On SIGCONT it goes on and reports how the COMMIT ended.
CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from sqlalchemy import event
    from bqas.store.db import database_unavailable, open_store

    url, what, run_or_job = sys.argv[1:4]
    store = open_store(url)
    stopped = []

    def freeze(_conn):
        if not stopped:
            stopped.append(True)
            os.kill(os.getpid(), signal.SIGSTOP)

    event.listen(store.engine, "commit", freeze)
    try:
        if what == "results":
            rows = [
                (f"s{i}::voice", i, {"sample_id": f"s{i}", "judge": "voice", "status": "scored", "by": "frozen"})
                for i in range(3)
            ]
            store.add_results(run_or_job, rows)
        elif what == "submit":
            from bqas.store.service import create_job_once

            create_job_once(
                store, "t1", "score", {"by": "frozen"}, 1, key=run_or_job, request_hash="h", retention_seconds=3600
            )
        else:
            from bqas.store.service import add_item

            add_item(store, run_or_job, 0, {"turn": 0, "results": [], "by": "frozen"}, "w-frozen")
    except Exception as exc:
        orig = getattr(exc, "orig", None) or exc
        print(f"commit failed: {type(orig).__name__}: {orig}; unavailable={database_unavailable(exc)}")
        sys.exit(3)
    print("committed")
    """
)


@pytest.fixture
def pg_db() -> Iterator[str]:
    with fresh_postgres_database("bqas_idle_tx") as url:
        yield url


def _settings(monkeypatch: pytest.MonkeyPatch, bound: str) -> None:
    monkeypatch.setenv("BQAS_DB_IDLE_IN_TRANSACTION_SECONDS", bound)
    monkeypatch.setenv("BQAS_DB_STATEMENT_TIMEOUT", STATEMENT_TIMEOUT)
    get_settings.cache_clear()


@contextmanager
def frozen_writer(url: str, what: str, run_or_job: str) -> Iterator[subprocess.Popen[str]]:
    """A child process stopped (SIGSTOP) inside its transaction, its statements run, its COMMIT not sent;
    killed on the way out if still there."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, what, run_or_job],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        _pid, status = os.waitpid(child.pid, os.WUNTRACED)  # returns once the child has stopped (or ended)
        if not os.WIFSTOPPED(status):
            child.returncode = os.waitstatus_to_exitcode(status)
            out, err = child.communicate(timeout=30)
            pytest.fail(f"the writer ended instead of stopping in its transaction: {out}{err[-2000:]}")
        yield child
    finally:
        if child.returncode is None:
            child.kill()  # SIGKILL ends a stopped process too
            child.wait(timeout=30)


def _thaw(child: subprocess.Popen[str]) -> tuple[int, str]:
    child.send_signal(signal.SIGCONT)
    out, err = child.communicate(timeout=60)
    return child.returncode, out + err[-2000:]


def _rows(store: Store) -> list[tuple[str, Any]]:
    with store.session() as s:
        return [
            (key, record.get("by"))
            for key, record in s.execute(
                select(ResultRow.sample_key, ResultRow.record)
                .where(ResultRow.run_id == RUN)
                .order_by(ResultRow.sample_key)
            ).all()
        ]


def _records(by: str) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (key, i, {"sample_id": key.split("::")[0], "judge": "voice", "status": "scored", "by": by})
        for i, key in enumerate(KEYS)
    ]


def test_a_frozen_writer_s_transaction_is_ended_and_the_taker_stores_its_keys_once(
    pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settings(monkeypatch, BOUND)
    store = open_store(pg_db)
    try:
        store.create_run(RUN, "frozen", {})
        with frozen_writer(pg_db, "results", RUN) as frozen:
            # The batch re-sent to another actor: the same keys, through another connection.
            assert store.add_results(RUN, _records("taker")) == len(KEYS)
            assert _rows(store) == [(key, "taker") for key in KEYS]
            # The frozen node comes back: its COMMIT finds its session ended, which BQAS treats as the
            # database being unavailable (a retry, never a failed sample); nothing of it was stored.
            code, said = _thaw(frozen)
        assert code == 3, said
        assert "IdleInTransactionSessionTimeout" in said and "unavailable=True" in said, said
        assert _rows(store) == [(key, "taker") for key in KEYS]
    finally:
        store.engine.dispose()


def test_without_the_bound_the_taker_fails_at_its_statement_timeout(
    pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _settings(monkeypatch, "0")
    store = open_store(pg_db)
    try:
        store.create_run(RUN, "frozen", {})
        with frozen_writer(pg_db, "results", RUN):
            with pytest.raises(Exception) as failed:
                store.add_results(RUN, _records("taker"))
            assert database_unavailable(failed.value)
            assert type(getattr(failed.value, "orig", None)).__name__ == "QueryCanceled", failed.value
            assert "statement timeout" in str(failed.value)
        # The frozen writer was killed, not thawed: the server rolled its transaction back, and the
        # taker's write goes through now.
        assert _rows(store) == []
        assert store.add_results(RUN, _records("taker")) == len(KEYS)
        assert _rows(store) == [(key, "taker") for key in KEYS]
    finally:
        store.engine.dispose()


def _job(store: Store) -> str:
    """A job whose worker (``w-frozen``) claimed it and whose lease has already run out."""
    from bqas.store.service import claim_job, create_job

    job_id = create_job(store, "t1", "score", {"question": "q"}, 1)
    claimed = claim_job(store, "w-frozen", lease_seconds=0.0)
    assert claimed is not None and claimed.id == job_id
    return job_id


def _claim_when_free(store: Store, worker: str) -> Any:
    """Claim a job; a row still locked by the frozen worker is skipped (SKIP LOCKED), so try again a while."""
    from bqas.store.service import claim_job

    for _ in range(300):
        job = claim_job(store, worker, lease_seconds=60.0)
        if job is not None:
            return job
        time.sleep(0.2)
    return None


def test_a_job_whose_worker_froze_mid_write_is_claimed_again_and_its_turn_stored_once(
    pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bqas.store.service import add_item, get_job, item_rows

    _settings(monkeypatch, BOUND)
    store = open_store(pg_db)
    try:
        job_id = _job(store)
        with frozen_writer(pg_db, "item", job_id) as frozen:
            job = _claim_when_free(store, "w-taker")
            assert job is not None and job.id == job_id and job.claims == 2
            assert add_item(store, job_id, 0, {"turn": 0, "results": []}, "w-taker")
            code, said = _thaw(frozen)
        assert code == 3 and "IdleInTransactionSessionTimeout" in said, said
        assert item_rows(store, job_id) == [(0, "w-taker")]
        view = get_job(store, job_id)
        assert view is not None and view.done == 1
    finally:
        store.engine.dispose()


def test_without_the_bound_a_frozen_worker_s_job_cannot_be_claimed(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from bqas.store.service import claim_job

    _settings(monkeypatch, "0")
    store = open_store(pg_db)
    try:
        job_id = _job(store)
        with frozen_writer(pg_db, "item", job_id):
            # Its lease ran out, but its row is locked by the frozen transaction: skipped.
            assert claim_job(store, "w-taker", lease_seconds=60.0) is None
        # The frozen worker killed: its transaction rolled back, its row free.
        job = _claim_when_free(store, "w-taker")
        assert job is not None and job.id == job_id
    finally:
        store.engine.dispose()


def test_a_submission_a_frozen_replica_left_uncommitted_does_not_block_its_retry(
    pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client retries its submission with the same Idempotency-Key on another replica: once the server
    ended the frozen replica's transaction, the retry creates the job, and there is one job."""
    from bqas.store.service import Job, create_job_once

    _settings(monkeypatch, BOUND)
    store = open_store(pg_db)
    try:
        with frozen_writer(pg_db, "submit", "key-1") as frozen:
            job_id, created = create_job_once(
                store, "t1", "score", {"by": "taker"}, 1, key="key-1", request_hash="h", retention_seconds=3600
            )
            assert created
            code, said = _thaw(frozen)
        assert code == 3 and "IdleInTransactionSessionTimeout" in said, said
        with store.session() as s:
            assert [(j.id, j.request) for j in s.scalars(select(Job))] == [(job_id, {"by": "taker"})]
    finally:
        store.engine.dispose()


def test_the_bound_reaches_the_server_for_every_store_session(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for bound, expected in ((BOUND, "2s"), ("0", "0")):
        _settings(monkeypatch, bound)
        store = open_store(pg_db)
        try:
            with store.engine.connect() as conn:
                assert conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar() == expected
                assert conn.execute(text("SHOW statement_timeout")).scalar() == f"{STATEMENT_TIMEOUT}s"
        finally:
            store.engine.dispose()


def test_a_store_opened_with_given_limits_ignores_this_process_s_environment(
    pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray judge actor opens the store with the driver's settings: its node's environment (here: no bound)
    does not decide how long a transaction of an actor frozen mid-write may keep its rows."""
    _settings(monkeypatch, "0")
    driver = Settings(db_idle_in_transaction_seconds=5, db_statement_timeout=3)
    store = open_store(pg_db, limits=database_limits(driver))
    try:
        with store.engine.connect() as conn:
            assert conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar() == "5s"
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "3s"
    finally:
        store.engine.dispose()


def test_a_migration_longer_than_the_bound_keeps_its_lock(pg_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advisory lock that serialises migrations is held by a session that sends nothing while the
    migration runs: outside a transaction, so that an idle-in-transaction timeout of the server (here one in
    the URL, as an operator may set) cannot end that session half-way and let a second process migrate."""
    import bqas.store.db as db

    url = pg_db + "?options=-c%20idle_in_transaction_session_timeout%3D1000"
    held: list[int] = []

    def slow_migration(_url: str) -> None:
        time.sleep(3)  # three times the URL's bound, the lock's session silent meanwhile
        with observer.connect() as conn:
            held.append(int(conn.execute(ADVISORY_LOCKS).scalar_one()))

    observer = db.create_engine(pg_db)
    store = open_store(pg_db)
    monkeypatch.setattr(db, "migrate", slow_migration)
    monkeypatch.setattr(db, "_is_current", lambda _engine: False)
    try:
        db._migrate_locked(store.engine, url)  # its unlock fails when the lock's session was ended
        assert held == [1]
        with observer.connect() as conn:
            assert conn.execute(ADVISORY_LOCKS).scalar_one() == 0  # given back
    finally:
        store.engine.dispose()
        observer.dispose()


ADVISORY_LOCKS = text(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
