"""What the cyclic garbage collector costs the runner (bqas.runner.gc_tuning).

The workload of bench_runner.py's ``off`` mode (10,000 voice samples, LLM backend, scripted server 50 ms,
concurrency 128), in this process, with ``gc.callbacks`` summing the CPU time (``time.thread_time``) of
every collection per generation, once with the young-generation threshold the runner sets for a run and
once with CPython's default (700: the runner's setting switched off), alternated in fresh processes.
Collections during the imports and set-up count too (about 230 of them, a few milliseconds).

Run: nice .venv/bin/python benchmarks/runner/bench_gc.py [--n 10000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def child(n: int, threshold: int) -> dict[str, float]:
    import bench_runner
    from _server import scripted_server

    import bqas.runner.gc_tuning as tuning

    tuning.RUN_GEN0_THRESHOLD = threshold  # 700: not above the default, so the runner leaves it alone
    spent = {0: 0.0, 1: 0.0, 2: 0.0}
    counts = {0: 0, 1: 0, 2: 0}
    started = [0.0]

    def observe(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
        else:
            spent[info["generation"]] += time.thread_time() - started[0]
            counts[info["generation"]] += 1

    gc.callbacks.append(observe)
    with scripted_server(0.05, bench_runner.REPLY) as url, tempfile.TemporaryDirectory() as tmp:
        res = bench_runner.one_size(n, url, 128, Path(tmp), "off")
    return {
        "threshold": threshold,
        "cpu_ms_per_sample": 1000 * res["cpu"] / n,
        "gc_s": sum(spent.values()),
        "gc_ms_per_sample": 1000 * sum(spent.values()) / n,
        "collections": sum(counts.values()),
        "full": counts[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.n, args.child)))
        return
    from bqas.runner.gc_tuning import RUN_GEN0_THRESHOLD

    for _ in range(args.repeat):
        for threshold in (700, RUN_GEN0_THRESHOLD):
            command = [sys.executable, __file__, "--n", str(args.n), "--child", str(threshold)]
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"gen0 threshold {res['threshold']:6d}: GC {res['gc_s']:.3f} s CPU ({res['gc_ms_per_sample']:.3f} ms"
                f" per sample) in {res['collections']} collections ({res['full']} full); run CPU"
                f" {res['cpu_ms_per_sample']:.3f} ms per sample",
                flush=True,
            )


if __name__ == "__main__":
    main()
