"""A PostgreSQL server that freezes instead of dying (every process SIGSTOPped: connections stay open and
nothing answers), and a pool held full, as ``bqas serve`` and its job worker meet them.

Every endpoint answers (503 ``database_unavailable`` with Retry-After where it needs the database, 200
for scoring with a verified key, ``bqas_queue_up 0`` on /metrics) before a generous hang guard, never
500; no job is marked failed, and every job is done once the server runs again. The store's limits are
set small here (``BQAS_DB_*``) so that the test does not sit out the defaults."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.pg_support import PG_URL

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.key_check import HEADER as KEY_CHECK
from bqas.service.scoring import Scorer
from bqas.service.testing import ServiceServer
from bqas.service.worker import JobWorker
from bqas.settings import Settings, get_settings
from bqas.store.db import Store, database_unavailable, open_store
from bqas.store.service import claim_job, create_api_key, get_job, job_items
from bqas.testing import postgres


def _failed_jobs(store: Store) -> int:
    """Jobs marked failed, whoever submitted them (also those accepted while the database froze)."""
    from sqlalchemy import func, select

    from bqas.store.service import Job

    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Job).where(Job.status == "failed")) or 0)


pytestmark = pytest.mark.skipif(
    not PG_URL or not postgres.available(), reason="needs PostgreSQL's server binaries (CI installs them)"
)

HANG_GUARD_S = 60.0  # far above every limit set here: a request still open then is a hang
BODY = {
    "judges": ["voice"],
    "question": "Erinnere mich an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr.",
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
}
TURN = {
    "question": BODY["question"],
    "answer": BODY["answer"],
    "expected_intent": "reminder",
    "detected_intent": "reminder",
}


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BQAS_DB_STATEMENT_TIMEOUT", "1")
    monkeypatch.setenv("BQAS_DB_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("BQAS_DB_POOL_TIMEOUT", "1")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def pg(small_limits: None) -> Iterator[postgres.LocalPostgres]:
    with postgres.LocalPostgres() as server:
        yield server


def _wait_ready(base: str) -> None:
    deadline = time.time() + 90
    while httpx.get(f"{base}/healthz").json().get("models") != "ready":
        assert time.time() < deadline, "models did not load"
        time.sleep(0.2)


def _all_at_once(calls: dict[str, Any]) -> dict[str, httpx.Response | BaseException]:
    """Send every request at the same time (as clients do), each with the hang guard as its timeout."""
    answers: dict[str, httpx.Response | BaseException] = {}

    def one(name: str, call: Any) -> None:
        try:
            answers[name] = call()
        except BaseException as exc:  # a timeout is the failure this test looks for
            answers[name] = exc

    threads = [threading.Thread(target=one, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_a_frozen_database_answers_503_at_once_and_no_job_fails(pg: postgres.LocalPostgres, tmp_path: Path) -> None:
    store = open_store(pg.url)
    used, unused = create_api_key(store, "acme"), create_api_key(store, "acme")
    service = ServiceSettings(
        rate_limit=0,
        service_backend="offline",
        db_retry_after=7,
        health_timeout=1.0,
        api_key_cache_seconds=0.1,  # the cached lookup is no longer fresh when the freeze comes
        job_lease_seconds=2.0,
        job_poll_seconds=0.1,
    )
    app = create_app(settings=Settings(home=tmp_path / "home", llm_cache=False), service=service, store=store)
    jobs: list[str] = []
    with ServiceServer(app) as server:
        base = server.base_url
        _wait_ready(base)
        auth = {"Authorization": f"Bearer {used}"}
        first = httpx.post(f"{base}/api/score", json=BODY, headers=auth)  # verifies the key
        assert first.status_code == 200 and KEY_CHECK not in first.headers
        queued = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth)
        assert queued.status_code == 202, queued.text
        jobs.append(queued.json()["job_id"])
        time.sleep(0.2)  # the key's cached lookup goes stale
        g = HANG_GUARD_S

        with pg.frozen():
            rounds = [
                _all_at_once(
                    {
                        "submit": lambda: httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=g),
                        "session": lambda: httpx.post(
                            f"{base}/api/score/session_async",
                            json={"judges": ["voice"], "turns": [TURN, TURN]},
                            headers={**auth, "Idempotency-Key": f"session-{len(jobs)}"},
                            timeout=g,
                        ),
                        "status": lambda: httpx.get(f"{base}/api/jobs/{jobs[0]}", headers=auth, timeout=g),
                        "new key": lambda: httpx.post(
                            f"{base}/api/score/async", json=BODY, headers={"X-API-Key": unused}, timeout=g
                        ),
                        "score": lambda: httpx.post(f"{base}/api/score", json=BODY, headers=auth, timeout=g),
                        "metrics": lambda: httpx.get(f"{base}/metrics", timeout=g),
                        "readyz": lambda: httpx.get(f"{base}/readyz", timeout=g),
                        "livez": lambda: httpx.get(f"{base}/livez", timeout=g),
                    }
                )
                for _ in range(2)  # the first round meets the freeze, the second a store known to be down
            ]
            for answers in rounds:
                for name, answer in answers.items():
                    assert isinstance(answer, httpx.Response), f"{name}: {answer!r}"
                    if name in ("submit", "session", "status", "new key"):
                        assert answer.status_code == 503, f"{name}: {answer.status_code} {answer.text}"
                        assert answer.headers["Retry-After"] == "7", name
                        assert answer.json()["error"] == "database_unavailable", name
                # Scoring needs no database; the key was verified before the outage, and the answer says
                # that it was accepted from the cache.
                assert answers["score"].status_code == 200, answers["score"]
                assert answers["score"].headers[KEY_CHECK].startswith("stale; age="), answers["score"].headers
                metrics = answers["metrics"]
                assert isinstance(metrics, httpx.Response) and metrics.status_code == 200
                assert "bqas_queue_up 0.0" in metrics.text
                ready = answers["readyz"]
                assert isinstance(ready, httpx.Response) and ready.status_code == 503
                assert ready.json()["database"].startswith("unreachable")
                live = answers["livez"]
                assert isinstance(live, httpx.Response) and live.status_code == 200

        # Back: the store answers again (its probe finds it), submissions work, and every job is done.
        deadline = time.time() + HANG_GUARD_S
        while True:
            back = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=g)
            if back.status_code == 202:
                jobs.append(back.json()["job_id"])
                break
            assert back.status_code == 503 and time.time() < deadline, back.text
            time.sleep(0.2)
        fresh = httpx.post(f"{base}/api/score", json=BODY, headers=auth)
        assert fresh.status_code == 200 and KEY_CHECK not in fresh.headers
        while True:
            views = [get_job(store, job_id) for job_id in jobs]
            if all(v is not None and v.status in ("done", "failed") for v in views):
                break
            assert time.time() < deadline, [(v.id, v.status) for v in views if v is not None]
            time.sleep(0.2)
    assert _failed_jobs(store) == 0
    for job_id in jobs:
        view = get_job(store, job_id)
        assert view is not None and view.status == "done" and view.done == view.total
        assert [item["turn"] for item in job_items(store, job_id)] == list(range(view.total))
    store.engine.dispose()


def test_a_revoked_key_stops_working_once_the_store_is_back(pg: postgres.LocalPostgres, tmp_path: Path) -> None:
    from bqas.store.service import revoke_api_keys

    store = open_store(pg.url)
    key = create_api_key(store, "acme")
    service = ServiceSettings(rate_limit=0, service_backend="offline", api_key_cache_seconds=0.1)
    app = create_app(
        settings=Settings(home=tmp_path / "home", llm_cache=False), service=service, store=store, run_worker=False
    )
    with ServiceServer(app) as server:
        base = server.base_url
        _wait_ready(base)
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.post(f"{base}/api/score", json=BODY, headers=auth).status_code == 200
        time.sleep(0.2)
        with pg.frozen():
            stale = httpx.post(f"{base}/api/score", json=BODY, headers=auth, timeout=HANG_GUARD_S)
            assert stale.status_code == 200 and stale.headers[KEY_CHECK].startswith("stale")
        # Revoked while the replica could not see it; the first request after the store is back is refused.
        other = open_store(pg.url)
        assert revoke_api_keys(other, key[:12]) == 1
        other.engine.dispose()
        deadline = time.time() + HANG_GUARD_S
        while True:
            answer = httpx.post(f"{base}/api/score", json=BODY, headers=auth, timeout=HANG_GUARD_S)
            if answer.status_code == 401:
                break
            # 200 stale only while this replica has not yet found the store back
            assert answer.status_code == 200 and answer.headers[KEY_CHECK].startswith("stale"), answer.headers
            assert time.time() < deadline
            time.sleep(0.2)
    store.engine.dispose()


def _hold_every_connection(store: Store) -> list[Any]:
    """Check out connections until the pool has none left (pool size + overflow)."""
    held: list[Any] = []
    pool = store.engine.pool
    limit = pool.size() + pool._max_overflow  # type: ignore[attr-defined]
    for _ in range(limit):
        held.append(store.engine.connect())
    return held


def test_a_pool_held_full_answers_503_not_500(pg: postgres.LocalPostgres, tmp_path: Path) -> None:
    store = open_store(pg.url)
    key = create_api_key(store, "acme")
    service = ServiceSettings(rate_limit=0, service_backend="offline", db_retry_after=3, api_key_cache_seconds=0)
    app = create_app(
        settings=Settings(home=tmp_path / "home", llm_cache=False), service=service, store=store, run_worker=False
    )
    with ServiceServer(app) as server:
        base = server.base_url
        _wait_ready(base)
        auth = {"Authorization": f"Bearer {key}"}
        accepted = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth)
        assert accepted.status_code == 202
        held = _hold_every_connection(store)
        try:
            for _ in range(2):
                answer = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=HANG_GUARD_S)
                assert answer.status_code == 503, answer.text
                assert answer.headers["Retry-After"] == "3" and answer.json()["error"] == "database_unavailable"
            scrape = httpx.get(f"{base}/metrics", timeout=HANG_GUARD_S)
            assert scrape.status_code == 200 and "bqas_queue_up 0.0" in scrape.text
        finally:
            for conn in held:
                conn.close()
        deadline = time.time() + HANG_GUARD_S
        while (answer := httpx.post(f"{base}/api/score/async", json=BODY, headers=auth)).status_code != 202:
            assert answer.status_code == 503 and time.time() < deadline, answer.text
            time.sleep(0.2)
    store.engine.dispose()


def test_a_worker_that_meets_a_full_pool_leaves_the_job_to_its_lease(
    pg: postgres.LocalPostgres, tmp_path: Path
) -> None:
    """The write of a scored turn waits out the pool timeout: the job is not marked failed, and the next
    claim after its lease finishes it."""
    from bqas.service.jobs import submit
    from bqas.service.models import SessionScoreRequest

    store = open_store(pg.url)
    body = SessionScoreRequest.model_validate({"judges": ["voice"], "turns": [TURN, TURN]})
    job_id = submit(store, "acme", body, backend="offline", judge_language="en", language="de")
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(job_lease_seconds=1.0, job_poll_seconds=0.1)
    worker_store = open_store(pg.url)
    worker = JobWorker(worker_store, Scorer(settings, service), service, name="w")
    job = claim_job(worker_store, "w", service.job_lease_seconds)
    assert job is not None and job.id == job_id
    held = _hold_every_connection(worker_store)
    errors: list[BaseException] = []
    try:
        asyncio.run(worker.process(job))
    except BaseException as exc:  # pragma: no cover - process() handles store errors itself
        errors.append(exc)
    finally:
        for conn in held:
            conn.close()
    assert errors == []
    view = get_job(store, job_id)
    assert view is not None and view.status == "running", view  # left to its lease, not failed

    async def again() -> None:
        deadline = time.time() + HANG_GUARD_S
        while (done := await worker.run_until_idle()) == 0:
            assert time.time() < deadline, "the job was never claimed again"
            await asyncio.sleep(0.2)
        assert done == 1

    asyncio.run(again())
    view = get_job(store, job_id)
    assert view is not None and view.status == "done" and view.done == view.total == 2
    worker_store.engine.dispose()
    store.engine.dispose()


def test_every_way_the_store_is_unavailable_is_one_kind() -> None:
    """The pool timeout and a store known to be down are "unavailable" like a refused connection."""
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from bqas.store.bounds import StoreDown

    assert database_unavailable(PoolTimeout("QueuePool limit of size 5 overflow 10 reached"))
    assert database_unavailable(StoreDown("the database is unavailable"))
    assert not database_unavailable(ValueError("a mistake in the request"))


def test_a_statement_timeout_is_unavailable_but_not_an_outage(pg: postgres.LocalPostgres) -> None:
    """The server's statement_timeout (BQAS_DB_STATEMENT_TIMEOUT, 1 s here) ends a long statement: that
    is "unavailable, retry" for the caller, while the store itself stays up for everyone else."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    store = open_store(pg.url)
    with pytest.raises(OperationalError) as caught, store.engine.connect() as conn:
        conn.execute(text("SELECT pg_sleep(5)"))
    assert "statement timeout" in str(caught.value) and database_unavailable(caught.value)
    assert not store.down
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1
    store.engine.dispose()
