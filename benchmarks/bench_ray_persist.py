"""What a judge actor's write costs (issue 16): ``persist_batch`` of real result records in batches of 32
(the default ``ray.batch_size``, what an actor writes after each batch), on SQLite and PostgreSQL.

The records come from a run's ``results.jsonl`` (e.g. one of ``bench_ray.py`` or any ``bqas run`` of the
offline RAG judge); each is written 10 times under new keys. Prints wall and CPU milliseconds per record,
to set beside the actor's ~34 ms of judging per RAG sample.

Run: nice .venv/bin/python benchmarks/bench_ray_persist.py RESULTS.jsonl [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--postgres", default=os.environ.get("BQAS_TEST_POSTGRES_URL"))
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    from bqas.runner.execute import persist_batch
    from bqas.store.db import open_store

    records = [json.loads(line) for line in args.results.open(encoding="utf-8")]
    urls = [f"sqlite:///{tempfile.mkdtemp()}/persist.sqlite", *([args.postgres] if args.postgres else [])]
    for url in urls:
        store = open_store(url)
        run_id = f"r-persist-{os.urandom(3).hex()}"
        store.create_run(run_id, "persist", {}, total=10 * len(records))
        wall, cpu, seq = time.perf_counter(), time.process_time(), 0
        for rep in range(10):
            for i in range(0, len(records), args.batch):
                batch = [(f"{rep}-{i + j}", seq + j, r) for j, r in enumerate(records[i : i + args.batch])]
                seq += len(batch)
                persist_batch(store, run_id, batch)
        per = 1000 / seq
        print(
            json.dumps(
                {
                    "store": url.split(":")[0],
                    "records": seq,
                    "wall_ms_per_record": round((time.perf_counter() - wall) * per, 3),
                    "cpu_ms_per_record": round((time.process_time() - cpu) * per, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
