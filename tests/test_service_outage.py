"""A PostgreSQL outage as clients of ``bqas serve`` see it, on a PostgreSQL server of the test's own that
is stopped (immediate shutdown: every connection drops) and started again: every endpoint that needs the
database answers 503 with ``Retry-After`` and a JSON body, never 500; liveness never fails; readiness
fails until the database is back; a worker does not fail a job because the database went away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.exc import OperationalError
from tests.pg_support import PG_URL

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.scoring import Scorer
from bqas.service.testing import ServiceServer
from bqas.service.worker import JobWorker
from bqas.settings import Settings
from bqas.store.bounds import StoreDown
from bqas.store.db import open_store
from bqas.store.service import create_api_key, get_job
from bqas.testing import postgres

pytestmark = pytest.mark.skipif(
    not PG_URL or not postgres.available(), reason="needs PostgreSQL's server binaries (CI installs them)"
)

TURN = {
    "question": "Erinnere mich an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr.",
    "expected_intent": "reminder",
    "detected_intent": "reminder",
}
BODY = {
    "judges": ["voice"],
    "question": TURN["question"],
    "answer": TURN["answer"],
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
}


@pytest.fixture
def pg() -> Iterator[postgres.LocalPostgres]:
    with postgres.LocalPostgres() as server:
        yield server


def _wait_ready(base: str) -> None:
    deadline = time.time() + 90
    while httpx.get(f"{base}/healthz").json().get("models") != "ready":
        assert time.time() < deadline, "models did not load"
        time.sleep(0.2)


def test_a_database_outage_answers_503_with_retry_after_and_liveness_holds(
    pg: postgres.LocalPostgres, tmp_path: Path
) -> None:
    store = open_store(pg.url)
    used, unused = create_api_key(store, "acme"), create_api_key(store, "acme")
    service = ServiceSettings(rate_limit=0, service_backend="offline", db_retry_after=7)
    app = create_app(
        settings=Settings(home=tmp_path / "home", llm_cache=False), service=service, store=store, run_worker=False
    )
    with ServiceServer(app) as server:
        base = server.base_url
        _wait_ready(base)
        auth = {"Authorization": f"Bearer {used}"}
        assert httpx.get(f"{base}/livez").status_code == 200
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 200 and ready.json()["database"] == "ok", ready.text
        queued = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth)
        assert queued.status_code == 202, queued.text
        job_id = queued.json()["job_id"]

        pg.stop()
        answers = {
            "submit": httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=30),
            "session": httpx.post(
                f"{base}/api/score/session_async", json={"judges": ["voice"], "turns": [TURN]}, headers=auth, timeout=30
            ),
            "status": httpx.get(f"{base}/api/jobs/{job_id}", headers=auth, timeout=30),
            # A key this replica has not looked up yet: the lookup itself needs the database.
            "new key": httpx.post(
                f"{base}/api/score/async", json=BODY, headers={"Authorization": f"Bearer {unused}"}, timeout=30
            ),
        }
        for name, answer in answers.items():
            assert answer.status_code == 503, f"{name}: {answer.status_code} {answer.text}"
            assert answer.headers["Retry-After"] == "7", name
            body = answer.json()
            assert body["error"] == "database_unavailable" and "retry" in body["detail"], name
        # Scoring now needs no database: it keeps working through the outage.
        scored = httpx.post(f"{base}/api/score", json=BODY, headers=auth, timeout=60)
        assert scored.status_code == 200, scored.text
        live = httpx.get(f"{base}/livez")
        assert live.status_code == 200 and live.json()["status"] == "alive"
        not_ready = httpx.get(f"{base}/readyz", timeout=30)
        assert not_ready.status_code == 503 and not_ready.json()["database"].startswith("unreachable")
        assert not_ready.headers["Retry-After"] == "7"
        assert httpx.get(f"{base}/healthz", timeout=30).status_code == 503
        # The queue's gauges cannot be read; the scrape still answers and says so.
        scrape = httpx.get(f"{base}/metrics", timeout=30)
        assert scrape.status_code == 200 and "bqas_queue_up 0.0" in scrape.text
        assert "bqas_queue_jobs{" not in scrape.text

        pg.start()
        back = httpx.post(f"{base}/api/score/async", json=BODY, headers=auth, timeout=30)
        assert back.status_code == 202, back.text
        assert httpx.get(f"{base}/readyz", timeout=30).status_code == 200
        assert httpx.get(f"{base}/api/jobs/{job_id}", headers=auth).json()["status"] == "queued"
    store.engine.dispose()


def test_a_worker_leaves_a_job_to_be_claimed_again_when_the_database_goes_away(
    pg: postgres.LocalPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database goes away while a turn is scored and is back a moment later (a restart): storing the
    turn fails, but the job is not marked failed; its next claim after the lease scores the missing turns."""
    import bqas.service.worker as worker_module
    from bqas.service.jobs import submit
    from bqas.service.models import SessionScoreRequest

    store = open_store(pg.url)
    body = SessionScoreRequest.model_validate({"judges": ["voice"], "turns": [TURN, TURN, TURN]})
    job_id = submit(store, "acme", body, backend="offline", judge_language="en", language="de")
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(job_lease_seconds=1.0, job_poll_seconds=0.1, turn_concurrency=1)
    real_add_item = worker_module.add_item
    outages: list[str] = []

    def add_item_through_a_restart(*args: object) -> bool:
        if not outages:  # the first turn's write meets the database down; it is back right after
            outages.append("down")
            pg.stop()
            try:
                return bool(real_add_item(*args))  # type: ignore[arg-type]
            finally:
                pg.start()
        return bool(real_add_item(*args))  # type: ignore[arg-type]

    monkeypatch.setattr(worker_module, "add_item", add_item_through_a_restart)

    async def run() -> None:
        worker = JobWorker(open_store(pg.url), Scorer(settings, service), service, name="w")
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        deadline = time.time() + 60
        while time.time() < deadline:
            await asyncio.sleep(0.2)
            try:
                view = await asyncio.to_thread(get_job, store, job_id)
            except (OperationalError, StoreDown):  # this poll, too, may meet the restart (or its aftermath)
                continue
            if view is not None and view.status in ("done", "failed"):
                break
        stop.set()
        await task

    asyncio.run(run())
    view = get_job(store, job_id)
    assert outages == ["down"]
    assert view is not None and view.status == "done", (view.status, view.error) if view else None
    assert view.done == view.total == 3 and view.claims == 2
    store.engine.dispose()
