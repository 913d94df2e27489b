"""Open-loop load on the scoring service: requests sent at a fixed offered rate whatever the answers, latency
measured from each request's scheduled send time, every request distinct (checked), a capacity curve.

A closed loop (bench_service.py: N clients, each sending after the previous answer) hides the service's
tail twice: its clients start together, so the first requests queue behind each other, and a slow answer
delays the next request, which removes exactly the samples that would have been slow (coordinated
omission). Here, as with wrk2 or vegeta, request i is due at ``start + i / rate`` (or at Poisson arrival
times with ``--poisson``) and is sent then on its own connection task, however many are still open; its
latency counts from that due time, so a server (or a load generator) that falls behind shows it.

For every offered rate in ``--rates`` the server is started fresh (its caches hold nothing from another
step), ``--warmup`` seconds of load are sent and not measured, then ``--duration`` seconds are measured:
p50/p99/max latency of the answered requests, the achieved rate (answers with 2xx per second), the 503s
(backpressure: ``overloaded``) and their own p99, other failures, and the server's CPU (its process and
its offline worker processes). Variants (``--servers``): ``default`` (``bqas serve`` defaults),
``workers-per-core`` (docs/deploy.md: one offline worker process per core, ``BQAS_OFFLINE_WORKERS`` =
cores), ``verifier-off`` (``BQAS_VERIFIER=off``), and with ``--before SRC`` ``before`` (another source
tree, e.g. a ``git worktree`` of the previous commit). Rounds (``--repeat``) run the variants interleaved,
in rotating order; the summary gives min and median over the rounds.

Requests are distinct by construction (benchmarks/_samples.py: German voice turns; German, Chinese and
English RAG answers over 3-5 passages, ~4k characters of context) and checked: ``DistinctBodies`` fails
on a body it has already handed out. The DEV data sets are too small for this (219 RAG samples with
contexts: 7 s at 30 requests/s), so the samples are generated, from templates written for BQAS.

Run: nice .venv/bin/python benchmarks/service/bench_open_loop.py [--judge rag voice] [--rates 10 20 30 40 50 60]
     [--duration 30] [--warmup 5] [--servers default workers-per-core verifier-off before] [--before SRC]
     [--repeat 3] [--poisson]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import rag_samples, voice_samples
from bench_service import SERVER_ENV, _free_port, own_cpu, start_server, tree_cpu, wait_ready

TARGET_P99_MS = {"voice": 100.0, "rag": 300.0}
VARIANTS = {
    "default": {},
    "workers-per-core": {"BQAS_OFFLINE_WORKERS": str(os.cpu_count() or 1)},
    "verifier-off": {"BQAS_VERIFIER": "off"},
    "before": {},  # PYTHONPATH=--before (set in main)
}


class DistinctBodies:
    """Request bodies of one kind, each handed out once: a repeat raises instead of being sent (a repeated
    request is answered from the embedding caches and would flatter the service)."""

    def __init__(self, bodies: Iterator[bytes]):
        self._bodies = bodies
        self._seen: set[bytes] = set()

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        body = next(self._bodies)
        digest = hashlib.blake2b(body, digest_size=16).digest()
        if digest in self._seen:
            raise ValueError(f"request body {len(self._seen) + 1} repeats an earlier one")
        self._seen.add(digest)
        return body


def sample_bodies(kind: str, count: int, seed: int) -> Iterator[bytes]:
    """``count`` request bodies of ``kind`` (``voice`` or ``rag``) for POST /api/score."""
    if kind == "voice":
        for v in voice_samples(count, seed=seed):
            yield orjson.dumps(
                {
                    "judges": ["voice"],
                    "language": "de",
                    "question": v["user_input"],
                    "answer": v["response"],
                    "sample": {"expected_intent": v["expected_intent"], "detected_intent": v["detected_intent"]},
                }
            )
    elif kind == "rag":
        for r in rag_samples(count, seed=seed):
            yield orjson.dumps(
                {
                    "judges": ["rag_hallucination"],
                    "language": r["language"],
                    "question": r["query"],
                    "answer": r["response"],
                    "contexts": r["available_facts"],
                }
            )
    else:
        raise ValueError(f"unknown kind {kind!r}: voice or rag")


def due_times(rate: float, count: int, poisson: bool, rng: random.Random) -> list[float]:
    """Offsets (seconds from the start) at which the requests are due: evenly spaced, or Poisson arrivals."""
    if not poisson:
        return [i / rate for i in range(count)]
    out, t = [], 0.0
    for _ in range(count):
        out.append(t)
        t += rng.expovariate(rate)
    return out


@dataclass
class Step:
    kind: str
    rate: float
    variant: str
    ok_ms: list[float] = field(default_factory=list)
    overloaded_ms: list[float] = field(default_factory=list)
    codes: Counter[int | str] = field(default_factory=Counter)
    measured_seconds: float = 0.0
    server_cpu: float = 0.0
    generator_cpu: float = 0.0
    late_sends: int = 0  # requests the generator itself sent more than 10 ms after they were due

    @staticmethod
    def _p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")

    def summary(self) -> dict[str, Any]:
        ok = self.ok_ms
        return {
            "kind": self.kind,
            "variant": self.variant,
            "offered": self.rate,
            "achieved": len(ok) / self.measured_seconds if self.measured_seconds else 0.0,
            "p50": statistics.median(ok) if ok else float("nan"),
            "p99": self._p(ok, 0.99),
            "max": max(ok) if ok else float("nan"),
            "overloaded": len(self.overloaded_ms),
            "overloaded_p99": self._p(self.overloaded_ms, 0.99),
            "codes": {str(code): n for code, n in self.codes.items()},  # JSON keys are strings
            "server_cpu_share": self.server_cpu / self.measured_seconds if self.measured_seconds else 0.0,
            "generator_cpu_share": self.generator_cpu / self.measured_seconds if self.measured_seconds else 0.0,
            "late_sends": self.late_sends,
        }


async def run_step(
    url: str,
    key: str,
    step: Step,
    bodies: DistinctBodies,
    warmup: float,
    duration: float,
    poisson: bool,
    server_pid: int,
) -> None:
    """Send ``(warmup + duration) * rate`` requests at their due times; measure those due after the warm-up."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    total = int((warmup + duration) * step.rate)
    offsets = due_times(step.rate, total, poisson, random.Random(7))
    # No connection limit: an open loop never waits for a free connection before sending.
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.2
        measure_from = start + warmup

        async def one(due: float, body: bytes) -> None:
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            if loop.time() - due > 0.010 and due >= measure_from:
                step.late_sends += 1
            try:
                async with http.post(f"{url}/api/score", data=body, headers=headers) as r:
                    await r.read()
                    status: int | str = r.status
            except (TimeoutError, aiohttp.ClientError) as exc:  # counted and shown, never hidden
                status = type(exc).__name__
            latency_ms = (loop.time() - due) * 1000
            if due < measure_from:
                return
            step.codes[status] += 1
            if status == 200:
                step.ok_ms.append(latency_ms)
            elif status == 503:
                step.overloaded_ms.append(latency_ms)

        tasks = []
        cpu_marks: dict[str, tuple[float, float]] = {}

        async def mark_cpu() -> None:
            await asyncio.sleep(max(0.0, measure_from - loop.time()))
            cpu_marks["from"] = (own_cpu(), tree_cpu(server_pid)[1])

        marker = asyncio.create_task(mark_cpu())
        for offset in offsets:
            tasks.append(asyncio.create_task(one(start + offset, next(bodies))))
        await asyncio.gather(*tasks)
        await marker
        gen, srv = own_cpu(), tree_cpu(server_pid)[1]
        step.measured_seconds = duration  # the requests due in it are the measured ones
        step.generator_cpu = gen - cpu_marks["from"][0]
        step.server_cpu = srv - cpu_marks["from"][1]


def print_step(s: dict[str, Any]) -> None:
    target = TARGET_P99_MS[s["kind"]]
    print(
        f"{s['variant']:>16} {s['kind']:>5} offered {s['offered']:5.0f}/s achieved {s['achieved']:6.1f}/s"
        f"  p50 {s['p50']:7.1f}  p99 {s['p99']:7.1f}  max {s['max']:7.1f} ms"
        f"  503 {s['overloaded']:4d} (p99 {s['overloaded_p99']:.1f} ms)  codes {s['codes']}"
        f"  server CPU {s['server_cpu_share']:.0%}  generator CPU {s['generator_cpu_share']:.0%}"
        f"  late sends {s['late_sends']}  (p99 target < {target:g} ms)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", nargs="+", choices=sorted(TARGET_P99_MS), default=["rag", "voice"])
    parser.add_argument("--rates", nargs="+", type=float, default=[10, 20, 30, 40, 50, 60])
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds per step")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load before measuring")
    parser.add_argument("--servers", nargs="+", choices=sorted(VARIANTS), default=["default"])
    parser.add_argument("--before", type=Path, help="the src/ of the 'before' server variant")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, variants interleaved in rotating order")
    parser.add_argument("--poisson", action="store_true", help="Poisson arrivals instead of even spacing")
    parser.add_argument("--json", type=Path, help="write every step's summary to this file")
    args = parser.parse_args()
    if "before" in args.servers:
        if args.before is None:
            parser.error("--servers before needs --before SRC")
        VARIANTS["before"] = {"PYTHONPATH": str(args.before.resolve())}
    SERVER_ENV.update(VARIANTS)
    print(f"load average before: {os.getloadavg()}", flush=True)
    summaries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bqas-open-loop-") as tmp:
        for rnd in range(args.repeat):
            order = args.servers[rnd % len(args.servers) :] + args.servers[: rnd % len(args.servers)]
            for kind in args.judge:
                for rate in args.rates:
                    for variant in order:
                        port = _free_port()
                        proc, key = start_server(Path(tmp) / f"home-{variant}-{kind}-{rate}-{rnd}", port, variant)
                        url = f"http://127.0.0.1:{port}"
                        try:
                            asyncio.run(wait_ready(url))
                            count = int((args.warmup + args.duration) * rate) + 1
                            bodies = DistinctBodies(sample_bodies(kind, count, seed=1000 + rnd))
                            step = Step(kind, rate, variant)
                            asyncio.run(
                                run_step(url, key, step, bodies, args.warmup, args.duration, args.poisson, proc.pid)
                            )
                            summary = {**step.summary(), "round": rnd + 1}
                            summaries.append(summary)
                            print_step(summary)
                        finally:
                            proc.terminate()
                            proc.wait(timeout=30)
    print("\nmin / median over rounds:")
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for s in summaries:
        groups.setdefault((s["variant"], s["kind"], s["offered"]), []).append(s)
    for (variant, kind, rate), runs in groups.items():
        p99 = [r["p99"] for r in runs]
        achieved = [r["achieved"] for r in runs]
        rejected = [r["overloaded"] for r in runs]
        print(
            f"{variant:>16} {kind:>5} offered {rate:5.0f}/s: p99 min {min(p99):.1f} median {statistics.median(p99):.1f}"
            f" ms; achieved median {statistics.median(achieved):.1f}/s; 503 median {statistics.median(rejected):g}"
            f" ({len(runs)} rounds)"
        )
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        args.json.write_text(orjson.dumps(summaries, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
