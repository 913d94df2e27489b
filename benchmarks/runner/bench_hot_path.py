"""Pieces of the runner's hot path, one at a time what a judgment's steps cost.

Prints microseconds per call (best of several rounds) for: parsing the benchmark's judge reply, building a
dimension's provenance validated and with ``model_construct``, dropping the LLM exchange from a record
(comprehension vs the store's copy), the safety gate by answer length, and the 22 judge-manipulation rules
one by one vs one alternation of them vs ``scan`` with and without the required-literal pre-filter.
``--transport`` instead compares the bare aiohttp client with the
LLM client's settings (timeout, session headers, chunked read) against the scripted server. ``--engine``
times the runner's own work per judgment without the network: ``judge_one`` (render, the client's request
building and reply reading, parse, combine, record) on the benchmark's voice samples with the HTTP post
answered from memory, safety gate off (the gate is timed above), CPU microseconds per judgment.

Run the same against another checkout for before/after figures: PYTHONPATH=BEFORE/src python ...
Run: nice .venv/bin/python benchmarks/runner/bench_hot_path.py [--transport | --engine]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPLY = json.dumps(
    {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "Passt."}
)


def per_call_us(fn: Callable[[], object], number: int = 5000, repeat: int = 7) -> float:
    """Best of ``repeat`` rounds of ``number`` calls, in microseconds per call."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def pieces() -> None:
    from bqas.judging.offline import OfflineJudge, offline_tier
    from bqas.judging.parse import parse_reply
    from bqas.judgment.result import DimensionProvenance
    from bqas.judgment.spec import default_registry

    spec = default_registry().get("voice")
    print(f"parse_reply (benchmark reply)          {per_call_us(lambda: parse_reply(REPLY, spec.schema)):8.2f} us")
    made = per_call_us(lambda: DimensionProvenance(value=4, backend="llm", model="m", method="judge_prompt"))
    built = per_call_us(
        lambda: DimensionProvenance.model_construct(value=4, backend="llm", model="m", method="judge_prompt")
    )
    print(f"DimensionProvenance(...) validated      {made:8.2f} us")
    print(f"DimensionProvenance.model_construct     {built:8.2f} us")
    record: dict[str, Any] = {f"field{i}": i for i in range(40)} | {"llm_exchange": {"attempts": []}}
    comprehension = per_call_us(lambda: {k: v for k, v in record.items() if k != "llm_exchange"}, 100_000)
    print(f"record without exchange: comprehension  {comprehension:8.2f} us")
    try:
        from bqas.store.db import _without
    except ImportError:  # a checkout from before the store's copy
        pass
    else:
        print(
            f"record without exchange: _without       {per_call_us(lambda: _without(record, 'llm_exchange'), 100_000):8.2f} us"
        )
    judge = OfflineJudge()
    only = frozenset({"safety_gate", "pii_gate"})
    for length in (30, 300, 3000):
        response = ("Ich erinnere dich an Termin 3 morgen frueh. " * (length // 44 + 1))[:length]
        values = {"user_input": "Erinnere mich", "detected_intent": "r", "response": response, "expected_intent": "r"}
        # Distinct texts each call: the manipulation rules remember their hits per text.
        counter = iter(range(10**9))

        def gate(values: dict[str, str] = values, counter: Any = counter) -> object:
            varied = {**values, "response": f"{next(counter)} {values['response']}"}
            return offline_tier(judge, spec, varied, "de", only=only)

        print(f"safety gate, {length:5d}-character answer   {per_call_us(gate, 200, 3):8.1f} us")
    changed_pieces()
    manipulation_rules()


def changed_pieces() -> None:
    """Pieces that were changed or tried on this path: fence, the in-flight limit, to_record's dump."""
    import asyncio
    import hashlib

    from bqas.judging.render import CLOSE_MARKER, OPEN_MARKER, fence
    from bqas.judgment.result import DimensionProvenance, JudgmentResult, TierConfidence
    from bqas.llm.servers import InFlight
    from bqas.runner.run import new_event_loop

    print(
        f"fence (a 30-character value)            {per_call_us(lambda: fence('response', 'Ich erinnere dich an Termin 3.'), 100_000):8.2f} us"
    )

    def fence_with_format(name: str = "response", text: str = "Ich erinnere dich an Termin 3.") -> str:
        nonce = hashlib.sha256(f"{name}\x00{text}".encode()).hexdigest()[:12]
        return (
            f"\n{OPEN_MARKER.format(name=name, nonce=nonce)}\n{text}\n{CLOSE_MARKER.format(name=name, nonce=nonce)}\n"
        )

    print(f"fence as before (two str.format)        {per_call_us(fence_with_format, 100_000):8.2f} us")

    async def in_flight() -> float:
        limit = InFlight(128)
        rounds = []
        for _ in range(5):
            cpu = time.process_time()
            for _ in range(100_000):
                async with limit:
                    pass
            rounds.append((time.process_time() - cpu) / 100_000 * 1e6)
        return min(rounds)

    loop = new_event_loop()
    try:
        print(f"InFlight enter + exit, a free slot      {loop.run_until_complete(in_flight()):8.2f} us")
    finally:
        loop.close()
    asyncio.set_event_loop(None)
    result = JudgmentResult(
        response_id="s1",
        judge="voice",
        language="de",
        prompt_language="de",
        model="m",
        backend="llm",
        reasoning="Passt.",
        composite_score=85.5,
        coverage=1.0,
        verdict="production_ready",
        safety_gate="checked",
    )
    for name in ("intent_accuracy", "faithfulness", "relevance", "coherence"):
        result.dimensions[name] = DimensionProvenance(value=4, backend="llm", model="m", method="judge_prompt")
    result.dimensions["safety"] = DimensionProvenance(value="pass", backend="llm", model="m", offline_value="pass")
    result.confidence["llm"] = TierConfidence(model="m", reason="the server gave no token log-probabilities")
    fields = [n for n, f in JudgmentResult.model_fields.items() if not f.exclude]

    def plain_dump() -> dict[str, Any]:  # the dict built in Python (what model_dump(mode="json") gives here)
        out = {n: getattr(result, n) for n in fields}
        out["dimensions"] = {k: dict(p.__dict__) for k, p in result.dimensions.items()}
        out["confidence"] = {k: dict(c.__dict__) for k, c in result.confidence.items()}
        for name in ("escalation_reasons", "repairs", "errors", "warnings"):
            out[name] = list(out[name])
        out["outputs"], out["truncated"] = dict(result.outputs), dict(result.truncated)
        return out

    assert plain_dump() == result.model_dump(mode="json")
    print(
        f"to_record's model_dump(mode='json')     {per_call_us(lambda: result.model_dump(mode='json'), 20_000):8.2f} us"
    )
    print(f"the same dict built in Python           {per_call_us(plain_dump, 20_000):8.2f} us")


def manipulation_rules() -> None:
    """The 22 rules one by one (as the gate runs them) against one alternation of them."""
    from bqas.offline.manipulation import _rules
    from bqas.offline.text.normalize import compact_view, rule_view

    rules = _rules()

    def combined(view: str) -> re.Pattern[str]:
        patterns = [r.regex.pattern.replace("(?P<tag>", "(?:") for r in rules if r.view == view]
        return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)

    rule_re, compact_re = combined("rule"), combined("compact")
    texts = [
        rule_view(f"Ich erinnere dich an Termin {i}. Morgen um acht Uhr, denk an die Unterlagen.") for i in range(2000)
    ]
    started = time.perf_counter()
    for view in texts:
        compact = compact_view(view, normalised=True)
        for rule in rules:
            rule.matches(compact if rule.view == "compact" else view)
    one_by_one = (time.perf_counter() - started) / len(texts) * 1e6
    started = time.perf_counter()
    for view in texts:
        rule_re.search(view)
        compact_re.search(compact_view(view, normalised=True))
    alternation = (time.perf_counter() - started) / len(texts) * 1e6
    print(f"manipulation rules one by one           {one_by_one:8.1f} us")
    print(f"manipulation rules as one alternation   {alternation:8.1f} us")
    try:
        from bqas.offline.manipulation import scan
    except ImportError:  # a checkout from before the required-literal pre-filter
        return
    raw = [f"Ich erinnere dich an Termin {i}. Morgen um acht Uhr, denk an die Unterlagen." for i in range(2000)]
    for prefilter in (False, True):
        started = time.perf_counter()
        for text in raw:
            scan(text, prefilter=prefilter)
        per_text = (time.perf_counter() - started) / len(raw) * 1e6
        print(f"manipulation scan, views included, prefilter={prefilter!s:5s} {per_text:8.1f} us")


def transport(n: int = 8000) -> None:
    """The bare client with each of the LLM client's transport settings switched on (CPU per request)."""
    import asyncio

    import aiohttp
    from _server import scripted_server

    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "x"}]}).encode()

    async def run(url: str, timeout: bool, chunked: bool, headers: bool) -> float:
        sem = asyncio.Semaphore(128)
        options: dict[str, Any] = {}
        if timeout:
            options["timeout"] = aiohttp.ClientTimeout(total=60, connect=10)
        if headers:
            options["headers"] = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=128), **options) as http:

            async def one() -> None:
                async with sem, http.post(f"{url}/chat/completions", data=body) as response:
                    if chunked:
                        data = bytearray()
                        async for chunk in response.content.iter_chunked(65536):
                            data += chunk
                        data.decode(response.get_encoding() or "utf-8", errors="replace")
                    else:
                        await response.read()

            await asyncio.gather(*(one() for _ in range(200)))  # connections opened before the clock
            cpu = time.process_time()
            await asyncio.gather(*(one() for _ in range(n)))
            return (time.process_time() - cpu) / n * 1e3

    with scripted_server(0.05, REPLY) as url:
        for _ in range(2):
            for timeout, chunked, headers in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)]:
                cpu = asyncio.run(run(url, bool(timeout), bool(chunked), bool(headers)))
                print(f"timeout={timeout} chunked={chunked} headers={headers}: {cpu:.3f} ms CPU per request")


def engine(n: int = 4000, rounds: int = 5) -> None:
    """CPU per ``judge_one`` call with the HTTP post answered from memory (best of ``rounds`` passes)."""
    import tempfile

    import orjson

    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judgment.spec import default_registry
    from bqas.judgment.work import DatasetItem, WorkItem
    from bqas.llm.client import Completion, LLMClient, LLMConfig
    from bqas.runner.execute import judge_one
    from bqas.runner.run import new_event_loop
    from bqas.runner.scenario import load_scenario

    body = orjson.dumps(
        {
            "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 500, "completion_tokens": 40},
        }
    ).decode()

    class InMemory(LLMClient):
        async def _post_with_retries(self, payload: dict[str, Any]) -> list[Completion]:
            orjson.dumps(payload)  # what the real post encodes
            return self._completions(body, 1)

    llm = InMemory(LLMConfig(base_url="http://127.0.0.1:9/v1", model="bench"))
    judges = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm", safety_gate=False))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "data.jsonl").write_text("", encoding="utf-8")
        (folder / "s.yaml").write_text(
            "name: b\njudges: [voice]\nbackend: llm\ndataset: data.jsonl\n", encoding="utf-8"
        )
        scenario = load_scenario(folder / "s.yaml")
    works = [
        WorkItem(
            f"s{i}::voice",
            i,
            "voice",
            DatasetItem(
                line=i + 1,
                sample_id=f"s{i}",
                data={
                    "id": f"s{i}",
                    "user_input": f"Erinnere mich an Termin {i} morgen frueh",
                    "detected_intent": "reminder",
                    "response": f"Ich erinnere dich an Termin {i}.",
                    "expected_intent": "reminder",
                },
            ),
        )
        for i in range(n)
    ]

    async def passes() -> list[float]:
        for work in works[:200]:  # lazy imports and compiled validators before the clock
            await judge_one(judges, scenario, "r", work)
        out = []
        for _ in range(rounds):
            cpu = time.process_time()
            for work in works:
                await judge_one(judges, scenario, "r", work)
            out.append((time.process_time() - cpu) / n * 1e6)
        return out

    loop = new_event_loop()
    try:
        us = loop.run_until_complete(passes())
    finally:
        loop.close()
    print(f"judge_one without the network, gate off: min {min(us):.1f} median {sorted(us)[len(us) // 2]:.1f} us CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", action="store_true", help="compare the transport settings instead")
    parser.add_argument("--engine", action="store_true", help="time judge_one without the network instead")
    args = parser.parse_args()
    if args.engine:
        engine()
    elif args.transport:
        transport()
    else:
        pieces()


if __name__ == "__main__":
    main()
