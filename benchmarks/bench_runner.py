"""Scenario-runner benchmark (issue: scenario runner).

N samples through the runner (stream in, judge with the LLM backend, store each result) against the
scripted server with fixed latency. Target: wall time within 1.10× of the ideal N × latency / concurrency,
and peak memory that does not grow with N (results are streamed to the store, never all held).

Each size runs in a fresh process so that its peak RSS is its own. Side by side for each size, repeated
(``--repeat``; min and median printed):

* ``bare``: the yardstick - a bare aiohttp client sending the same N requests at the same concurrency
  (no BQAS work at all): what the transport and this machine allow;
* ``off``: the runner with the LLM cache and the review loop off (the published workload);
* ``defaults``: the runner as ``bqas run`` has it (LLM cache on, review loop on as the local tenant).

Targets (issue 15): ``off`` <= 1.10 x ideal; ``defaults`` <= 1.3 x ``off``.

Run: .venv/bin/python benchmarks/bench_runner.py [--sizes 2000 10000] [--latency 0.05] [--concurrency 128]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

REPLY = json.dumps(
    {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "Passt."}
)


def bare_client(n: int, url: str, concurrency: int) -> dict[str, float]:
    """The yardstick: N chat requests with a bare aiohttp client, ``concurrency`` at a time."""
    import asyncio

    import aiohttp

    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "x"}]}).encode()

    async def run() -> float:
        sem = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one() -> None:
                async with sem, http.post(f"{url}/chat/completions", data=body) as r:
                    await r.read()

            started = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(n)))
            return time.perf_counter() - started

    cpu0 = time.process_time()
    wall = asyncio.run(run())
    return {"n": n, "wall": wall, "cpu": time.process_time() - cpu0, "stored": 0, "peak_rss_mb": 0, "rss_before_mb": 0}


def one_size(n: int, url: str, concurrency: int, folder: Path, mode: str = "off") -> dict[str, float]:
    """Run inside a child process: build the scenario, time execute_run, report peak RSS."""
    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judging.spec import default_registry
    from bqas.llm.client import LLMClient, LLMConfig
    from bqas.runner.execute import execute_run
    from bqas.runner.run import new_event_loop
    from bqas.runner.scenario import load_scenario
    from bqas.store.db import open_store

    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"s{i}",
                        "user_input": f"Erinnere mich an Termin {i} morgen frueh",
                        "detected_intent": "reminder",
                        "response": f"Ich erinnere dich an Termin {i}.",
                        "expected_intent": "reminder",
                    }
                )
                + "\n"
            )
    scenario_path = folder / "scenario.yaml"
    scenario_path.write_text(f"name: bench\njudges: [voice]\nbackend: llm\ndataset: {data.name}\n", encoding="utf-8")
    scenario = load_scenario(scenario_path)
    store = open_store(f"sqlite:///{folder / 'bench.sqlite'}")
    store.create_run("bench", "bench", {}, total=n)
    if mode == "bare":
        return bare_client(n, url, concurrency)
    defaults = mode == "defaults"
    cache = folder / "llm-cache.sqlite" if defaults else None
    llm = LLMClient(LLMConfig(base_url=url, model="bench", concurrency=concurrency, cache_path=cache))
    engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    loop = new_event_loop()
    started = time.perf_counter()
    cpu0 = time.process_time()
    review = "@local" if defaults else None  # `bqas run` files its review items under the local tenant
    judged = loop.run_until_complete(
        execute_run(engine, scenario, store, "bench", concurrency=concurrency, review_tenant=review)
    )
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    loop.run_until_complete(llm.aclose())
    loop.close()
    return {
        "n": n,
        "judged": judged,
        "stored": store.count_results("bench"),
        "wall": wall,
        "cpu": cpu,
        "rss_before_mb": rss_before,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["bare", "off", "defaults"], choices=["bare", "off", "defaults"])
    parser.add_argument("--child", nargs=3, metavar=("N", "URL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            n, url, mode = args.child
            print(json.dumps(one_size(int(n), url, args.concurrency, Path(tmp), mode)))
        return
    import statistics

    from _server import scripted_server

    with scripted_server(args.latency, REPLY) as url:
        for n in args.sizes:
            ideal = n * args.latency / args.concurrency
            walls: dict[str, list[float]] = {m: [] for m in args.modes}
            for _ in range(args.repeat):
                for mode in args.modes:
                    out = subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--child",
                            str(n),
                            url,
                            mode,
                            "--concurrency",
                            str(args.concurrency),
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    res = json.loads(out.stdout.strip().splitlines()[-1])
                    walls[mode].append(res["wall"])
                    print(
                        f"N={n} {mode:8s}: wall {res['wall']:.2f} s (ratio to ideal {ideal:.2f} s:"
                        f" {res['wall'] / ideal:.3f}); CPU {res['cpu']:.2f} s ({1000 * res['cpu'] / n:.3f} ms/sample);"
                        f" stored {res['stored']}; peak RSS {res['peak_rss_mb']:.0f} MB"
                        f" (before the run {res['rss_before_mb']:.0f} MB)"
                    )
            for mode, ws in walls.items():
                ratios = [w / ideal for w in ws]
                print(f"N={n} {mode:8s}: ratio to ideal min {min(ratios):.3f} median {statistics.median(ratios):.3f}")
            if "off" in walls:
                print(f"N={n} off: target <= 1.10: {'met' if min(walls['off']) / ideal <= 1.10 else 'MISSED'}")
            if "off" in walls and "defaults" in walls:
                paired = [d / o for d, o in zip(walls["defaults"], walls["off"], strict=True)]
                print(
                    f"N={n} defaults / off (paired): min {min(paired):.3f} median {statistics.median(paired):.3f}"
                    f" (target <= 1.3: {'met' if min(paired) <= 1.3 else 'MISSED'})"
                )


if __name__ == "__main__":
    main()
