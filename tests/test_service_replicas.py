"""Two ``bqas serve`` replicas and a ``bqas worker`` as real processes over one PostgreSQL (no proxy).

What is shared through the database: jobs (submitted to one replica, claimed by the worker of another
process, readable on both) and review sessions (log in on one replica, use and end the session on the
other). What is per process, as docs/deploy.md says: the per-tenant rate limit and the failed-key
back-off (a client throttled by one replica is not throttled by the other). Needs BQAS_TEST_POSTGRES_URL.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from bqas.review.tables import ReviewSession
from bqas.store.db import Store, open_store
from bqas.store.service import Job, JobItem, create_api_key, get_job, item_rows
from bqas.testing.scripted_llm import Reply, ScriptedLLM

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one with scripts/ci-postgres.sh)")
GOOD = {"intent_accuracy": 90, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "ok"}
BURST = 20  # BQAS_RATE_BURST of the replicas; the refill (BQAS_RATE_LIMIT) is negligible during the test


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"bqas serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("bqas serve did not start")


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bqas.cli.main", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


@pytest.fixture
def clean_pg() -> Iterator[str]:
    assert PG_URL is not None
    store = open_store(PG_URL)
    with store.session.begin() as s:  # a throwaway test database: nothing left over from earlier runs
        s.execute(delete(JobItem))
        s.execute(delete(Job))
        s.execute(delete(ReviewSession))
    store.engine.dispose()
    yield PG_URL


def _job_body(i: int) -> dict[str, Any]:
    turn = {
        "question": f"Stell einen Wecker für {i} Uhr",
        "answer": f"Der Wecker ist auf {i} Uhr gestellt.",
        "expected_intent": "alarm",
        "detected_intent": "alarm",
    }
    return {"judges": ["voice"], "backend": "llm", "turns": [turn, {**turn, "question": f"Und {i}:30?"}]}


def _wait_done(store: Store, base: str, job_id: str, headers: dict[str, str]) -> dict[str, Any]:
    """Poll the store (the tenant's rate limit is kept for the test), then read the job over HTTP."""
    deadline = time.time() + 60
    while (view := get_job(store, job_id)) is None or view.status not in ("done", "failed"):
        assert time.time() < deadline, f"job not finished: {view}"
        time.sleep(0.1)
    r = httpx.get(f"{base}/api/jobs/{job_id}", headers=headers)
    assert r.status_code == 200, r.text
    job: dict[str, Any] = r.json()
    return job


def _login(base: str, key: str) -> httpx.Cookies:
    form = httpx.get(f"{base}/review/login")
    token = form.cookies["bqas_review_login"]
    r = httpx.post(
        f"{base}/review/login", data={"api_key": key, "login_token": token}, cookies={"bqas_review_login": token}
    )
    assert r.status_code == 303 and r.headers["location"].endswith("/review/queue"), r.text
    return r.cookies


@pytest.mark.timeout(240)
def test_two_replicas_and_a_worker_share_jobs_and_sessions(clean_pg: str, tmp_path: Path) -> None:
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.2) as llm:
        env = {
            **os.environ,
            "BQAS_HOME": str(tmp_path / "home"),
            "BQAS_DATABASE_URL": clean_pg,
            "BQAS_LLM_BASE_URL": llm.base_url,
            "BQAS_JUDGE_MODEL": "scripted",
            "BQAS_LLM_CACHE": "false",
            "BQAS_RATE_LIMIT": "0.001",
            "BQAS_RATE_BURST": str(BURST),
            "BQAS_AUTH_FAILURES_FREE": "2",
            "BQAS_AUTH_BACKOFF_SECONDS": "120",
            "BQAS_JOB_POLL_SECONDS": "0.1",
            "BQAS_WORKER_CONCURRENCY": "1",
        }
        store = open_store(clean_pg)
        jobs_key = create_api_key(store, "replica-jobs")
        jobs = {"Authorization": f"Bearer {jobs_key}"}
        limited = {"Authorization": f"Bearer {create_api_key(store, 'replica-limits')}"}
        port_a, port_b = _free_port(), _free_port()
        a = _spawn(env, "serve", "--port", str(port_a), "--no-worker", "--log-level", "warning")
        b = _spawn(env, "serve", "--port", str(port_b), "--log-level", "warning")
        w = _spawn(env, "worker")
        procs = [a, b, w]
        try:
            _wait_healthy(a, port_a)
            _wait_healthy(b, port_b)
            url_a, url_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"

            # Jobs: submitted to A (which runs no worker), claimed by B's in-process worker or by the
            # `bqas worker` process, and readable on both replicas.
            submitted = []
            for i in range(4):
                r = httpx.post(f"{url_a}/api/score/session_async", json=_job_body(i), headers=jobs)
                assert r.status_code == 202, r.text
                submitted.append(r.json()["job_id"])
            for job_id in submitted:
                done = _wait_done(store, url_b, job_id, jobs)
                assert done["status"] == "done", done
                assert len(done["turns"]) == 2
                assert all(res["status"] == "scored" for t in done["turns"] for res in t["results"]), done
                on_a = httpx.get(f"{url_a}/api/jobs/{job_id}", headers=jobs).json()
                assert on_a["status"] == "done" and on_a["turns"] == done["turns"]
                workers = {worker for _seq, worker in item_rows(store, job_id)}
                pids = {int(str(name).split(":")[1]) for name in workers}
                assert pids <= {b.pid, w.pid}, (pids, a.pid, b.pid, w.pid)

            # Review sessions live in the store: a login on A is a session on B, a logout on B ends it on A.
            cookies = _login(url_a, jobs_key)
            queue_b = httpx.get(f"{url_b}/review/queue", cookies=cookies)
            assert queue_b.status_code == 200 and "csrf" in queue_b.text
            csrf = queue_b.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            out = httpx.post(f"{url_b}/review/logout", data={"csrf": csrf}, cookies=cookies)
            assert out.status_code == 303, out.text
            gone = httpx.get(f"{url_a}/review/queue", cookies=cookies)
            assert gone.status_code == 303 and gone.headers["location"].endswith("/review/login")

            # The rate limit is per replica: A's bucket for this tenant is empty, B's is still full.
            statuses = [httpx.get(f"{url_a}/api/jobs/none", headers=limited).status_code for _ in range(BURST + 1)]
            assert statuses == [404] * BURST + [429]
            assert httpx.get(f"{url_b}/api/jobs/none", headers=limited).status_code == 404

            # The failed-key back-off is per replica too: after the free failures A makes this client wait
            # (even with a good key); B still answers it.
            bad = {"Authorization": "Bearer bqas_not-a-key"}
            assert [httpx.get(f"{url_a}/api/jobs/none", headers=bad).status_code for _ in range(3)] == [401] * 3
            assert httpx.get(f"{url_a}/api/jobs/{submitted[0]}", headers=jobs).status_code == 429
            assert httpx.get(f"{url_b}/api/jobs/{submitted[0]}", headers=jobs).status_code == 200
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        # Every turn stored exactly once, each by one worker.
        for job_id in submitted:
            assert [seq for seq, _ in item_rows(store, job_id)] == [0, 1]
        assert len(llm.requests) == 2 * len(submitted)
