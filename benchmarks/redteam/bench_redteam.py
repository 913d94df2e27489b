"""`bqas redteam` throughput: 1,000 attacks (10 plugins × 100, every strategy, de/en/zh) against the demo
assistant's tenant door answering after 50 ms, at concurrency 16, wall time against the ideal.

The ideal is what a perfect client needs: every request the attacks make (a crescendo attack makes three,
in order) takes 50 ms and 16 run at any time, so ideal = requests × 0.05 s / 16. The target runs in its own
process (`bqas demo-assistant --tenants --latency-ms 50`), as users run it. Also reported: attacks generated
per minute (offline, no target), grader calls per attack (deterministic graders: one local call, no LLM),
the latency the client saw and the CPU time of the BQAS process (generation, sending, grading, store, reports).

    python benchmarks/redteam/bench_redteam.py [--attacks-per-plugin 100] [--repeats 3]

promptfoo's red team on the same target, for the plugins both have: bench_promptfoo.py.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int) -> None:
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the demo assistant did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attacks-per-plugin", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    from bqas.redteam.config import load_redteam_scenario
    from bqas.redteam.run import plan, run_redteam
    from bqas.store.db import open_store

    root = Path(__file__).resolve().parents[2]
    port = _free_port()
    scenario = load_redteam_scenario(root / "scenarios" / "redteam" / "demo.yaml")
    scenario.target.url = f"http://127.0.0.1:{port}/tenant/chat"  # type: ignore[union-attr]
    scenario.target.concurrency = args.concurrency
    scenario.redteam.count = args.attacks_per_plugin

    started = time.perf_counter()
    made = plan(scenario)
    generation = time.perf_counter() - started
    requests = sum(len(a.turns) for a in made.attacks)
    ideal = requests * args.latency_ms / 1000 / args.concurrency
    print(f"{len(made.attacks)} attacks, {requests} requests; generated in {generation:.2f} s "
          f"({len(made.attacks) / generation * 60:,.0f} attacks/min); ideal wall {ideal:.2f} s")  # fmt: skip

    command = [sys.executable, "-m", "bqas.cli.main", "demo-assistant", "--tenants", "--port", str(port),
               "--latency-ms", str(args.latency_ms)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    walls = []
    try:
        _wait(port)
        with tempfile.TemporaryDirectory() as home:
            os.environ["BQAS_HOME"] = home
            store = open_store(f"sqlite:///{home}/bench.sqlite")
            for i in range(args.repeats):
                t0, cpu0 = time.perf_counter(), time.process_time()
                outcome = run_redteam(store, scenario, Path(home) / f"out{i}")
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                walls.append(wall)
                graded = outcome.summary.total.graded + outcome.summary.total.unscored
                latencies = [t["latency_ms"] for r in store.iter_records(outcome.run_id) for t in r["target"]
                             if t.get("latency_ms") is not None]  # fmt: skip
                print(f"run {i + 1}: {wall:.2f} s ({wall / ideal:.2f}× ideal), {outcome.summary.total.attacks} attacks, "
                      f"target errors {outcome.summary.total.target_errors}, grader calls per attack "
                      f"{graded / outcome.summary.total.attacks:.2f}, latency seen by the client mean "
                      f"{statistics.mean(latencies):.1f} ms median {statistics.median(latencies):.1f} ms, "
                      f"BQAS CPU {cpu:.2f} s ({cpu / outcome.summary.total.attacks * 1000:.2f} ms per attack)")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"wall min {min(walls):.2f} s ({min(walls) / ideal:.2f}× ideal), median {statistics.median(walls):.2f} s "
          f"({statistics.median(walls) / ideal:.2f}× ideal)")  # fmt: skip


if __name__ == "__main__":
    main()
