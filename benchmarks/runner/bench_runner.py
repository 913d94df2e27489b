"""Scenario-runner benchmark (issue: scenario runner).

N samples through the runner (stream in, judge with the LLM backend, store each result) against the
scripted server with fixed latency. Target: wall time within 1.10× of the ideal N × latency / concurrency,
and peak memory that does not grow with N (results are streamed to the store, never all held).

Each size runs in a fresh process so that its peak RSS is its own. Side by side for each size, repeated
(``--repeat``; min and median printed):

* ``bare``: the yardstick - a bare aiohttp client sending the same N requests at the same concurrency
  (no BQAS work at all): what the transport and this machine allow;
* ``off``: the runner with the LLM cache and the review loop off (the published workload);
* ``defaults``: the runner as ``bqas run`` has it (LLM cache on, review loop on as the local tenant);
* ``cli-off`` and ``cli-defaults`` (ask for them with ``--modes``): the ``bqas run`` command itself, timed
  from spawn to exit with results.jsonl, junit.xml and report.html written, in a new BQAS home (its store
  and LLM cache start empty); ``cli-off`` adds ``--no-cache`` and ``BQAS_REVIEW=false``.

Targets: ``off`` <= 1.10 x ideal; ``defaults`` <= 1.3 x ``off``.

``--src LABEL=DIR`` (repeatable) runs the same benchmark against the ``src`` folder of another checkout
as well (``git worktree add /tmp/before <commit>``; DIR first on ``PYTHONPATH`` of the child), side by
side in each repetition, for before/after figures measured under the same load.

``--profile DIR`` records each child with py-spy (``py-spy`` on ``PATH`` or ``$PY_SPY``; raw stacks,
one file per run) to see where the runner's CPU goes; ``--gil`` samples only the thread holding the GIL
(what the event loop waits for), and ``benchmarks/runner/spy_shares.py FILE`` sums the shares of such a file.

Run: .venv/bin/python benchmarks/runner/bench_runner.py [--sizes 2000 10000] [--latency 0.05] [--concurrency 128]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPLY = json.dumps(
    {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "Passt."}
)


def bare_client(n: int, url: str, concurrency: int) -> dict[str, float]:
    """The yardstick: N chat requests with a bare aiohttp client, ``concurrency`` at a time."""
    import asyncio

    import aiohttp

    body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "x"}]}).encode()

    async def run() -> float:
        sem = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one() -> None:
                async with sem, http.post(f"{url}/chat/completions", data=body) as r:
                    await r.read()

            started = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(n)))
            return time.perf_counter() - started

    cpu0 = time.process_time()
    wall = asyncio.run(run())
    return {"n": n, "wall": wall, "cpu": time.process_time() - cpu0, "stored": 0, "peak_rss_mb": 0, "rss_before_mb": 0}


def cli_run(n: int, url: str, concurrency: int, folder: Path, scenario: Path, *, defaults: bool) -> dict[str, float]:
    """``bqas run`` on the scenario as a user starts it (spawn to exit, report files included)."""
    bqas = Path(sys.executable).with_name("bqas")
    env = {
        **os.environ,
        "BQAS_HOME": str(folder / "home"),
        "BQAS_LLM_BASE_URL": url,
        "BQAS_JUDGE_MODEL": "bench",
        "BQAS_LLM_CONCURRENCY": str(concurrency),
    }
    command = [str(bqas), "run", str(scenario), "--out", str(folder / "out"), "--concurrency", str(concurrency)]
    command.append("--no-progress")
    if not defaults:
        command.append("--no-cache")
        env["BQAS_REVIEW"] = "false"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: a threshold missed, still a finished run
        raise RuntimeError(f"bqas run failed ({done.returncode}): {done.stderr[-2000:]}")
    lines = (folder / "out" / "results.jsonl").read_text(encoding="utf-8").count("\n")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = after.ru_maxrss / 1024
    return {"n": n, "judged": lines, "stored": lines, "wall": wall, "cpu": cpu, "rss_before_mb": 0, "peak_rss_mb": peak}


def one_size(n: int, url: str, concurrency: int, folder: Path, mode: str = "off") -> dict[str, float]:
    """Run inside a child process: build the scenario, time execute_run, report peak RSS."""
    from bqas.judging.engine import EngineOptions, JudgeEngine
    from bqas.judgment.spec import default_registry
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
    if mode.startswith("cli-"):
        return cli_run(n, url, concurrency, folder, scenario_path, defaults=mode == "cli-defaults")
    scenario = load_scenario(scenario_path)
    store = open_store(f"sqlite:///{folder / 'bench.sqlite'}")
    store.create_run("bench", "bench", {}, total=n)
    if mode == "bare":
        return bare_client(n, url, concurrency)
    defaults = mode == "defaults"
    cache = folder / "llm-cache.sqlite" if defaults else None
    llm = LLMClient(LLMConfig(base_url=url, model="bench", concurrency=concurrency, cache_path=cache))
    engine = JudgeEngine(default_registry(), llm=llm, options=EngineOptions(backend="llm"))
    if hasattr(engine, "start_loading"):  # as `bqas run` does before its run starts (not in older trees)
        engine.start_loading(samples=n)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    loop = new_event_loop()
    started = time.perf_counter()
    cpu0 = time.process_time()
    review = "@local" if defaults else None  # `bqas run` files its review items under the local tenant
    judged = loop.run_until_complete(
        execute_run(engine, scenario, store, "bench", concurrency=concurrency, review_tenant=review)
    )
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
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["bare", "off", "defaults"],
        choices=["bare", "off", "defaults", "cli-off", "cli-defaults"],
    )
    parser.add_argument("--child", nargs=3, metavar=("N", "URL", "MODE"), help=argparse.SUPPRESS)
    parser.add_argument("--src", action="append", default=[], metavar="LABEL=DIR", help="another checkout's src")
    parser.add_argument("--profile", type=Path, help="folder for py-spy recordings of each child")
    parser.add_argument("--gil", action="store_true", help="with --profile: sample the GIL holder only (500 Hz)")
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as tmp:
            n, url, mode = args.child
            print(json.dumps(one_size(int(n), url, args.concurrency, Path(tmp), mode)))
        return
    import statistics

    from _server import scripted_server

    sources: list[tuple[str, str | None]] = [("this", None)]
    for spec in args.src:
        label, _, folder = spec.partition("=")
        sources.append((label, str(Path(folder).resolve())))
    spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    if args.profile is not None:
        if spy is None:
            parser.error("--profile: py-spy not found (set PY_SPY or put it on PATH)")
        args.profile.mkdir(parents=True, exist_ok=True)
    with scripted_server(args.latency, REPLY) as url:
        for n in args.sizes:
            ideal = n * args.latency / args.concurrency
            runs = [
                (label, src, mode) for label, src in sources for mode in args.modes if src is None or mode != "bare"
            ]
            walls: dict[tuple[str, str], list[float]] = {(label, mode): [] for label, _, mode in runs}
            cpus: dict[tuple[str, str], list[float]] = {(label, mode): [] for label, _, mode in runs}
            for rep in range(args.repeat):
                for label, src, mode in runs:
                    env = dict(os.environ)
                    if src is not None:
                        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
                    child = [sys.executable, __file__, "--child", str(n), url, mode]
                    child += ["--concurrency", str(args.concurrency)]
                    if args.profile is not None:
                        out_file = args.profile / f"{label}-{mode}-{n}-{rep}.txt"
                        rate = ["-r", "500", "--gil"] if args.gil else ["-r", "200"]
                        child = [str(spy), "record", "-f", "raw", *rate, "-o", str(out_file), "--", *child]
                    out = subprocess.run(child, capture_output=True, text=True, check=True, env=env)
                    lines = [line for line in out.stdout.strip().splitlines() if line.startswith("{")]
                    res = json.loads(lines[-1])
                    walls[(label, mode)].append(res["wall"])
                    cpus[(label, mode)].append(res["cpu"])
                    print(
                        f"N={n} {label:8s} {mode:8s}: wall {res['wall']:.2f} s (ratio to ideal {ideal:.2f} s:"
                        f" {res['wall'] / ideal:.3f}); CPU {res['cpu']:.2f} s ({1000 * res['cpu'] / n:.3f} ms/sample);"
                        f" stored {res['stored']}; peak RSS {res['peak_rss_mb']:.0f} MB"
                        f" (before the run {res['rss_before_mb']:.0f} MB)",
                        flush=True,
                    )
            for (label, mode), ws in walls.items():
                ratios = [w / ideal for w in ws]
                per = [1000 * c / n for c in cpus[(label, mode)]]
                print(
                    f"N={n} {label:8s} {mode:8s}: ratio to ideal min {min(ratios):.3f} median"
                    f" {statistics.median(ratios):.3f}; CPU per sample min {min(per):.3f} median"
                    f" {statistics.median(per):.3f} ms"
                )
            bare = walls.get(("this", "bare"))
            for label, _ in sources:
                off = walls.get((label, "off"))
                if off:
                    print(f"N={n} {label} off: target <= 1.10: {'met' if min(off) / ideal <= 1.10 else 'MISSED'}")
                    if bare:
                        vs_bare = [o / b for o, b in zip(off, bare, strict=True)]
                        print(
                            f"N={n} {label} off / bare client (paired): min {min(vs_bare):.3f}"
                            f" median {statistics.median(vs_bare):.3f}"
                        )
                for prefix in ("", "cli-"):
                    off, defaults = walls.get((label, prefix + "off")), walls.get((label, prefix + "defaults"))
                    if off and defaults:
                        paired = [d / o for d, o in zip(defaults, off, strict=True)]
                        verdict = "met" if statistics.median(paired) <= 1.3 else "MISSED"
                        print(
                            f"N={n} {label} {prefix}defaults / {prefix}off (paired): min {min(paired):.3f} median"
                            f" {statistics.median(paired):.3f} (target <= 1.3, judged on the median: {verdict})"
                        )


if __name__ == "__main__":
    main()
