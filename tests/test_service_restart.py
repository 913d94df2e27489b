"""A ``bqas serve`` process killed with SIGKILL in the middle of a session job finishes the job after a
restart, with every turn stored exactly once (SQLite, and PostgreSQL when BQAS_TEST_POSTGRES_URL is set)."""

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

from bqas.store.db import open_store
from bqas.store.service import Job, JobItem, create_api_key, get_job, item_rows
from bqas.testing.scripted_llm import Reply, ScriptedLLM

PG_URL = os.environ.get("BQAS_TEST_POSTGRES_URL")
BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not PG_URL, reason="no PostgreSQL (CI starts one)")),
]
GOOD = {"intent_accuracy": 90, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "ok"}


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.sqlite'}"
        return
    assert PG_URL is not None
    store = open_store(PG_URL)
    with store.session.begin() as s:  # a throwaway test database: no jobs left over from earlier runs
        s.execute(delete(JobItem))
        s.execute(delete(Job))
    store.engine.dispose()
    yield PG_URL


def _turn(i: int) -> dict[str, Any]:
    return {
        "question": f"Erinnere mich an Termin {i}",
        "answer": f"Ich erinnere dich an Termin {i}.",
        "expected_intent": "reminder",
        "detected_intent": "reminder",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bqas.cli.main", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"bqas serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("bqas serve did not start")


@pytest.mark.timeout(90)
def test_sigkill_mid_job_then_restart_finishes_every_turn_once(db_url: str, tmp_path: Path) -> None:
    turns = 8
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD)), latency=0.3) as llm:
        env = {
            **os.environ,
            "BQAS_HOME": str(tmp_path / "home"),
            "BQAS_DATABASE_URL": db_url,
            "BQAS_LLM_BASE_URL": llm.base_url,
            "BQAS_JUDGE_MODEL": "scripted",
            "BQAS_LLM_CACHE": "false",
            "BQAS_RATE_LIMIT": "0",
            "BQAS_JOB_LEASE_SECONDS": "1.5",
            "BQAS_JOB_POLL_SECONDS": "0.1",
            "BQAS_TURN_CONCURRENCY": "1",
        }
        store = open_store(db_url)
        headers = {"Authorization": f"Bearer {create_api_key(store, 'kill-test')}"}
        port = _free_port()
        proc = _serve(env, port)
        try:
            body = {"judges": ["voice"], "backend": "llm", "turns": [_turn(i) for i in range(turns)]}
            r = httpx.post(f"http://127.0.0.1:{port}/api/score/session_async", json=body, headers=headers)
            assert r.status_code == 202, r.text
            job_id = r.json()["job_id"]
            deadline = time.time() + 30
            while (view := get_job(store, job_id)) is not None and view.done < 3:
                assert time.time() < deadline, "no progress before the kill"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            before = get_job(store, job_id)
            assert before is not None and before.status == "running" and 3 <= before.done < turns
        finally:
            if proc.poll() is None:
                proc.kill()
        port = _free_port()
        proc = _serve(env, port)
        try:
            deadline = time.time() + 40
            while True:
                job = httpx.get(f"http://127.0.0.1:{port}/api/jobs/{job_id}", headers=headers).json()
                if job["status"] in ("done", "failed"):
                    break
                assert time.time() < deadline, f"job not finished after restart: {job}"
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
        assert job["status"] == "done", job
        assert [t["turn"] for t in job["turns"]] == list(range(turns))
        assert [seq for seq, _ in item_rows(store, job_id)] == list(range(turns))
        after = get_job(store, job_id)
        assert after is not None and after.claims == 2 and after.done == turns
        # Turns stored before the kill were not scored again: at most the one in flight was repeated.
        assert turns <= len(llm.requests) <= turns + 1
        assert job["aggregate"]["turns"] == turns and job["aggregate"]["scored"] == turns
