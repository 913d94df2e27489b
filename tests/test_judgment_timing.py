"""A judgment's time, split: its own work (service_ms) and its wait for a free worker or LLM slot
(queue_ms); both add up to latency_ms, and waiting shows as queue, not as work."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from bqas.judging import dispatch
from bqas.judging import engine as engine_module
from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.offline import OfflineJudge, timed_offline_tier
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig
from bqas.offline.embeddings import HashingEmbedder
from bqas.testing.scripted_llm import Reply, ScriptedLLM

SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen an die Konferenz.",
    "expected_intent": "reminder",
}
WORK_S = 0.03  # each offline tier "works" this long on the scripted clock


async def test_waiting_for_the_one_offline_worker_is_queue_not_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight judgments on one worker, on a scripted clock that moves only while the worker works: the
    judgment served k-th waited k work periods (queue) and worked one (service), exactly."""
    clock = [0.0]
    monkeypatch.setattr(engine_module, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    arrived: list[int] = []
    all_arrived = asyncio.Event()
    one_worker = asyncio.Lock()

    async def run_on_one_worker(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is working:  # the worker starts once every judgment has handed it its tier
            arrived.append(1)
            if len(arrived) == 8:
                all_arrived.set()
            await all_arrived.wait()
        async with one_worker:
            return fn(*args, **kwargs)

    def working(*args: Any, **kwargs: Any) -> Any:
        out, _ = timed_offline_tier(*args, **kwargs)
        clock[0] += WORK_S
        return out, WORK_S

    monkeypatch.setattr(dispatch, "run_cpu", run_on_one_worker)
    monkeypatch.setattr(dispatch, "timed_offline_tier", working)
    engine = JudgeEngine(
        default_registry(), offline=OfflineJudge(embedder_factory=HashingEmbedder), options=EngineOptions()
    )
    engine.dispatch.mode = "threads"
    engine.offline.load()
    results = await asyncio.gather(
        *(engine.evaluate("voice", SAMPLE, response_id=f"r{i}", language="de") for i in range(8))
    )
    assert all(r.status == "scored" for r in results)
    work_ms = WORK_S * 1000
    assert sorted(r.queue_ms for r in results) == [pytest.approx(k * work_ms) for k in range(8)]
    assert [r.service_ms for r in results] == [pytest.approx(work_ms)] * 8  # waiting is not counted as work
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
    # One connection slot, four judgments: at least three wait for it, and that wait is recorded as queue
    # (how long it was is a measurement, for benchmarks).
    assert sum(1 for r in results if r.queue_ms > 0) >= 3
