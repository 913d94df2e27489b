"""Judge-engine benchmarks (issue: judge engine).

1. Engine overhead per judgment — render + parse + score + record, LLM excluded. Target ≤ 1 ms CPU.
2. 1,000 voice judgments against the scripted server with 200 ms fixed latency at concurrency 64.
   Target: wall time within 1.15× of the ideal 1000 × 0.2 / 64 s.
3. Cold `bqas --help`. Target < 0.5 s.

Run: .venv/bin/python benchmarks/llm/bench_engine.py [--n 1000] [--latency 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import scripted_server

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.parse import parse_reply
from bqas.judging.render import render_prompt
from bqas.judgment.policy import apply_policy
from bqas.judgment.result import DimensionProvenance, JudgmentResult
from bqas.judgment.spec import default_registry
from bqas.llm.client import LLMClient, LLMConfig

REPLY = json.dumps(
    {
        "intent_accuracy": 85,
        "faithfulness": 4,
        "relevance": 5,
        "coherence": 4,
        "safety": "pass",
        "reasoning": "Die Antwort passt zur Anfrage und enthaelt keine personenbezogenen Daten.",
    }
)
SAMPLE = {
    "user_input": "Erinnere mich morgen um acht an die Elternsprechtage der 7b",
    "detected_intent": "reminder",
    "response": "Alles klar, ich erinnere dich morgen um 8 Uhr an die Elternsprechtage der Klasse 7b.",
    "expected_intent": "reminder",
}


def engine_overhead(n: int) -> float:
    """CPU milliseconds per judgment for render + parse + policy + record."""
    spec = default_registry().get("voice")
    assert spec.scoring is not None
    cpu0 = time.process_time()
    for i in range(n):
        prompt = render_prompt(spec, {**SAMPLE, "user_input": f"{SAMPLE['user_input']} {i}"}, "de")
        outcome = parse_reply(REPLY, spec.schema)
        assert outcome.ok and outcome.data is not None
        values = {k: v for k, v in outcome.data.items() if k in spec.scoring.composite}
        policy = apply_policy(values, spec.scoring, spec.dimensions)
        result = JudgmentResult(
            response_id=str(i),
            judge="voice",
            language="de",
            prompt_hash=prompt.prompt_hash,
            composite_score=policy.composite,
            verdict=policy.verdict,
            dimensions={k: DimensionProvenance(value=v, backend="llm") for k, v in values.items()},
        )
        result.to_record()
    return (time.process_time() - cpu0) * 1000 / n


async def many_judgments(base_url: str, n: int, concurrency: int) -> tuple[float, int]:
    llm = LLMClient(LLMConfig(base_url=base_url, model="bench", concurrency=concurrency, cache_path=None))
    engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str | None:
        async with sem:
            result = await engine.evaluate(
                "voice", {**SAMPLE, "user_input": f"{SAMPLE['user_input']} #{i}"}, response_id=str(i)
            )
            return result.verdict

    # Warm-up: open connections and settle the structured-output mode outside the timed part.
    await asyncio.gather(*(one(-1 - i) for i in range(concurrency)))
    started = time.perf_counter()
    verdicts = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - started
    await llm.aclose()
    return wall, sum(v == "production_ready" for v in verdicts)


def run_loop(coro):  # type: ignore[no-untyped-def]
    """Run on the same event loop the CLI uses (uvloop where installed)."""
    from bqas.runner.run import new_event_loop

    loop = new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def cold_help(repeats: int) -> list[float]:
    exe = Path(sys.executable).parent / "bqas"
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([str(exe), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--overhead-n", type=int, default=5000)
    args = parser.parse_args()

    engine_overhead(200)  # warm caches (registry, regexes)
    per = engine_overhead(args.overhead_n)
    print(
        f"engine overhead: {per:.3f} ms CPU per judgment (render+parse+score+record, n={args.overhead_n}); "
        f"target <= 1 ms: {'met' if per <= 1 else 'MISSED'}"
    )

    with scripted_server(args.latency, REPLY) as url:
        wall, ok = run_loop(many_judgments(url, args.n, args.concurrency))
    ideal = args.n * args.latency / args.concurrency
    print(
        f"{args.n} voice judgments, latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}: "
        f"wall {wall:.3f} s, ideal {ideal:.3f} s, ratio {wall / ideal:.3f} (target <= 1.15: "
        f"{'met' if wall / ideal <= 1.15 else 'MISSED'}); production_ready {ok}/{args.n}"
    )

    times = cold_help(7)
    print(
        f"cold `bqas --help`: median {statistics.median(times):.3f} s, min {min(times):.3f} s "
        f"(7 runs; target < 0.5 s: {'met' if statistics.median(times) < 0.5 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
