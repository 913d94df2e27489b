"""How long BQAS's own transactions stay open on PostgreSQL while healthy, against the idle-in-transaction
bound (``BQAS_DB_IDLE_IN_TRANSACTION_SECONDS``, 60 s by default) that ends a frozen writer's transaction.

``bqas run`` as users start it (offline voice judge, the review loop on: results, review memory, queue and
categories written batch after batch) on generated German voice turns, ``--parallel`` runs at once into one
fresh PostgreSQL database, while a separate connection samples ``pg_stat_activity`` every ``--poll-ms``:
for every session of that database other than its own, the age of its open transaction (``now() -
xact_start``) and, for a session ``idle in transaction``, how long it has been idle (``now() -
state_change``). Prints per repeat the longest of each, and how often a session was seen idle in a
transaction. Sampling misses what is shorter than a poll; the longest open transaction bounds every idle
gap inside it.

Run: nice .venv/bin/python benchmarks/runner/bench_idle_in_transaction.py [--url postgresql+psycopg://…]
     [--samples 3000] [--parallel 2] [--repeat 2] [--poll-ms 5]
(the URL defaults to BQAS_TEST_POSTGRES_URL; start a throwaway server with scripts/ci-postgres.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import voice_samples

SAMPLE = """
SELECT coalesce(max(extract(epoch FROM now() - xact_start)), 0),
       coalesce(max(extract(epoch FROM now() - state_change)) FILTER (WHERE state = 'idle in transaction'), 0),
       count(*) FILTER (WHERE state = 'idle in transaction')
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
"""


class Sampler(threading.Thread):
    """Polls ``pg_stat_activity`` of one database until stopped; keeps the longest figures seen."""

    def __init__(self, url: str, poll_s: float):
        super().__init__(daemon=True)
        from sqlalchemy import create_engine

        self.engine = create_engine(url, isolation_level="AUTOCOMMIT")
        self.poll_s = poll_s
        self.stop = threading.Event()
        self.longest_transaction = 0.0
        self.longest_idle = 0.0
        self.idle_seen = 0
        self.polls = 0

    def run(self) -> None:
        from sqlalchemy import text

        with self.engine.connect() as conn:
            query = text(SAMPLE)
            while not self.stop.is_set():
                open_for, idle_for, idle = conn.execute(query).one()
                self.longest_transaction = max(self.longest_transaction, float(open_for))
                self.longest_idle = max(self.longest_idle, float(idle_for))
                self.idle_seen += int(idle)
                self.polls += 1
                time.sleep(self.poll_s)
        self.engine.dispose()


def one_repeat(admin_url: str, folder: Path, samples: int, parallel: int, poll_s: float) -> dict[str, Any]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"bqas_idle_bench_{secrets.token_hex(4)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        bqas = Path(sys.executable).with_name("bqas")
        env = {**os.environ, "BQAS_DATABASE_URL": url, "BQAS_HOME": str(folder / "home")}
        # Migrate first, so the sampled window holds the runs' own work only.
        subprocess.run([str(bqas), "runs"], env=env, capture_output=True, check=True)
        sampler = Sampler(url, poll_s)
        sampler.start()
        started = time.perf_counter()
        runs = [
            subprocess.Popen(
                [str(bqas), "run", str(folder / "scenario.yaml"), "--out", str(folder / f"out{i}"), "--no-progress"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(parallel)
        ]
        codes = [(run.wait(), run.stderr.read() if run.stderr else "") for run in runs]
        wall = time.perf_counter() - started
        sampler.stop.set()
        sampler.join()
        for code, err in codes:
            if code not in (0, 1):  # 1: a gate missed, still a finished run
                raise RuntimeError(f"bqas run failed ({code}): {err[-2000:]}")
        with create_engine(url).connect() as conn:
            stored = int(conn.execute(text("SELECT count(*) FROM results")).scalar_one())
        return {
            "wall_s": round(wall, 1),
            "results": stored,
            "polls": sampler.polls,
            "longest_transaction_s": round(sampler.longest_transaction, 3),
            "longest_idle_in_transaction_s": round(sampler.longest_idle, 3),
            "idle_in_transaction_seen": sampler.idle_seen,
        }
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("BQAS_TEST_POSTGRES_URL"))
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--poll-ms", type=float, default=5.0)
    args = parser.parse_args()
    if not args.url:
        parser.error("give --url or set BQAS_TEST_POSTGRES_URL (scripts/ci-postgres.sh starts a server)")
    print(f"load average before: {os.getloadavg()}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "turns.jsonl"
        data.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in voice_samples(args.samples)))
        (folder / "scenario.yaml").write_text(
            f"name: idle-bench\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: {data.name}\n"
            "thresholds: {max_unscored: 1.0}\n",
            encoding="utf-8",
        )
        for n in range(args.repeat):
            row = one_repeat(args.url, folder, args.samples, args.parallel, args.poll_ms / 1000)
            rows.append(row)
            print(f"repeat {n + 1}: {json.dumps(row)}", flush=True)
    for key in ("longest_transaction_s", "longest_idle_in_transaction_s"):
        values = [r[key] for r in rows]
        print(f"{key}: min {min(values)}, median {statistics.median(values)}, max {max(values)}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
