"""``bqas run --backend auto`` over distinct RAG samples: does the offline tier keep out of the LLM tier's way?

What users run: the ``bqas`` command line with its defaults (LLM cache and review loop on, report files
written), one process per run, timed from start to exit. N generated RAG samples (``_samples.py``: German,
Chinese, English; 3-5 passages, ~4k characters each) against the scripted server (its own process) with
``--latency`` seconds per call at ``--concurrency``. Side by side in each repetition:

* ``offline``: ``bqas run --backend offline`` on the same samples with worker threads
  (``BQAS_OFFLINE_POOL=threads``: one process, so user + sys of the process is all of the offline
  tier's CPU work); with ``--pools`` including the default (``auto``) also the default offline run;
* ``auto``: ``bqas run --backend auto`` (both tiers) on the same samples, once per ``--pools`` entry
  (``BQAS_OFFLINE_POOL``: ``auto`` is the default, worker processes for a run of at least
  ``BQAS_OFFLINE_PROCESSES_FROM`` (200) judgments, threads below; ``threads`` and ``processes`` force
  one). The CPU printed for a run with worker processes misses what the workers
  used (they are not the bqas process's waited-for children).

``--before SRC`` runs every ``auto`` run a second time with another source tree (``PYTHONPATH=SRC``, the
same venv, its own BQAS home; e.g. ``git worktree add /tmp/before <commit>``), alternating which tree goes
first, and prints the after / before wall ratio of each pair.

Target: auto wall <= 1.25 x max(ideal LLM time, offline CPU time / cores), where ideal LLM time
= ceil(N / concurrency) x latency. Start-up (imports, model load) is inside the wall times; the ratio is
also printed without it (wall minus the start-up of a 1-sample run).

Run: nice .venv/bin/python benchmarks/runner/bench_auto.py [--n 1000] [--latency 0.2] [--concurrency 64] [--repeat 3]
     [--pools auto processes] [--before /tmp/before/src]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_samples
from _server import scripted_server

BQAS = str(Path(sys.executable).with_name("bqas"))
REPLY = json.dumps(
    {
        "grounding_score": 90,
        "invention_detection": "pass",
        "source_attribution": 4,
        "hallucinated_claims": [],
        "reasoning": "Die Aussagen stehen in den Passagen.",
    }
)


def write_scenario(folder: Path, samples: list[dict[str, object]], name: str) -> Path:
    data = folder / f"{name}.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for s in samples:
            fh.write(json.dumps(s, ensure_ascii=False) + "\n")
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\njudges: [rag_hallucination]\nlanguage: de\ndataset: {data.name}\n", encoding="utf-8"
    )
    return path


def bqas_run(
    folder: Path,
    scenario: Path,
    backend: str,
    url: str,
    concurrency: int,
    tag: str,
    pool: str = "auto",
    src: Path | None = None,
) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one ``bqas run`` (of the source tree ``src`` if given)."""
    env = {**os.environ, "BQAS_HOME": str(folder / f"home-{tag}"), "BQAS_OFFLINE_POOL": pool}
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    cmd = [BQAS, "run", str(scenario), "--backend", backend, "--concurrency", str(concurrency), "--no-progress"]
    cmd += ["--out", str(folder / f"out-{tag}"), "--base-url", url, "--model", "bench"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=folder, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: thresholds missed (the scenario has none; kept for safety)
        raise RuntimeError(f"bqas run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pools", nargs="+", choices=["auto", "threads", "processes"], default=["auto", "processes"])
    parser.add_argument("--before", type=Path, help="a second source tree (its src/) run side by side")
    args = parser.parse_args()
    vs_before: dict[str, list[float]] = {p: [] for p in args.pools}
    cores = os.cpu_count() or 1
    ideal = math.ceil(args.n / args.concurrency) * args.latency
    ratios: dict[str, list[float]] = {p: [] for p in args.pools}
    ratios_warm: dict[str, list[float]] = {p: [] for p in args.pools}
    with tempfile.TemporaryDirectory() as tmp, scripted_server(args.latency, REPLY) as url:
        folder = Path(tmp)
        one = write_scenario(folder, rag_samples(1, seed=99), "one")
        for rep in range(args.repeat):
            samples = rag_samples(args.n, seed=100 + rep)  # fresh texts each repetition: no cache carries over
            scenario = write_scenario(folder, samples, f"rag{rep}")
            start_wall, _ = bqas_run(folder, one, "offline", url, args.concurrency, f"one{rep}")
            off_wall, off_cpu = bqas_run(folder, scenario, "offline", url, args.concurrency, f"off{rep}", "threads")
            bound = max(ideal, off_cpu / cores)
            line = (
                f"rep {rep + 1}: 1-sample start-up {start_wall:.2f} s; offline (threads) {off_wall:.2f} s wall /"
                f" {off_cpu:.2f} s CPU; ideal LLM {ideal:.2f} s, offline CPU / {cores} cores {off_cpu / cores:.2f} s"
            )
            if "auto" in args.pools:
                wall, _ = bqas_run(folder, scenario, "offline", url, args.concurrency, f"offd{rep}", "auto")
                line += f"; offline (default pool) {wall:.2f} s wall"
            print(line, flush=True)
            for pool in args.pools:
                before_wall = before_cpu = None
                if args.before is not None and rep % 2 == 1:  # alternate which tree goes first
                    before_wall, before_cpu = bqas_run(
                        folder, scenario, "auto", url, args.concurrency, f"autob{rep}{pool}", pool, args.before
                    )
                auto_wall, auto_cpu = bqas_run(
                    folder, scenario, "auto", url, args.concurrency, f"auto{rep}{pool}", pool
                )
                if args.before is not None and before_wall is None:
                    before_wall, before_cpu = bqas_run(
                        folder, scenario, "auto", url, args.concurrency, f"autob{rep}{pool}", pool, args.before
                    )
                if before_wall is not None:
                    vs_before[pool].append(auto_wall / before_wall)
                    print(
                        f"  before tree, BQAS_OFFLINE_POOL={pool}: {before_wall:.2f} s wall / {before_cpu:.2f} s CPU"
                        " of the bqas process",
                        flush=True,
                    )
                ratios[pool].append(auto_wall / bound)
                ratios_warm[pool].append((auto_wall - start_wall) / bound)
                print(
                    f"  auto, BQAS_OFFLINE_POOL={pool}: {auto_wall:.2f} s wall / {auto_cpu:.2f} s CPU of the bqas"
                    f" process; ratio {ratios[pool][-1]:.2f} ({ratios_warm[pool][-1]:.2f} without start-up)",
                    flush=True,
                )
    for pool in args.pools:
        r, w = ratios[pool], ratios_warm[pool]
        print(
            f"BQAS_OFFLINE_POOL={pool}: auto / max(ideal, offline CPU / cores): min {min(r):.2f} median"
            f" {statistics.median(r):.2f} (without start-up: min {min(w):.2f} median {statistics.median(w):.2f});"
            f" target <= 1.25: {'met' if min(r) <= 1.25 else 'MISSED'}"
        )
        if vs_before[pool]:
            v = vs_before[pool]
            print(f"  after / before (paired wall): min {min(v):.2f} median {statistics.median(v):.2f}")
    print(f"load average after the runs: {os.getloadavg()}")


if __name__ == "__main__":
    main()
