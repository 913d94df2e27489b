"""Offline judge speed (issue: offline default judge): mean / p50 / p95 milliseconds per sample for each
judge on the shipped example scenarios, after the embedding model is loaded (load time printed apart).
Target: mean < 50 ms per sample on the 2-core machine (seed 002's target is 500 ms).

Run: .venv/bin/python benchmarks/bench_offline.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.spec import default_registry
from bqas.offline.embeddings import default_embedder

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = {
    "voice": ROOT / "scenarios/data/voice_de.jsonl",
    "abitur": ROOT / "scenarios/data/abitur_rag_de.jsonl",
    "zh": ROOT / "scenarios/data/device_docs_zh.jsonl",
}
LANG = {"voice": "de", "abitur": "de", "zh": "zh"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the samples (first pass included)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    default_embedder().embed(["Modell laden"])
    print(f"embedding model load + first call: {1000 * (time.perf_counter() - t0):.0f} ms (excluded below)")
    engine = JudgeEngine(default_registry(), options=EngineOptions(backend="offline"))
    times: dict[str, list[float]] = defaultdict(list)

    async def run() -> None:
        for name, path in SCENARIOS.items():
            samples = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            for _ in range(args.repeat):
                for sample in samples:
                    judges = sample.get("judge") or ["voice"]
                    for judge in [judges] if isinstance(judges, str) else judges:
                        started = time.perf_counter()
                        await engine.evaluate(judge, sample, response_id=sample["id"], language=LANG[name])
                        times[judge].append(1000 * (time.perf_counter() - started))

    asyncio.run(run())
    every = [t for ts in times.values() for t in ts]
    for judge, ts in sorted(times.items()):
        q = statistics.quantiles(ts, n=20)
        print(
            f"{judge:18s} n={len(ts):4d}  mean {statistics.fmean(ts):6.2f} ms  p50 {statistics.median(ts):6.2f} ms"
            f"  p95 {q[18]:6.2f} ms"
        )
    mean = statistics.fmean(every)
    print(
        f"all judges: n={len(every)} mean {mean:.2f} ms per sample (target < 50 ms: {'met' if mean < 50 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
