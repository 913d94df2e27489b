"""What the LLM cache and the review loop each add to a run (target: defaults within 1.3x of both off).

The runner benchmark's workload (N distinct voice samples, scripted server at 50 ms, 128 in flight, one
process) run four ways side by side in each repetition: both off, only the LLM cache (a new, empty cache
file), only the review loop (as the local tenant), both on (``bqas run``'s defaults). Prints wall and CPU
per variant and the extra over "off", min and median over the repetitions.

    .venv/bin/python benchmarks/runner/bench_defaults_split.py --n 5000 --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = {"off": (False, False), "cache": (True, False), "review": (False, True), "both": (True, True)}


def one(url: str, folder: Path, n: int, cache_on: bool, review_on: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one runner pass over ``n`` samples."""
    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judgment.spec import default_registry
    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.runner.execute import execute_run
    from bqas.runner.run import new_event_loop
    from bqas.runner.scenario import load_scenario
    from bqas.store.db import open_store

    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "id": f"s{i}",
                "user_input": f"Erinnere mich an Termin {i} morgen frueh",
                "detected_intent": "reminder",
                "response": f"Ich erinnere dich an Termin {i}.",
                "expected_intent": "reminder",
            }
            fh.write(json.dumps(row) + "\n")
    path = folder / "scenario.yaml"
    path.write_text(f"name: bench\njudges: [voice]\nbackend: llm\ndataset: {data.name}\n", encoding="utf-8")
    scenario = load_scenario(path)
    store = open_store(f"sqlite:///{folder / 'bench.sqlite'}")
    store.create_run("bench", "bench", {}, total=n)
    cache = folder / "llm-cache.sqlite" if cache_on else None
    llm = LLMClient(LLMConfig(base_url=url, model="bench", concurrency=128, cache_path=cache))
    engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    loop: asyncio.AbstractEventLoop = new_event_loop()
    started, cpu0 = time.perf_counter(), time.process_time()
    review = "@local" if review_on else None
    loop.run_until_complete(execute_run(engine, scenario, store, "bench", concurrency=128, review_tenant=review))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    loop.run_until_complete(llm.aclose())
    loop.close()
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    from _server import scripted_server
    from bench_runner import REPLY

    walls: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpus: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with scripted_server(0.05, REPLY) as url:
        for rep in range(args.repeat):
            for name, (cache_on, review_on) in VARIANTS.items():
                with tempfile.TemporaryDirectory() as tmp:
                    wall, cpu = one(url, Path(tmp), args.n, cache_on, review_on)
                walls[name].append(wall)
                cpus[name].append(cpu)
                print(f"rep {rep + 1} {name:6s}: wall {wall:.2f} s, CPU {cpu:.2f} s", flush=True)
    for name in VARIANTS:
        extra_wall = [w - o for w, o in zip(walls[name], walls["off"], strict=True)]
        extra_cpu = [1000 * (c - o) / args.n for c, o in zip(cpus[name], cpus["off"], strict=True)]
        print(
            f"{name:6s}: wall min {min(walls[name]):.2f} median {statistics.median(walls[name]):.2f} s;"
            f" extra over off (paired) wall min {min(extra_wall):+.2f} median {statistics.median(extra_wall):+.2f} s,"
            f" CPU min {min(extra_cpu):+.3f} median {statistics.median(extra_cpu):+.3f} ms/sample"
        )


if __name__ == "__main__":
    main()
