"""Batches to the offline tier's worker processes vs one task per judgment, side by side in one process.

Two worker pools (``bqas.judging.procpool.OfflineProcessPool``, ``BQAS_OFFLINE_WORKERS`` workers each,
the default embedder, the parent's ``BQAS_*`` settings) judge the same distinct samples (``_samples.py``: German voice turns, or German,
Chinese and English RAG answers with 3-5 passages) with ``--concurrency`` judgments in flight, as a
run does; one pool sends the judgments that arrive in the same turn of the event loop in batches of up to
``MAX_BATCH`` (the default), the other one task per judgment (``max_batch=1``, the code before). Rounds
alternate which pool goes first; fresh samples per round, the same for both pools of a round (the
workers' embedding caches are per pool, so neither warms the other). Prints per pool: wall seconds, the
CPU seconds of this process (the event loop, the executor's threads: what batching should save) and of
the workers (from /proc), min and median over ``--repeat`` rounds, and the paired ratios batched / one.

Run: nice .venv/bin/python benchmarks/bench_pool_batches.py [--kind voice rag] [--n 2000] [--repeat 3]
     [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import rag_samples, voice_samples

_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_of(pids: list[int]) -> float:
    """User + system CPU seconds of the live processes ``pids`` (Linux /proc)."""
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / _TICKS
    return total


def _samples(kind: str, n: int, seed: int) -> list[tuple[str, dict[str, Any], str]]:
    """(judge, values, language) per sample, as the engine hands them to the offline tier."""
    if kind == "voice":
        return [("voice", dict(v), "de") for v in voice_samples(n, seed=seed)]
    return [("rag_hallucination", dict(r), str(r["language"])) for r in rag_samples(n, seed=seed)]


async def _judge_all(pool: Any, samples: list[tuple[str, dict[str, Any], str]], concurrency: int) -> None:
    from bqas.judging.engine import check_inputs
    from bqas.judging.spec import default_registry

    registry = default_registry()
    gate = asyncio.Semaphore(concurrency)

    async def one(judge: str, sample: dict[str, Any], language: str) -> None:
        async with gate:
            spec = registry.get(judge)
            await pool.tier(spec, check_inputs(spec, sample), language)

    await asyncio.gather(*(one(*s) for s in samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", nargs="+", choices=["voice", "rag"], default=["voice", "rag"])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()

    from bqas.judging.procpool import MAX_BATCH, OfflineProcessPool
    from bqas.judging.workers import offline_workers

    workers = offline_workers()
    pools = {
        f"batches of <= {MAX_BATCH}": OfflineProcessPool(workers, max_batch=MAX_BATCH),
        "one task per judgment": OfflineProcessPool(workers, max_batch=1),
    }
    names = list(pools)
    print(f"{workers} workers per pool; load average before: {os.getloadavg()}", flush=True)
    try:
        for pool in pools.values():
            asyncio.run(pool.wait_ready())
        for kind in args.kind:
            got: dict[str, dict[str, list[float]]] = {n: {"wall": [], "own": [], "workers": []} for n in names}
            for rnd in range(args.repeat):
                samples = _samples(kind, args.n, seed=500 + rnd)
                for name in names if rnd % 2 == 0 else reversed(names):
                    pool = pools[name]
                    own0, workers0, t0 = time.process_time(), _cpu_of(pool.pids()), time.perf_counter()
                    asyncio.run(_judge_all(pool, samples, args.concurrency))
                    wall = time.perf_counter() - t0
                    own, work = time.process_time() - own0, _cpu_of(pool.pids()) - workers0
                    for key, value in (("wall", wall), ("own", own), ("workers", work)):
                        got[name][key].append(value)
                    print(
                        f"{kind} round {rnd + 1}, {name}: {wall:.2f} s wall, this process {own:.2f} s CPU, workers"
                        f" {work:.2f} s CPU ({pool.tasks_sent} tasks for {pool.judgments_sent} judgments so far)",
                        flush=True,
                    )
            for name in names:
                g = got[name]
                print(
                    f"{kind}, {name}: wall min {min(g['wall']):.2f} median {statistics.median(g['wall']):.2f} s;"
                    f" this process {min(g['own']):.2f} / {statistics.median(g['own']):.2f} s CPU;"
                    f" workers {min(g['workers']):.2f} / {statistics.median(g['workers']):.2f} s CPU"
                )
            a, b = got[names[0]], got[names[1]]
            for key in ("wall", "own", "workers"):
                r = [x / y for x, y in zip(a[key], b[key], strict=True)]
                print(f"{kind}, batched / one ({key}, paired): min {min(r):.2f} median {statistics.median(r):.2f}")
    finally:
        for pool in pools.values():
            pool.shutdown(wait=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
