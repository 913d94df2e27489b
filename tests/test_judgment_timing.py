"""A judgment's time, split: its own work (service_ms) and its wait for a free worker or LLM slot
(queue_ms); both add up to latency_ms, and waiting shows as queue, not as work."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bqas.judging import dispatch
from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.offline import OfflineJudge, timed_offline_tier
from bqas.judging.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import HashingEmbedder
from bqas.testing.scripted_llm import Reply, ScriptedLLM

SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen an die Konferenz.",
    "expected_intent": "reminder",
}
WORK_S = 0.03  # each offline tier "works" this long in its one worker (a sleep: no CPU needed)


async def test_waiting_for_the_one_offline_worker_is_queue_not_service(monkeypatch: pytest.MonkeyPatch) -> None:
    one_worker = ThreadPoolExecutor(max_workers=1)

    async def run_on_one_worker(fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(one_worker, functools.partial(fn, *args, **kwargs))

    def working(*args: Any, **kwargs: Any) -> Any:
        out, worked = timed_offline_tier(*args, **kwargs)
        time.sleep(WORK_S)
        return out, worked + WORK_S

    monkeypatch.setattr(dispatch, "run_cpu", run_on_one_worker)
    monkeypatch.setattr(dispatch, "timed_offline_tier", working)
    engine = JudgeEngine(
        default_registry(), offline=OfflineJudge(embedder_factory=HashingEmbedder), options=EngineOptions()
    )
    engine.dispatch.mode = "threads"
    engine.offline.load()
    try:
        results = await asyncio.gather(
            *(engine.evaluate("voice", SAMPLE, response_id=f"r{i}", language="de") for i in range(8))
        )
    finally:
        one_worker.shutdown()
    for r in results:
        assert r.service_ms + r.queue_ms == pytest.approx(r.latency_ms, abs=0.01)
        assert r.service_ms >= WORK_S * 1000  # the worker's own time is service
    # Eight judgments on one worker: seven wait behind others; those waits are queue, not work (by
    # construction the waits add up to at least 28 work periods, the work to 8).
    assert sum(r.queue_ms for r in results) > sum(r.service_ms for r in results)
    assert results[-1].to_record()["queue_ms"] == results[-1].queue_ms


async def test_waiting_for_an_llm_slot_is_queue() -> None:
    body = {
        "intent_accuracy": 90,
        "faithfulness": 4,
        "relevance": 4,
        "coherence": 4,
        "safety": "pass",
        "reasoning": "ok",
    }
    with ScriptedLLM(default=Reply(content=json.dumps(body)), latency=0.05) as server:
        llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", concurrency=1, max_retries=0))
        engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
        try:
            results = await asyncio.gather(
                *(engine.evaluate("voice", SAMPLE, response_id=f"r{i}", language="de") for i in range(4))
            )
        finally:
            await llm.aclose()
    assert all(r.status == "scored" for r in results)
    for r in results:
        assert r.service_ms + r.queue_ms == pytest.approx(r.latency_ms, abs=0.01)
    # One connection slot, four judgments: three wait for it, each at least one reply long.
    assert sum(1 for r in results if r.queue_ms > 0) >= 3
    assert sum(r.queue_ms for r in results) > sum(r.service_ms for r in results) * 0.5
