"""A job's ``progress.done`` counts its stored turns exactly, also when turns of one job are stored at
once by parallel tasks (``BQAS_TURN_CONCURRENCY``) or by two workers after a lease ran out: on PostgreSQL
each turn's transaction reads the count before the others commit, so a count written back loses turns."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.pg_support import PG_URL, fresh_postgres_database

from bqas.service.config import ServiceSettings
from bqas.service.jobs import submit
from bqas.service.models import SessionScoreRequest
from bqas.service.scoring import Scorer
from bqas.service.worker import JobWorker
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import add_item, create_job, get_job, item_rows

BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite'}"
        return
    with fresh_postgres_database("bqas_progress") as url:
        yield url


def test_turns_stored_at_once_are_all_counted(db_url: str) -> None:
    turns, jobs = 8, 6
    store = open_store(db_url)
    ids = [create_job(store, "t", "session", {"x": j}, turns) for j in range(jobs)]
    # One engine per writer, as separate worker tasks and processes have; all start each turn together.
    writers = [open_store(db_url) for _ in range(turns)]
    barrier = threading.Barrier(turns)
    errors: list[BaseException] = []

    def write(seq: int) -> None:
        try:
            for job_id in ids:
                barrier.wait(timeout=30)
                add_item(writers[seq], job_id, seq, {"turn": seq}, f"w{seq}")
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=write, args=(seq,)) for seq in range(turns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.engine.dispose()
    assert not errors, errors
    for job_id in ids:
        view = get_job(store, job_id)
        assert view is not None
        assert len(item_rows(store, job_id)) == turns
        assert view.done == turns, f"{job_id}: done {view.done} of {turns} stored turns"
    # A turn stored a second time (a reclaimed job) is ignored and does not count twice.
    assert not add_item(store, ids[0], 0, {"turn": 0, "again": True}, "late")
    view = get_job(store, ids[0])
    assert view is not None and view.done == turns
    store.engine.dispose()


def test_a_session_scored_with_parallel_turns_reports_every_turn(db_url: str, tmp_path: Path) -> None:
    turns = 12
    store = open_store(db_url)
    body = SessionScoreRequest.model_validate(
        {
            "judges": ["voice"],
            "turns": [
                {
                    "question": f"Erinnere mich an Termin {i}",
                    "answer": f"Ich erinnere dich an Termin {i}.",
                    "expected_intent": "reminder",
                    "detected_intent": "reminder",
                }
                for i in range(turns)
            ],
        }
    )
    ids = [submit(store, "t", body, backend="offline", judge_language="en", language="de") for _ in range(4)]
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(worker_concurrency=4, turn_concurrency=4, job_poll_seconds=0.05)

    async def run() -> Any:
        worker = JobWorker(open_store(db_url), Scorer(settings, service), service, name="w")
        return await worker.run_until_idle()

    assert asyncio.run(run()) == len(ids)
    for job_id in ids:
        view = get_job(store, job_id)
        assert view is not None and view.status == "done", view.error
        assert view.done == view.total == turns
    store.engine.dispose()
