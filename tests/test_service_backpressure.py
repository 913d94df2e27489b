"""Backpressure of the scoring service (bqas.service.backpressure): past BQAS_MAX_IN_FLIGHT synchronous
scoring requests in progress, one more is answered 503 with Retry-After at once, while health checks,
metrics and async submissions keep answering; the count goes down again when the held requests end."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, Gauge

from bqas.service.app import create_app
from bqas.service.asgi import Message, Receive, Scope, Send
from bqas.service.backpressure import OVERLOADED, InFlightLimit, default_max_in_flight
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM

BODY = {
    "question": "Erinnere mich morgen an die Konferenz",
    "answer": "Ich erinnere dich morgen an die Konferenz.",
    "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
    "judges": ["voice"],
    "backend": "llm",
}
GOOD = {"intent_accuracy": 100, "faithfulness": 4, "relevance": 4, "coherence": 4, "safety": "pass", "reasoning": "ok"}


def _gauge(metrics_text: str, name: str) -> float | None:
    match = re.search(rf"^{name} ([0-9.]+)$", metrics_text, re.M)
    return float(match.group(1)) if match else None


def test_the_limit_answers_503_at_once_and_frees_its_place_when_a_request_ends() -> None:
    release = asyncio.Event()
    entered = 0

    async def slow_app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal entered
        entered += 1
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    gauge = Gauge("in_flight", "test", registry=CollectorRegistry())
    limit = InFlightLimit(slow_app, max_in_flight=2, gauge=gauge, retry_after=3)

    async def call(path: str = "/api/score") -> list[Message]:
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"{}"}

        async def send(message: Message) -> None:
            sent.append(message)

        await limit({"type": "http", "path": path, "method": "POST", "headers": []}, receive, send)
        return sent

    async def scenario() -> None:
        held = [asyncio.create_task(call()) for _ in range(2)]
        while entered < 2:
            await asyncio.sleep(0)
        assert gauge._value.get() == 2  # type: ignore[attr-defined]
        refused = await call()
        assert refused[0]["status"] == 503
        headers = dict(refused[0]["headers"])
        assert headers[b"retry-after"] == b"3"
        assert json.loads(refused[1]["body"])["error"] == OVERLOADED
        assert entered == 2  # the refused request never reached the application
        # Another route is not bounded by the scoring limit.
        other = asyncio.create_task(call("/healthz"))
        while entered < 3:
            await asyncio.sleep(0)
        release.set()
        for task in [*held, other]:
            assert (await task)[0]["status"] == 200
        assert gauge._value.get() == 0  # type: ignore[attr-defined]
        assert (await call())[0]["status"] == 200  # the places are free again

    asyncio.run(scenario())


def test_the_default_follows_the_offline_workers_and_the_llm_slots() -> None:
    assert default_max_in_flight(2, 0) == 8
    assert default_max_in_flight(8, 0) == 32
    assert default_max_in_flight(2, 16) == 40


@pytest.fixture
def held_llm() -> Iterator[ScriptedLLM]:
    # Every judgment's LLM call hangs until the client's timeout: the requests stay in progress.
    with ScriptedLLM(default=Reply(hang=True)) as server:
        yield server


def test_a_full_replica_answers_503_while_health_metrics_and_async_submissions_go_on(
    tmp_path: Path, held_llm: ScriptedLLM
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    settings = Settings(
        home=tmp_path / "home",
        llm_base_url=held_llm.base_url,
        judge_model="scripted",
        llm_max_retries=0,
        llm_cache=False,
        llm_timeout=20.0,
    )
    service = ServiceSettings(rate_limit=0, max_in_flight=2, llm_retry_after=7)
    app = create_app(settings=settings, service=service, store=store, run_worker=False)
    headers = {"Authorization": f"Bearer {create_api_key(store, 't')}"}
    with ServiceServer(app) as server:
        url = server.base_url
        answers: list[int] = []

        def held_request() -> None:
            answers.append(httpx.post(f"{url}/api/score", json=BODY, headers=headers, timeout=120).status_code)

        threads = [threading.Thread(target=held_request) for _ in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60  # hang guard while two requests reach the LLM
        while time.monotonic() < deadline and len(held_llm.requests) < 2:
            time.sleep(0.05)
        assert len(held_llm.requests) == 2, answers
        metrics = httpx.get(f"{url}/metrics").text
        assert _gauge(metrics, "bqas_in_flight_requests") == 2
        assert _gauge(metrics, "bqas_in_flight_limit") == 2

        refused = httpx.post(f"{url}/api/score", json=BODY, headers=headers, timeout=60)
        assert refused.status_code == 503
        assert refused.headers["Retry-After"] == "1"
        assert refused.json()["error"] == OVERLOADED
        assert len(held_llm.requests) == 2  # the refused request asked no LLM
        assert httpx.get(f"{url}/livez").status_code == 200
        accepted = httpx.post(f"{url}/api/score/async", json=BODY, headers=headers)
        assert accepted.status_code == 202

        # The held requests end when their LLM call times out (503, LLM unavailable); their places free.
        held_llm.default = Reply(content=json.dumps(GOOD))
        for thread in threads:
            thread.join(timeout=120)
        assert answers == [503, 503]
        after: dict[str, Any] = httpx.post(f"{url}/api/score", json=BODY, headers=headers, timeout=60).json()[0]
        assert after["status"] == "scored"
        assert _gauge(httpx.get(f"{url}/metrics").text, "bqas_in_flight_requests") == 0
