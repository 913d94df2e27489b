"""Streaming-target benchmark: BQAS reading streamed replies against a bare aiohttp client reading the same.

A streaming assistant (its own process, aiohttp, Server-Sent Events) answers each request with its first
piece after 30 ms and the last at 80 ms (five pieces, then ``data: [DONE]``). N samples (default 200:
the teachers' commands of scenarios/data/voice_de_target.jsonl, varied) are asked at concurrency 16,
side by side in each repetition:

* ``bare``: aiohttp, the same requests, each stream read line by line and its pieces joined; the time to
  first token taken at the first piece (what a hand-written client would do). The ideal is
  N x 80 ms / 16.
* ``bqas``: BQAS's own target client (``type: http``, ``stream: sse``, ``chunk: $.token``; its
  connection pool, limit, retry policy, incremental SSE parser, JSONPath chunk mapping and the stored
  reply's raw bytes), the same N requests at the target's concurrency of 16.
* ``run`` (with ``--full``): ``bqas run`` of the same samples with that target and the offline voice judge,
  process start to written reports, for scale.

Goal (issue): ``bqas`` <= 1.2 x ``bare``. Printed per repetition, then min and median of each, and the
time to first token p50 both measured (they should agree: about 30 ms plus this machine's delay).

Run: .venv/bin/python benchmarks/runner/bench_stream_target.py [--n 200] [--concurrency 16] [--repeat 3] [--full]
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
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIRST_MS, LAST_MS, PIECES = 30.0, 80.0, 5


def samples(n: int) -> list[dict[str, Any]]:
    base = [
        json.loads(line)
        for line in (ROOT / "scenarios/data/voice_de_target.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    commands = [b for b in base if "user_input" in b]
    out = []
    for i in range(n):
        b = commands[i % len(commands)]
        text = b["user_input"] if i < len(commands) else f"{b['user_input']} ({i // len(commands)}. Mal)"
        out.append({"id": f"s{i:04d}", "user_input": text, "expected_intent": b["expected_intent"]})
    return out


def serve(port: int) -> None:
    """The streaming assistant: first piece at 30 ms, the last at 80 ms, then [DONE]."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        words = f"Gern, ich kümmere mich darum: {body.get('text', '')}".split()
        size = max(1, len(words) // PIECES)
        pieces = [" ".join(words[i : i + size]) + " " for i in range(0, len(words), size)][:PIECES]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        start = time.perf_counter()
        for i, piece in enumerate(pieces):
            due = FIRST_MS + (LAST_MS - FIRST_MS) * i / max(1, len(pieces) - 1)
            await asyncio.sleep(max(0.0, due / 1000 - (time.perf_counter() - start)))
            event: dict[str, Any] = {"token": piece}
            if i == len(pieces) - 1:
                event["intent"] = "reminder"
            await response.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/chat", chat)
    app.router.add_get("/healthz", healthz)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the streaming assistant did not start")


async def bare(url: str, items: list[dict[str, Any]], concurrency: int) -> tuple[float, list[float]]:
    import aiohttp

    limit = asyncio.Semaphore(concurrency)
    ttfts: list[float] = []

    async def one(http: aiohttp.ClientSession, item: dict[str, Any]) -> str:
        async with limit:
            started = time.perf_counter()
            pieces: list[str] = []
            async with http.post(f"{url}/chat", json={"text": item["user_input"]}) as response:
                async for line in response.content:
                    text = line.decode().strip()
                    if not text.startswith("data: ") or text == "data: [DONE]":
                        continue
                    token = json.loads(text[6:]).get("token")
                    if token:
                        if not pieces:
                            ttfts.append((time.perf_counter() - started) * 1000)
                        pieces.append(token)
            return "".join(pieces)

    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as http:
        answers = await asyncio.gather(*(one(http, item) for item in items))
    elapsed = time.perf_counter() - started
    assert all(answers), "a stream gave no answer"
    return elapsed, ttfts


def target_config(url: str, concurrency: int) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"{url}/chat",
        "body": {"text": "{user_input}"},
        "stream": "sse",
        "chunk": "$.token",
        "outputs": {"detected_intent": "$.intent"},
        "concurrency": concurrency,
    }


async def bqas_client(url: str, items: list[dict[str, Any]], concurrency: int) -> tuple[float, list[float]]:
    from pydantic import TypeAdapter

    from bqas.targets.config import TargetConfig
    from bqas.targets.kinds import Conversation, client_for

    target = TypeAdapter(TargetConfig).validate_python(target_config(url, concurrency))
    client = client_for(target, 8 * 1024 * 1024)
    started = time.perf_counter()
    try:
        replies = await asyncio.gather(*(client.ask(item, Conversation(), 0) for item in items))
    finally:
        await client.aclose()
    elapsed = time.perf_counter() - started
    errors = [r.error for r in replies if r.error]
    assert not errors, errors[:3]
    return elapsed, [r.ttft_ms for r in replies if r.ttft_ms is not None]


def full_run(url: str, items: list[dict[str, Any]], concurrency: int) -> float:
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        scenario = {
            "name": "bench-stream",
            "judges": ["voice"],
            "backend": "offline",
            "samples": items,
            "target": target_config(url, concurrency),
        }
        path = Path(tmp) / "s.yaml"
        path.write_text(yaml.safe_dump(scenario, allow_unicode=True), encoding="utf-8")
        env = {**os.environ, "BQAS_HOME": tmp}
        cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--out", f"{tmp}/o"]
        started = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise RuntimeError(done.stdout + done.stderr)
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also time a whole bqas run (judging included)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    items = samples(args.n)
    proc, url = start_server()
    try:
        asyncio.run(bare(url, items[:16], args.concurrency))  # warm up both sides once
        figures: dict[str, list[float]] = {"bare": [], "bqas": [], "run": []}
        ttft: dict[str, list[float]] = {"bare": [], "bqas": []}
        for rep in range(1, args.repeat + 1):
            # Alternate the order so that neither mode always runs first.
            order = ["bare", "bqas"] if rep % 2 else ["bqas", "bare"]
            for mode in order:
                work = bare if mode == "bare" else bqas_client
                elapsed, ttfts = asyncio.run(work(url, items, args.concurrency))
                figures[mode].append(elapsed)
                ttft[mode].append(statistics.median(ttfts))
            line = f"rep {rep}: bare {figures['bare'][-1]:.3f} s · bqas {figures['bqas'][-1]:.3f} s"
            if args.full:
                figures["run"].append(full_run(url, items, args.concurrency))
                line += f" · bqas run (judging included) {figures['run'][-1]:.2f} s"
            print(line, flush=True)
        ideal = args.n * LAST_MS / 1000 / args.concurrency
        print(f"ideal (N x {LAST_MS:g} ms / {args.concurrency}): {ideal:.3f} s")
        for mode, values in figures.items():
            if values:
                print(f"{mode}: min {min(values):.3f} s · median {statistics.median(values):.3f} s")
        for mode, values in ttft.items():
            print(f"{mode}: time to first token p50 (median over repetitions) {statistics.median(values):.1f} ms")
        ratio_min = min(figures["bqas"]) / min(figures["bare"])
        ratio_median = statistics.median(figures["bqas"]) / statistics.median(figures["bare"])
        print(f"bqas / bare: {ratio_min:.2f}x (min) · {ratio_median:.2f}x (median); goal <= 1.2x")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
