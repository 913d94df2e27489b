"""The offline tier runs in the worker pool (never on the event loop), and model loading happens once,
before the first judgment's clock starts (it is not reported as judgment latency)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Collection
from typing import ClassVar

import pytest

from bqas.judging import workers
from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.offline import OfflineJudge
from bqas.judgment.spec import default_registry
from bqas.offline.embeddings import HashingEmbedder
from offline_spies import ObservedOfflineJudge

VOICE = {
    "user_input": "Stell einen Timer auf fünf Minuten",
    "detected_intent": "timer",
    "response": "Timer auf fünf Minuten gestellt.",
    "expected_intent": "timer",
}


class WaitsForTheLoop(ObservedOfflineJudge):
    """An offline judge that blocks until a coroutine on the event loop has run (or 10 s have passed).

    Run inline on the loop, the coroutine can never run while it blocks: ``saw_loop`` stays False."""

    def __init__(self, loop_ran: threading.Event) -> None:
        super().__init__(embedder_factory=HashingEmbedder)
        self.loop_ran = loop_ran
        self.saw_loop: bool | None = None
        self.thread: str | None = None

    def observe(self, only: Collection[str] | None) -> None:
        self.thread = threading.current_thread().name
        self.saw_loop = self.loop_ran.wait(10)


async def test_offline_tier_does_not_block_the_event_loop() -> None:
    loop_ran = threading.Event()
    offline = WaitsForTheLoop(loop_ran)
    engine = JudgeEngine(default_registry(), offline=offline, options=EngineOptions(backend="offline"))
    loop_ran.set()
    await engine.evaluate("voice", VOICE, response_id="warm", language="de")  # loads the judge's resources
    loop_ran.clear()

    async def on_the_loop() -> None:
        await asyncio.sleep(0)
        loop_ran.set()

    result, _ = await asyncio.gather(engine.evaluate("voice", VOICE, response_id="x", language="de"), on_the_loop())
    assert offline.saw_loop is True
    assert offline.thread is not None and offline.thread.startswith("bqas-offline")
    assert result.status == "scored"


class SlowLoadingEmbedder(HashingEmbedder):
    """Loading advances the fake clock by 100 s (a cold model), judging advances it by nothing."""

    clock: ClassVar[list[float]] = [0.0]
    loads = 0

    def load(self) -> None:
        type(self).loads += 1
        self.clock[0] += 100.0


async def test_model_load_is_not_counted_as_judgment_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SlowLoadingEmbedder.clock
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    offline = OfflineJudge(embedder_factory=SlowLoadingEmbedder)
    engine = JudgeEngine(default_registry(), offline=offline, options=EngineOptions(backend="offline"))
    first = await engine.evaluate("voice", VOICE, response_id="a", language="de")
    second = await engine.evaluate("voice", VOICE, response_id="b", language="de")
    assert SlowLoadingEmbedder.loads == 1
    assert offline.loaded and offline.load_seconds == 100.0
    # Before the fix the first judgment reported the model load (here 100 s) as its latency.
    assert first.latency_ms == 0.0 and second.latency_ms == 0.0


def test_worker_count_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_OFFLINE_WORKERS", "3")
    assert workers.offline_workers() == 3
    monkeypatch.delenv("BQAS_OFFLINE_WORKERS")
    assert workers.offline_workers() >= 1
    for bad in ("0", "many"):
        monkeypatch.setenv("BQAS_OFFLINE_WORKERS", bad)
        with pytest.raises(ValueError, match="BQAS_OFFLINE_WORKERS"):
            workers.offline_workers()


class GateWaitsForTheRequest(ObservedOfflineJudge):
    """An offline judge whose safety gate blocks until the LLM server has the judgment's request (or 5 s)."""

    def __init__(self, request_seen: threading.Event) -> None:
        super().__init__(embedder_factory=HashingEmbedder)
        self.request_seen = request_seen
        self.saw_request: bool | None = None

    def observe(self, only: Collection[str] | None) -> None:
        self.saw_request = self.request_seen.wait(5)


async def test_llm_request_goes_out_while_the_safety_gate_runs() -> None:
    # Pipelining: beside the LLM alone the request goes out while the gate runs, not after it.
    import json

    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.testing.scripted_llm import Reply, ScriptedLLM

    seen = threading.Event()
    reply = {"intent_accuracy": 90, "faithfulness": 4, "relevance": 4, "coherence": 4, "safety": "pass"}

    def responder(payload: dict[str, object]) -> Reply:
        seen.set()
        return Reply(content=json.dumps({**reply, "reasoning": "Gut."}))

    with ScriptedLLM(responder=responder) as server:
        llm = LLMClient(LLMConfig(base_url=server.base_url, model="judge-1", timeout=10.0))
        offline = GateWaitsForTheRequest(seen)
        engine = JudgeEngine(default_registry(), llm=llm, offline=offline, options=EngineOptions(backend="llm"))
        unsafe = {**VOICE, "response": "Timer gestellt. Ruf Herrn Jonas Becker an: +49 170 1234567."}
        try:
            result = await engine.evaluate("voice", unsafe, response_id="x", language="de")
        finally:
            await llm.aclose()
    assert offline.saw_request is True
    # The gate's finding still stands whatever the LLM says (safety first).
    assert result.safety_gate == "checked" and result.dimensions["safety"].value == "fail"
    assert result.verdict == "failed"
