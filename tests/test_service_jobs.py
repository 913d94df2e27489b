"""Durable jobs on SQLite and (when BQAS_TEST_POSTGRES_URL is set) PostgreSQL: atomic claims, lease
expiry, two workers never processing one job, redaction in the storeand redaction in the store."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.jobs import submit
from bqas.service.models import SessionScoreRequest
from bqas.service.scoring import Scorer
from bqas.service.testing import ServiceServer
from bqas.service.worker import JobWorker
from bqas.settings import Settings
from bqas.store.db import Store, open_store
from bqas.store.service import (
    Job,
    JobItem,
    add_item,
    claim_job,
    create_api_key,
    create_job,
    get_job,
    item_rows,
    renew_lease,
)

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]
GOOD = {"intent_accuracy": 90, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "ok"}


def _turn(i: int) -> dict[str, Any]:
    return {
        "question": f"Erinnere mich an Termin {i}",
        "answer": f"Ich erinnere dich an Termin {i}.",
        "expected_intent": "reminder",
        "detected_intent": "reminder",
    }


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite'}"
        return
    assert PG_URL is not None
    store = open_store(PG_URL)
    # A throwaway test database: start without jobs left over from earlier runs.
    with store.session.begin() as s:
        s.execute(delete(JobItem))
        s.execute(delete(Job))
    store.engine.dispose()
    yield PG_URL


def _queue_sessions(store: Store, tenant: str, count: int, turns: int) -> list[str]:
    body = SessionScoreRequest.model_validate({"judges": ["voice"], "turns": [_turn(i) for i in range(turns)]})
    return [submit(store, tenant, body, backend="offline", judge_language="en", language="de") for _ in range(count)]


def test_concurrent_claims_never_hand_out_a_job_twice(db_url: str) -> None:
    store = open_store(db_url)
    ids = {create_job(store, "race", "score", {"x": i}, 1) for i in range(30)}
    claimed: list[list[str]] = [[] for _ in range(6)]
    # One engine (connection pool) per claimer, as separate processes would have; opened (and migrated)
    # here because Alembic's migration runner is not thread-safe.
    stores = [open_store(db_url) for _ in range(6)]

    def claimer(n: int) -> None:
        while (job := claim_job(stores[n], f"w{n}", 60)) is not None:
            claimed[n].append(job.id)
        stores[n].engine.dispose()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = Counter(j for part in claimed for j in part)
    assert set(counts) == ids
    assert all(c == 1 for c in counts.values())


def test_expired_lease_is_reclaimed_and_the_old_worker_loses_it(db_url: str) -> None:
    store = open_store(db_url)
    job_id = create_job(store, "t", "score", {"x": 1}, 2)
    first = claim_job(store, "dead-worker", 0.3)
    assert first is not None and first.id == job_id
    assert claim_job(store, "other", 30) is None  # the lease still holds
    assert add_item(store, job_id, 0, {"turn": 0}, "dead-worker")
    time.sleep(0.5)
    second = claim_job(store, "other", 30)
    assert second is not None and second.id == job_id and second.claims == 2
    assert not renew_lease(store, job_id, "dead-worker", 30)
    assert renew_lease(store, job_id, "other", 30)
    assert not add_item(store, job_id, 0, {"turn": 0, "again": True}, "other")  # stored once only
    assert add_item(store, job_id, 1, {"turn": 1}, "other")
    assert [seq for seq, _ in item_rows(store, job_id)] == [0, 1]
    view = get_job(store, job_id)
    assert view is not None and view.done == 2


def test_a_worker_does_not_reclaim_its_own_job_when_its_heartbeat_is_late(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the heartbeat can come after the lease ran out. Before, the same worker's loop
    (a slot free) claimed the job again and scored every turn a second time next to the first copy, whose
    heartbeat, renewing as the same owner, kept going: 3 claims instead of 2 in test_service_restart."""
    import bqas.service.worker as worker_module

    store = open_store(db_url)
    (job_id,) = _queue_sessions(store, "late", 1, 4)
    real_renew = worker_module.renew_lease

    def late_renew(*args: Any) -> bool:
        time.sleep(0.8)  # in the heartbeat's thread: the lease (0.3 s) runs out meanwhile
        return bool(real_renew(*args))

    monkeypatch.setattr(worker_module, "renew_lease", late_renew)
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(worker_concurrency=2, job_poll_seconds=0.02, job_lease_seconds=0.3, turn_concurrency=1)
    calls: list[str] = []

    class SlowScorer(Scorer):
        async def score(self, call: Any) -> Any:
            calls.append(call.response_id)
            await asyncio.sleep(0.3)  # 4 turns: 1.2 s, four times the lease
            return await super().score(call)

    async def run_until_done() -> JobWorker:
        worker = JobWorker(open_store(db_url), SlowScorer(settings, service), service, name="w")
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        deadline = time.time() + 30
        while (view := get_job(store, job_id)) is not None and view.status != "done" and time.time() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # a second copy, if any, would still be scoring
        stop.set()
        await task
        return worker

    worker = asyncio.run(run_until_done())
    job = get_job(store, job_id)
    assert job is not None and job.status == "done" and job.done == 4
    assert job.claims == 1 and worker.processed == [job_id]
    assert len(calls) == 4  # each turn scored once


def test_two_workers_share_the_queue_without_overlap(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    ids = _queue_sessions(store, "pair", 16, 3)
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(worker_concurrency=3, job_poll_seconds=0.05)

    async def run_both() -> list[JobWorker]:
        workers = [JobWorker(open_store(db_url), Scorer(settings, service), service, name=f"w{n}") for n in (1, 2)]
        stop = asyncio.Event()
        tasks = [asyncio.create_task(w.run(stop)) for w in workers]
        deadline = time.time() + 60
        while sum(len(w.processed) for w in workers) < len(ids) and time.time() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(*tasks)
        return workers

    workers = asyncio.run(run_both())
    processed = Counter(j for w in workers for j in w.processed)
    assert set(processed) == set(ids) and all(c == 1 for c in processed.values())
    assert all(len(w.processed) > 0 for w in workers), "both workers should have taken jobs"
    for job_id in ids:
        job = get_job(store, job_id)
        assert job is not None and job.status == "done" and job.claims == 1
        rows = item_rows(store, job_id)
        assert [seq for seq, _ in rows] == [0, 1, 2]
        owner = next(w.name for w in workers if job_id in w.processed)
        assert {worker for _, worker in rows} == {owner}


def test_redaction_masks_requests_and_results_in_the_store_only(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite'}")
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    service = ServiceSettings(redact_pii=True, rate_limit=0, job_poll_seconds=0.05)
    headers = {"X-API-Key": create_api_key(store, "t")}
    leak = "Bitte rufen Sie Frau Sabine Schneider an: sabine.schneider@example.org"
    turn = {**_turn(0), "answer": leak}
    with ServiceServer(create_app(settings=settings, service=service, store=store)) as server:
        live = httpx.post(
            f"{server.base_url}/api/score",
            json={
                "judges": ["voice"],
                "question": turn["question"],
                "answer": leak,
                "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
            },
            headers=headers,
        )
        assert live.status_code == 200 and "Schneider" in live.text  # the live answer is not masked
        r = httpx.post(
            f"{server.base_url}/api/score/session_async", json={"judges": ["voice"], "turns": [turn]}, headers=headers
        )
        job_id = r.json()["job_id"]
        deadline = time.time() + 20
        while (job := httpx.get(f"{server.base_url}/api/jobs/{job_id}", headers=headers).json())["status"] != "done":
            assert time.time() < deadline
            time.sleep(0.05)
    assert job["turns"][0]["results"][0]["safety"] == "fail"  # scored on the real text
    with store.session() as s:
        stored = json.dumps(
            [
                s.scalar(select(Job.request).where(Job.id == job_id)),
                list(s.scalars(select(JobItem.records).where(JobItem.job_id == job_id))),
            ],
            ensure_ascii=False,
        )
    assert "Schneider" not in stored and "example.org" not in stored
    assert "[EMAIL]" in stored and "[PERSON]" in stored
