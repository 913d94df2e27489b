"""Scoring-service benchmark: ``POST /api/score`` with the offline judge under concurrent load, with a new
text in every request.

Starts ``bqas serve --backend offline`` in its own process with its defaults (review loop on; fresh
SQLite home, rate limit off, one API key), waits until ``/healthz`` says the models are loaded, then
drives it from this process with ``--concurrency`` aiohttp clients on loopback for ``--duration``
seconds per workload. Every request is distinct (``_samples.py``: German voice turns; German, Chinese
and English RAG answers with 3-5 passages, ~4k characters of context), so the embedding caches answer
only what real traffic would repeat. Prints requests per second, p50/p99/max latency and the status
codes seen. Targets (issue 15): p99 < 100 ms for voice, < 300 ms for RAG with contexts, 32 clients.

Run: nice .venv/bin/python benchmarks/bench_service.py [--duration 30] [--concurrency 32] [--judge voice rag]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import rag_samples, voice_samples

TARGET_P99_MS = {"voice": 100.0, "rag": 300.0}


def request_bodies(kind: str, seed: int) -> Iterator[bytes]:
    """An endless stream of distinct request bodies of one kind (new samples in batches of 2,000)."""
    for batch in itertools.count():
        if kind == "voice":
            for v in voice_samples(2000, seed=seed + batch):
                yield orjson.dumps(
                    {
                        "judges": ["voice"],
                        "language": "de",
                        "question": v["user_input"],
                        "answer": v["response"],
                        "sample": {"expected_intent": v["expected_intent"], "detected_intent": v["detected_intent"]},
                    }
                )
        else:
            for r in rag_samples(2000, seed=seed + batch):
                yield orjson.dumps(
                    {
                        "judges": ["rag_hallucination"],
                        "language": r["language"],
                        "question": r["query"],
                        "answer": r["response"],
                        "contexts": r["available_facts"],
                    }
                )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(home: Path, port: int) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "BQAS_HOME": str(home), "BQAS_RATE_LIMIT": "0"}
    for var in ("BQAS_LLM_BASE_URL", "BQAS_JUDGE_MODEL", "BQAS_DATABASE_URL"):
        env.pop(var, None)
    bqas = [sys.executable, "-m", "bqas.cli.main"]
    key = subprocess.run([*bqas, "keys", "create", "bench"], env=env, check=True, capture_output=True, text=True)
    proc = subprocess.Popen(
        [*bqas, "serve", "--port", str(port), "--backend", "offline", "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return proc, key.stdout.strip()


async def wait_ready(url: str) -> float:
    """Wait until /healthz says the models are loaded; returns the seconds that took."""
    started = time.perf_counter()
    deadline = time.time() + 120
    async with aiohttp.ClientSession() as http:
        while time.time() < deadline:
            try:
                async with http.get(f"{url}/healthz") as r:
                    if r.status == 200 and (await r.json()).get("models", "ready") == "ready":
                        return time.perf_counter() - started
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("server did not start")


async def load(url: str, key: str, kind: str, concurrency: int, duration: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    latencies: list[float] = []
    codes: Counter[int | str] = Counter()
    bodies = request_bodies(kind, seed=1000)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        # Warm-up with its own samples (code paths, connection pool); not measured.
        for body in itertools.islice(request_bodies(kind, seed=1), 20):
            async with http.post(f"{url}/api/score", data=body, headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"warm-up answered {r.status}: {await r.text()}")
        stop_at = time.perf_counter() + duration

        async def client() -> None:
            while time.perf_counter() < stop_at:
                body = next(bodies)
                started = time.perf_counter()
                try:
                    async with http.post(f"{url}/api/score", data=body, headers=headers) as r:
                        await r.read()
                        codes[r.status] += 1
                except aiohttp.ClientError as exc:  # counted and shown, never hidden
                    codes[type(exc).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - started)

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    target = TARGET_P99_MS[kind]
    print(
        f"{kind}: {len(ms)} distinct requests in {elapsed:.1f} s with {concurrency} clients, {len(ms) / elapsed:.1f}"
        f" requests/s; latency p50 {statistics.median(ms):.1f} p99 {p99:.1f} max {ms[-1]:.1f} ms; status codes"
        f" {dict(codes)}; target p99 < {target:g} ms: {'met' if p99 < target else 'MISSED'}"
    )
    return {"kind": kind, "rps": len(ms) / elapsed, "p99": p99}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--judge", nargs="+", choices=sorted(TARGET_P99_MS), default=["voice", "rag"])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each workload (min and median printed)")
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in args.judge}
    with tempfile.TemporaryDirectory(prefix="bqas-bench-") as tmp:
        port = _free_port()
        proc, key = start_server(Path(tmp) / "home", port)
        url = f"http://127.0.0.1:{port}"
        try:
            ready = asyncio.run(wait_ready(url))
            print(f"server: bqas serve --backend offline (pid {proc.pid}), models ready after {ready:.1f} s")
            for _ in range(args.repeat):
                for kind in args.judge:
                    results[kind].append(asyncio.run(load(url, key, kind, args.concurrency, args.duration)))
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    for kind, runs in results.items():
        p99s, rps = [r["p99"] for r in runs], [r["rps"] for r in runs]
        print(
            f"{kind}: p99 min {min(p99s):.1f} median {statistics.median(p99s):.1f} ms; requests/s min {min(rps):.1f}"
            f" median {statistics.median(rps):.1f} ({len(runs)} runs)"
        )
    print(f"load average after the runs: {os.getloadavg()}")


if __name__ == "__main__":
    main()
