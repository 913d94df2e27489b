"""Scenario-runner benchmark (issue: scenario runner).

N samples through the runner (stream in, judge with the LLM backend, store each result) against the
scripted server with fixed latency. Target: wall time within 1.10× of the ideal N × latency / concurrency,
and peak memory that does not grow with N (results are streamed to the store, never all held).

Each size runs in a fresh process so that its peak RSS is its own.

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


def one_size(n: int, url: str, concurrency: int, folder: Path) -> dict[str, float]:
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
    llm = LLMClient(LLMConfig(base_url=url, model="bench", concurrency=concurrency))
    engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    loop = new_event_loop()
    started = time.perf_counter()
    cpu0 = time.process_time()
    judged = loop.run_until_complete(execute_run(engine, scenario, store, "bench", concurrency=concurrency))
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
    parser.add_argument("--child", nargs=2, metavar=("N", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(one_size(int(args.child[0]), args.child[1], args.concurrency, Path(tmp))))
        return
    from _server import scripted_server

    with scripted_server(args.latency, REPLY) as url:
        for n in args.sizes:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n), url, "--concurrency", str(args.concurrency)],
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(out.stdout.strip().splitlines()[-1])
            ideal = n * args.latency / args.concurrency
            ratio = res["wall"] / ideal
            print(
                f"N={n}: wall {res['wall']:.2f} s, ideal {ideal:.2f} s, ratio {ratio:.3f} "
                f"(target <= 1.10: {'met' if ratio <= 1.10 else 'MISSED'}); runner CPU {res['cpu']:.2f} s "
                f"({1000 * res['cpu'] / n:.3f} ms/sample); stored {res['stored']}; "
                f"peak RSS {res['peak_rss_mb']:.0f} MB (before the run {res['rss_before_mb']:.0f} MB)"
            )


if __name__ == "__main__":
    main()
