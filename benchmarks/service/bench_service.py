"""Scoring-service benchmark: ``POST /api/score`` with the offline judge under concurrent load, with a new
text in every request.

Starts ``bqas serve --backend offline`` in its own process with its defaults (review loop on; fresh
SQLite home, rate limit off, one API key), waits until ``/healthz`` says the models are loaded, then
drives it from this process with ``--concurrency`` aiohttp clients on loopback for ``--duration``
seconds per workload. Every request is distinct (``_samples.py``: German voice turns; German, Chinese
and English RAG answers with 3-5 passages, ~4k characters of context), so the embedding caches answer
only what real traffic would repeat. Prints requests per second, p50/p99/max latency, the status codes
seen, and the CPU seconds of the load generator (this process) and of the server (its process and every
descendant: the offline tier's worker processes; and its main process alone) during the measured window.
Targets: p99 < 100 ms for voice, < 300 ms for RAG with contexts, 32 clients.

Offered load: each client sends its next request ``--think`` seconds after the previous answer (0: at
once, a closed loop that saturates the server; the p99 is then about clients / throughput, queueing
rather than service time). ``--servers`` runs server variants one after the other with the same
workloads: ``default`` (the defaults), ``threads`` (``BQAS_OFFLINE_POOL=threads``: the offline tier in
worker threads, as before worker processes), ``no-review`` (``BQAS_REVIEW=false``), and with ``--before
SRC`` ``before`` (the defaults of another source tree: ``PYTHONPATH=SRC``, the same venv, e.g. a ``git
worktree`` of an earlier commit).

Run: nice .venv/bin/python benchmarks/service/bench_service.py [--duration 30] [--concurrency 32] [--think 0]
     [--judge voice rag healthz] [--servers default threads no-review before] [--repeat 1]
     [--before /tmp/before/src]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import rag_samples, voice_samples

TARGET_P99_MS = {"voice": 100.0, "rag": 300.0}
# The yardstick: GET /healthz (no judging, no store) with the same clients and think time. Its p99 is what
# the server process and this machine give any request at that moment (scheduling, event loop, HTTP).
KINDS = [*TARGET_P99_MS, "healthz"]
SERVER_ENV = {
    "default": {},
    "threads": {"BQAS_OFFLINE_POOL": "threads"},
    "no-review": {"BQAS_REVIEW": "false"},
    "before": {},  # PYTHONPATH=--before (set in main)
}
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def tree_cpu(root: int) -> tuple[float, float]:
    """CPU seconds (user + sys) of process ``root`` alone and with all its live descendants (the offline
    tier's worker processes), from /proc (Linux)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return cpu.get(root, 0.0), total


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def request_bodies(kind: str, seed: int) -> Iterator[bytes]:
    """An endless stream of distinct request bodies of one kind (new samples in batches of 2,000)."""
    if kind == "healthz":
        yield from itertools.repeat(b"")
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


def start_server(home: Path, port: int, variant: str = "default") -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "BQAS_HOME": str(home), "BQAS_RATE_LIMIT": "0", **SERVER_ENV[variant]}
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


async def load(
    url: str, key: str, kind: str, concurrency: int, duration: float, think: float, server_pid: int
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    latencies: list[float] = []
    codes: Counter[int | str] = Counter()
    bodies = request_bodies(kind, seed=1000)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        # Warm-up with its own samples (code paths, connection pool); not measured.
        def send(body: bytes) -> Any:
            if kind == "healthz":
                return http.get(f"{url}/healthz")
            return http.post(f"{url}/api/score", data=body, headers=headers)

        for body in itertools.islice(request_bodies(kind, seed=1), 20):
            async with send(body) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"warm-up answered {r.status}: {await r.text()}")
        stop_at = time.perf_counter() + duration

        async def client() -> None:
            first = True
            while time.perf_counter() < stop_at:
                if think > 0 and not first:
                    await asyncio.sleep(think)
                first = False
                body = next(bodies)
                started = time.perf_counter()
                try:
                    async with send(body) as r:
                        await r.read()
                        codes[r.status] += 1
                except aiohttp.ClientError as exc:  # counted and shown, never hidden
                    codes[type(exc).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - started)

        began, gen_before, srv_before = time.perf_counter(), own_cpu(), tree_cpu(server_pid)
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
        srv_after = tree_cpu(server_pid)
        gen_cpu, srv_cpu = own_cpu() - gen_before, srv_after[1] - srv_before[1]
        main_cpu = srv_after[0] - srv_before[0]
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    target = TARGET_P99_MS.get(kind)
    verdict = (
        "yardstick, no target"
        if target is None
        else f"target p99 < {target:g} ms: " + ("met" if p99 < target else "MISSED")
    )
    print(
        f"{kind}: {len(ms)} distinct requests in {elapsed:.1f} s with {concurrency} clients (think {think:g} s),"
        f" {len(ms) / elapsed:.1f} requests/s; latency p50 {statistics.median(ms):.1f} p99 {p99:.1f} max"
        f" {ms[-1]:.1f} ms; status codes {dict(codes)}; CPU: load generator {gen_cpu:.1f} s"
        f" ({gen_cpu / elapsed:.0%} of a core), server {srv_cpu:.1f} s ({srv_cpu / elapsed:.0%}),"
        f" {srv_cpu / max(1, len(ms)) * 1000:.1f} ms per request, of which its main process (HTTP, review"
        f" feed) {main_cpu / max(1, len(ms)) * 1000:.1f} ms; {verdict}",
        flush=True,
    )
    return {"kind": kind, "rps": len(ms) / elapsed, "p99": p99, "p50": statistics.median(ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--think", type=float, default=0.0, help="seconds a client waits after each answer")
    parser.add_argument("--judge", nargs="+", choices=KINDS, default=["voice", "rag"])
    parser.add_argument("--servers", nargs="+", choices=sorted(SERVER_ENV), default=["default"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds over the server variants (min and median)")
    parser.add_argument("--before", type=Path, help="the source tree (its src/) of the 'before' server variant")
    args = parser.parse_args()
    if "before" in args.servers:
        if args.before is None:
            parser.error("--servers before needs --before SRC")
        SERVER_ENV["before"] = {"PYTHONPATH": str(args.before.resolve())}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bqas-bench-") as tmp:
        for rnd in range(args.repeat):
            for variant in args.servers:
                port = _free_port()
                proc, key = start_server(Path(tmp) / f"home-{variant}-{rnd}", port, variant)
                url = f"http://127.0.0.1:{port}"
                try:
                    ready = asyncio.run(wait_ready(url))
                    print(f"server {variant} (round {rnd + 1}): models ready after {ready:.1f} s", flush=True)
                    for kind in args.judge:
                        run = asyncio.run(load(url, key, kind, args.concurrency, args.duration, args.think, proc.pid))
                        results.setdefault((variant, kind), []).append(run)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
    for (variant, kind), runs in results.items():
        p99s, rps = [r["p99"] for r in runs], [r["rps"] for r in runs]
        print(
            f"{variant} {kind}: p99 min {min(p99s):.1f} median {statistics.median(p99s):.1f} ms; requests/s min"
            f" {min(rps):.1f} median {statistics.median(rps):.1f} ({len(runs)} runs)"
        )
    print(f"load average after the runs: {os.getloadavg()}")


if __name__ == "__main__":
    main()
