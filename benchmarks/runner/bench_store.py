"""Store throughput: result rows per second that the SQL store (PostgreSQL) takes in batches.

The rows are real result records: the offline ``rag_hallucination`` judge's records of generated RAG
samples (German, Chinese, English; ``_samples.py``), each stored under a distinct sample key, written with
``Store.add_results`` exactly as ``bqas run`` writes them (one transaction per batch, ON CONFLICT DO
NOTHING, ids returned). Side by side in one process and repeated (``--repeat``; min and median printed):
batch sizes (``--batches``, the runner flushes up to 200 rows at a time) and 1 or more writers in
parallel (``--writers``: separate processes, as separate runners or Ray actors would be).

Run: nice .venv/bin/python benchmarks/runner/bench_store.py --url postgresql+psycopg://… [--rows 20000]
(the URL defaults to BQAS_TEST_POSTGRES_URL; start a throwaway server with scripts/ci-postgres.sh).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_samples


def real_records(n: int) -> list[dict[str, Any]]:
    """Result records of the offline rag_hallucination judge on ``n`` distinct generated RAG samples."""
    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judgment.spec import default_registry

    engine = JudgeEngine(default_registry(), options=EngineOptions(backend="offline"))
    engine.offline.load()

    async def run() -> list[dict[str, Any]]:
        out = []
        for sample in rag_samples(n, seed=16):
            result = await engine.evaluate(
                "rag_hallucination", sample, response_id=sample["id"], language=sample.get("language")
            )
            out.append(result.to_record())
        return out

    return asyncio.run(run())


def write(url: str, records: list[dict[str, Any]], rows: int, batch: int, writer: int) -> float:
    """Insert ``rows`` rows in batches of ``batch`` into a new run; returns the wall seconds."""
    from bqas.store.db import open_store

    store = open_store(url)
    run_id = f"bench-store-{uuid.uuid4().hex[:12]}"
    store.create_run(run_id, "bench_store", {}, total=rows)
    started = time.perf_counter()
    for start in range(0, rows, batch):
        chunk = [(f"w{writer}-s{i}", i, records[i % len(records)]) for i in range(start, min(rows, start + batch))]
        assert store.add_results(run_id, chunk) == len(chunk)
    elapsed = time.perf_counter() - started
    store.engine.dispose()
    return elapsed


def _worker(args: tuple[str, list[dict[str, Any]], int, int, int]) -> float:
    return write(*args)


def measure(url: str, records: list[dict[str, Any]], rows: int, batch: int, writers: int) -> float:
    """Rows per second of ``writers`` processes, each writing ``rows // writers`` rows (all start together)."""
    per = rows // writers
    if writers == 1:
        return per / write(url, records, per, batch, 0)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(writers) as pool:
        started = time.perf_counter()
        pool.map(_worker, [(url, records, per, batch, w) for w in range(writers)])
        wall = time.perf_counter() - started
    return per * writers / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BQAS_TEST_POSTGRES_URL"))
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 50, 200, 1000])
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--samples", type=int, default=90, help="distinct records to cycle through")
    args = parser.parse_args()
    if not args.url:
        parser.error("--url (or BQAS_TEST_POSTGRES_URL) is required")
    import orjson

    records = real_records(args.samples)
    size = statistics.mean(len(orjson.dumps(r)) for r in records)
    print(f"{len(records)} distinct real records, mean {size:.0f} bytes of JSON each")
    figures: dict[tuple[int, int], list[float]] = {}
    for _ in range(args.repeat):  # interleaved, so every setting sees the same machine load
        for writers in args.writers:
            for batch in args.batches:
                rows = args.rows if batch > 1 else min(args.rows, 2_000)  # one row per commit is slow
                figures.setdefault((writers, batch), []).append(measure(args.url, records, rows, batch, writers))
    print("| writers | batch | rows/s min | rows/s median | rows/s max |")
    print("|---|---|---|---|---|")
    for (writers, batch), values in figures.items():
        print(f"| {writers} | {batch} | {min(values):,.0f} | {statistics.median(values):,.0f} | {max(values):,.0f} |")


if __name__ == "__main__":
    main()
