"""Where worker processes start to pay for a ``bqas run``: threads vs processes at growing sample counts.

``BQAS_OFFLINE_POOL=auto`` picks worker processes for a run of at least ``BQAS_OFFLINE_PROCESSES_FROM``
samples (docs/benchmarks.md); this script measures where that cut-over belongs. For each ``--sizes`` N:
``bqas run`` with its defaults (LLM cache and review loop on, report files written, a new process timed
from spawn to exit) over N distinct generated RAG samples (``_samples.py``: German, Chinese, English;
3-5 passages, ~4k characters), once with ``BQAS_OFFLINE_POOL=threads`` and once with ``processes``,
alternating who goes first, ``--repeat`` times, for each ``--backends`` entry (``auto``: both tiers
against the scripted server at ``--latency`` x ``--concurrency``). Worker processes cost a fixed start
(a fork server, each worker loading the model) and save per sample what the GIL costs threads; the
printed ratio processes / threads (median of the paired runs) says which one wins at each N.

Run: nice .venv/bin/python benchmarks/runner/bench_pool_cutover.py [--sizes 1 50 100 200 400] [--repeat 3]
     [--backends offline auto]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_samples
from _server import scripted_server
from bench_auto import REPLY, bqas_run, write_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 50, 100, 200, 400])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", nargs="+", choices=["offline", "auto"], default=["offline", "auto"])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, scripted_server(args.latency, REPLY) as url:
        folder = Path(tmp)
        for n in args.sizes:
            for backend in args.backends:
                walls: dict[str, list[float]] = {"threads": [], "processes": []}
                ratios: list[float] = []
                for rep in range(args.repeat):
                    # The same samples for both pools of a pair, fresh ones for each pair; every run has
                    # its own BQAS home (bqas_run), so no LLM or embedding cache carries over.
                    scenario = write_scenario(folder, rag_samples(n, seed=1000 * n + rep), f"n{n}{backend}{rep}")
                    order = ["threads", "processes"] if rep % 2 == 0 else ["processes", "threads"]
                    got: dict[str, float] = {}
                    for pool in order:
                        tag = f"{n}-{backend}-{rep}-{pool}"
                        got[pool], _ = bqas_run(folder, scenario, backend, url, args.concurrency, tag, pool)
                        walls[pool].append(got[pool])
                    ratios.append(got["processes"] / got["threads"])
                t, p = walls["threads"], walls["processes"]
                print(
                    f"N={n} --backend {backend}: threads {min(t):.2f} / {statistics.median(t):.2f} s,"
                    f" processes {min(p):.2f} / {statistics.median(p):.2f} s (wall min / median);"
                    f" processes / threads paired: min {min(ratios):.2f} median {statistics.median(ratios):.2f}",
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
