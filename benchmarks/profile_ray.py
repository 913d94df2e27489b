"""Where the time of ``bqas run --ray local`` goes (issue 16): the driver's phases, timed in one process.

Runs :func:`bqas.runner.run.execute` (what ``bqas run`` calls) on N German/Chinese RAG samples from
``_samples.rag_samples`` with wrappers around the driver's steps: the address check, joining/starting
the cluster, the actors' start (engine and store opened, up to their first answer), judging (the
batches, persisted by the actors), and the summary and output files. Also the driver's own CPU seconds,
and, for ``--workers 0``, the same phases of a local run.

Run: nice .venv/bin/python benchmarks/profile_ray.py [--n 300] [--workers 1] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _timed(phases: dict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - started

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1, help="0: a local run")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    from bench_ray import write_scenario

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["BQAS_HOME"] = str(folder / "home")
        if args.workers == 0:
            os.environ["BQAS_OFFLINE_WORKERS"] = "1"
        scenario = write_scenario(folder, args.n)
        if args.workers:
            with scenario.open("a", encoding="utf-8") as fh:
                fh.write(f"ray:\n  address: local\n  workers: {args.workers}\n  batch_size: {args.batch_size}\n")
        from bqas.runner import ray_run, run
        from bqas.settings import get_settings
        from bqas.store.db import open_store

        phases: dict[str, float] = {}
        ray_run.check_cluster = _timed(phases, "address check", ray_run.check_cluster)
        ray_run._connect = _timed(phases, "cluster start", ray_run._connect)
        ray_run._drive = _timed(phases, "judging (after the actors started)", ray_run._drive)
        ray_run.run_on_ray = _timed(phases, "on Ray in all", ray_run.run_on_ray)
        run._run_with_progress = _timed(phases, "judging (local)", run._run_with_progress)
        run._engine_for = _timed(phases, "driver engine", run._engine_for)
        run.summarize = _timed(phases, "summary", run.summarize)
        run.write_outputs = _timed(phases, "output files", run.write_outputs)
        store = open_store(get_settings().resolved_database_url())
        started = time.perf_counter()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        run.execute(
            run.RunRequest(scenario_path=scenario, out_dir=folder / "out", progress=False), get_settings(), store
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        if "on Ray in all" in phases:
            inner = phases.get("cluster start", 0) + phases.get("judging (after the actors started)", 0)
            phases["actors start (engine, store, first answer)"] = phases["on Ray in all"] - inner
        phases["driver CPU s"] = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
        print(
            json.dumps(
                {
                    "n": args.n,
                    "workers": args.workers,
                    "wall": round(wall, 2),
                    **{k: round(v, 2) for k, v in phases.items()},
                },
                indent=1,
                ensure_ascii=False,
            )
        )
        print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
