"""The LLM path of the service against the scripted OpenAI-compatible server: scores, 503 with
Retry-After for an unreachable LLM, and job retries that end in success or in a failure with its reason."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {
    "intent_accuracy": 90,
    "faithfulness": 4,
    "relevance": 5,
    "coherence": 4,
    "safety": "pass",
    "reasoning": "Erinnerung korrekt angelegt.",
}
TURN = {
    "question": "Erinnere mich morgen an die Konferenz",
    "answer": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
    "detected_intent": "reminder",
}
BODY = {
    **{k: TURN[k] for k in ("question", "answer")},
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
    "judges": ["voice"],
    "backend": "llm",
}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as server:
        yield server


@pytest.fixture
def svc(tmp_path: Path, llm: ScriptedLLM) -> Iterator[tuple[str, dict[str, str]]]:
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    settings = Settings(
        home=tmp_path / "home", llm_base_url=llm.base_url, judge_model="scripted", llm_max_retries=0, llm_cache=False
    )
    service = ServiceSettings(
        rate_limit=0, job_poll_seconds=0.05, job_retries=2, job_retry_delay=0.05, llm_retry_after=7
    )
    app = create_app(settings=settings, service=service, store=store)
    headers = {"Authorization": f"Bearer {create_api_key(store, 't')}"}
    with ServiceServer(app) as server:
        yield server.base_url, headers


def _wait(url: str, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    deadline = time.time() + 20
    while time.time() < deadline:
        data: dict[str, Any] = httpx.get(f"{url}/api/jobs/{job_id}", headers=headers).json()
        if data["status"] in ("done", "failed"):
            return data
        time.sleep(0.05)
    raise AssertionError("job did not finish")


def test_llm_scores_and_counts_calls(svc: tuple[str, dict[str, str]], llm: ScriptedLLM) -> None:
    url, headers = svc
    r = httpx.post(f"{url}/api/score", json=BODY, headers=headers)
    assert r.status_code == 200, r.text
    record = r.json()[0]
    assert record["backend"] == "llm" and record["faithfulness"] == 4 and record["model"] == "scripted"
    assert len(llm.requests) == 1
    assert "bqas_llm_calls_total 1.0" in httpx.get(f"{url}/metrics").text


def test_unreachable_llm_is_503_with_retry_after(svc: tuple[str, dict[str, str]], llm: ScriptedLLM) -> None:
    url, headers = svc
    llm.default = Reply(status=503)
    r = httpx.post(f"{url}/api/score", json=BODY, headers=headers)
    assert r.status_code == 503
    assert r.headers["Retry-After"] == "7"
    assert "LLM unavailable" in r.json()["detail"]
    assert r.json()["results"][0]["status"] == "unscored"
    assert "bqas_llm_errors_total 1.0" in httpx.get(f"{url}/metrics").text


def test_async_job_retries_then_fails_with_the_reason(svc: tuple[str, dict[str, str]], llm: ScriptedLLM) -> None:
    url, headers = svc
    llm.default = Reply(status=503)
    job_id = httpx.post(f"{url}/api/score/async", json=BODY, headers=headers).json()["job_id"]
    job = _wait(url, headers, job_id)
    assert job["status"] == "failed" and job["results"] is None
    assert "LLM unavailable" in job["error"] and "after 3 attempts" in job["error"]
    assert len(llm.requests) == 3  # one attempt plus job_retries=2


def test_async_job_recovers_when_the_llm_comes_back(svc: tuple[str, dict[str, str]], llm: ScriptedLLM) -> None:
    url, headers = svc
    llm.push(Reply(status=503))
    session = {"judges": ["voice"], "backend": "llm", "turns": [TURN]}
    job_id = httpx.post(f"{url}/api/score/session_async", json=session, headers=headers).json()["job_id"]
    job = _wait(url, headers, job_id)
    assert job["status"] == "done", job
    assert job["turns"][0]["results"][0]["faithfulness"] == 4
    assert len(llm.requests) == 2
