"""``Idempotency-Key`` on ``/api/score/async`` and ``/api/score/session_async``: a client whose reply was
lost (its replica died just after committing the job) retries on another replica with the same key and
gets the first job, not a second; the same key with another body is 409; keys are per tenant and bind for
the retention window. Two real app instances (replicas) over one store, SQLite and PostgreSQL; the Python
client sends a key by default and retries a lost reply with it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from tests.pg_support import PG_URL, fresh_postgres_database

from bqas.client import BQASClient
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import Store, open_store
from bqas.store.service import Job, create_api_key

BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]
TURN = {
    "question": "Erinnere mich an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr.",
    "expected_intent": "reminder",
    "detected_intent": "reminder",
}
BODY: dict[str, Any] = {
    "judges": ["voice"],
    "question": TURN["question"],
    "answer": TURN["answer"],
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
}
SESSION: dict[str, Any] = {"judges": ["voice"], "turns": [TURN, TURN]}


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite'}"
        return
    with fresh_postgres_database("bqas_idem") as url:
        yield url


def _replica(url: str, tmp_path: Path, name: str, **options: Any) -> ServiceServer:
    """One API replica (no worker: the jobs stay queued, so they can be counted) on its own engine."""
    service = ServiceSettings(rate_limit=0, service_backend="offline", **options)
    settings = Settings(home=tmp_path / name, llm_cache=False)
    return ServiceServer(create_app(settings=settings, service=service, store=open_store(url), run_worker=False))


def _jobs(store: Store) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Job)) or 0)


def test_a_retry_on_another_replica_returns_the_first_job(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    acme, other = create_api_key(store, "acme"), create_api_key(store, "other")
    with _replica(db_url, tmp_path, "a") as a, _replica(db_url, tmp_path, "b") as b:
        headers = {"Authorization": f"Bearer {acme}", "Idempotency-Key": "order-4711"}
        first = httpx.post(f"{a.base_url}/api/score/async", json=BODY, headers=headers)
        assert first.status_code == 202, first.text
        assert "Idempotent-Replayed" not in first.headers
        # The reply was lost on the way back; the client asks the other replica with the same key.
        retry = httpx.post(f"{b.base_url}/api/score/async", json=BODY, headers=headers)
        assert retry.status_code == 202, retry.text
        assert retry.json()["job_id"] == first.json()["job_id"]
        assert retry.headers["Idempotent-Replayed"] == "true"
        assert _jobs(store) == 1
        # The same key with another body: refused, naming the first job.
        changed = httpx.post(f"{b.base_url}/api/score/async", json={**BODY, "answer": "Nein."}, headers=headers)
        assert changed.status_code == 409, changed.text
        assert changed.json()["error"] == "idempotency_key_reused"
        assert changed.json()["job_id"] == first.json()["job_id"]
        # ... and on the other endpoint (a session is another request).
        session = httpx.post(f"{a.base_url}/api/score/session_async", json=SESSION, headers=headers)
        assert session.status_code == 409, session.text
        # Keys are per tenant: another tenant's "order-4711" is its own job.
        theirs = httpx.post(
            f"{a.base_url}/api/score/async",
            json=BODY,
            headers={"Authorization": f"Bearer {other}", "Idempotency-Key": "order-4711"},
        )
        assert theirs.status_code == 202 and theirs.json()["job_id"] != first.json()["job_id"]
        # Sessions: the same rule.
        key = {"Authorization": f"Bearer {acme}", "Idempotency-Key": "session-1"}
        s1 = httpx.post(f"{a.base_url}/api/score/session_async", json=SESSION, headers=key)
        s2 = httpx.post(f"{b.base_url}/api/score/session_async", json=SESSION, headers=key)
        assert s1.status_code == s2.status_code == 202 and s1.json()["job_id"] == s2.json()["job_id"]
        # Without a key every submission is a job of its own, as before.
        plain = {"Authorization": f"Bearer {acme}"}
        n = _jobs(store)
        httpx.post(f"{a.base_url}/api/score/async", json=BODY, headers=plain)
        httpx.post(f"{a.base_url}/api/score/async", json=BODY, headers=plain)
        assert _jobs(store) == n + 2
        bad = httpx.post(f"{a.base_url}/api/score/async", json=BODY, headers={**plain, "Idempotency-Key": "a b"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    store.engine.dispose()


def test_submissions_with_one_key_at_once_on_two_replicas_make_one_job(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    acme = create_api_key(store, "acme")
    rounds = 8
    with _replica(db_url, tmp_path, "a") as a, _replica(db_url, tmp_path, "b") as b:
        ids: list[list[str]] = [[], []]
        barrier = threading.Barrier(2)

        def client(n: int, base: str) -> None:
            with httpx.Client(timeout=60) as http:
                for r in range(rounds):
                    barrier.wait(timeout=60)
                    headers = {"Authorization": f"Bearer {acme}", "Idempotency-Key": f"race-{r}"}
                    answer = http.post(f"{base}/api/score/async", json=BODY, headers=headers)
                    assert answer.status_code == 202, answer.text
                    ids[n].append(answer.json()["job_id"])

        threads = [threading.Thread(target=client, args=(n, s.base_url)) for n, s in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(ids[0]) == len(ids[1]) == rounds
    assert ids[0] == ids[1]  # each round: both replicas answered with the one job
    assert _jobs(store) == rounds
    store.engine.dispose()


def test_a_key_binds_only_for_the_retention_window(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    acme = create_api_key(store, "acme")
    with _replica(db_url, tmp_path, "a", idempotency_retention_seconds=0.5) as a:
        headers = {"Authorization": f"Bearer {acme}", "Idempotency-Key": "daily-report"}
        first = httpx.post(f"{a.base_url}/api/score/async", json=BODY, headers=headers).json()["job_id"]
        time.sleep(1.0)  # past the window: the key starts a new job (even with another body)
        later = httpx.post(f"{a.base_url}/api/score/async", json={**BODY, "answer": "Ok."}, headers=headers)
        assert later.status_code == 202, later.text
        assert later.json()["job_id"] != first
    assert _jobs(store) == 2
    store.engine.dispose()


class LoseFirstReply(httpx.BaseTransport):
    """Sends every request to the server, but loses the reply to the first submission (the replica died
    after committing the job): the client sees a dropped connection."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.startswith("/api/score/"):
            self.keys.append(request.headers.get("Idempotency-Key"))
            if len(self.keys) == 1:
                response.read()
                raise httpx.ReadError("connection lost before the reply", request=request)
        return response


def test_the_python_client_sends_a_key_and_retries_a_lost_reply_with_it(db_url: str, tmp_path: Path) -> None:
    store = open_store(db_url)
    acme = create_api_key(store, "acme")
    with _replica(db_url, tmp_path, "a") as a:
        transport = LoseFirstReply()
        http = httpx.Client(base_url=a.base_url, transport=transport, timeout=60)
        with BQASClient(a.base_url, acme, http=http) as client:
            job_id = client.score_async(judges=["voice"], **{k: v for k, v in BODY.items() if k != "judges"})
            assert client.job(job_id).status == "queued"
        assert len(transport.keys) == 2 and transport.keys[0] and transport.keys[0] == transport.keys[1]
    assert _jobs(store) == 1  # the lost reply's job, found again by the retry
    store.engine.dispose()
