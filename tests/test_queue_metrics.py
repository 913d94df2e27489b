"""The job queue on ``/metrics``, read from the database at each scrape (SQLite and PostgreSQL): queued
and running jobs and turns by kind, the oldest queued job's age, running jobs whose lease ran out, and
lease recoveries counted by whichever process claimed the job again (here: none that serves HTTP)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update
from tests.pg_support import PG_URL, fresh_postgres_database

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import now, open_store
from bqas.store.service import Job, add_item, claim_job, create_job

BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite'}"
        return
    with fresh_postgres_database("bqas_queue") as url:
        yield url


def _scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{base}/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _queue(values: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, state: str, kind: str) -> float:
    return values[(name, (("kind", kind), ("state", state)))]


def test_queue_depth_age_expired_leases_and_recoveries(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    service = ServiceSettings(rate_limit=0, service_backend="offline")
    app = create_app(
        settings=Settings(home=tmp_path / "h", llm_cache=False), service=service, store=store, run_worker=False
    )
    with ServiceServer(app) as server:
        empty = _scrape(server.base_url)
        assert empty[("bqas_queue_up", ())] == 1
        for state in ("queued", "running"):
            for kind in ("score", "session"):  # every series present, zeros included (autoscalers need one)
                assert _queue(empty, "bqas_queue_jobs", state, kind) == 0
                assert _queue(empty, "bqas_queue_items", state, kind) == 0
        assert empty[("bqas_queue_oldest_queued_age_seconds", ())] == 0
        assert empty[("bqas_job_lease_recoveries_total", ())] == 0

        old = create_job(store, "acme", "score", {"x": 0}, 1)  # submitted two minutes ago
        with store.session.begin() as s:
            s.execute(update(Job).where(Job.id == old).values(created_at=now() - timedelta(seconds=120)))
        create_job(store, "acme", "score", {"x": 1}, 1)
        create_job(store, "other", "session", {"x": 2}, 5)
        create_job(store, "acme", "session", {"x": 3}, 4)
        # Claims go oldest first: the old score job to a worker that then dies, the next score job and
        # the first session (1 of its 5 turns stored) to a live one; the second session waits.
        dead = claim_job(store, "dead-worker", 60)
        assert dead is not None and dead.id == old
        claim_job(store, "w", 60)
        running = claim_job(store, "w", 60)
        assert running is not None and running.kind == "session" and running.total == 5
        add_item(store, running.id, 0, {"turn": 0}, "w")
        with store.session.begin() as s:  # the dead worker's lease ran out
            s.execute(update(Job).where(Job.id == old).values(lease_until=time.time() - 1))

        values = _scrape(server.base_url)
        assert _queue(values, "bqas_queue_jobs", "queued", "session") == 1
        assert _queue(values, "bqas_queue_items", "queued", "session") == 4
        assert _queue(values, "bqas_queue_jobs", "running", "score") == 2
        assert _queue(values, "bqas_queue_items", "running", "score") == 2
        assert _queue(values, "bqas_queue_jobs", "running", "session") == 1
        assert _queue(values, "bqas_queue_items", "running", "session") == 4
        assert _queue(values, "bqas_queue_jobs", "queued", "score") == 0
        assert values[("bqas_queue_lease_expired_jobs", ())] == 1
        assert values[("bqas_job_lease_recoveries_total", ())] == 0
        # The oldest waiting job is the session submitted moments ago, not the job the test dated 120 s back
        # (it is running).
        assert 0 <= values[("bqas_queue_oldest_queued_age_seconds", ())] < 120  # duration-ok: dated by the test

        # Another worker process (no HTTP) recovers the dead worker's job: every replica counts it.
        recovered = claim_job(open_store(db_url), "w2", 60)
        assert recovered is not None and recovered.id == old and recovered.claims == 2
        values = _scrape(server.base_url)
        assert values[("bqas_job_lease_recoveries_total", ())] == 1
        assert values[("bqas_queue_lease_expired_jobs", ())] == 0
    store.engine.dispose()


def test_the_oldest_queued_age_names_the_job_that_waits_longest(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    old = create_job(store, "acme", "score", {"x": 0}, 1)
    with store.session.begin() as s:
        s.execute(update(Job).where(Job.id == old).values(created_at=now() - timedelta(seconds=300)))
    create_job(store, "acme", "score", {"x": 1}, 1)
    app = create_app(settings=Settings(home=tmp_path / "h", llm_cache=False), store=store, run_worker=False)
    with ServiceServer(app) as server:
        values = _scrape(server.base_url)
    assert values[("bqas_queue_oldest_queued_age_seconds", ())] >= 300  # duration-ok: created 300 s ago above
    assert _queue(values, "bqas_queue_jobs", "queued", "score") == 2
    store.engine.dispose()
