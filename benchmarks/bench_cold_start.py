"""Cold start, as a user meets it: new processes of the installed ``bqas`` command, timed from spawn to exit
(or to the first healthy answer). Side by side in each repetition, with ``python -c pass`` as the
machine's own yardstick (on a busy machine every figure grows with it):

* ``bqas --help``;
* a 1-sample offline ``bqas run`` (shipped voice sample, defaults: review loop on, report files written)
  in a BQAS home that already has its store (``run``) and in a new one (``run, new home``: creates and
  migrates the store);
* ``bqas serve``: until ``/healthz`` first answers 200, and until it says ``models: ready``.

Targets (issue 15): --help < 0.15 s, 1-sample offline run < 2.5 s, serve healthy < 3 s.

Run: nice .venv/bin/python benchmarks/bench_cold_start.py [--repeat 5]
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
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BQAS = str(Path(sys.executable).with_name("bqas"))


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_times(env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(seconds to the first healthy /healthz, seconds to models: ready) of one ``bqas serve``."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [BQAS, "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    healthy = ready = None
    try:
        while ready is None and time.perf_counter() - started < 120:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0)
            except httpx.HTTPError:
                time.sleep(0.02)
                continue
            now = time.perf_counter() - started
            if answer.status_code == 200:
                healthy = healthy if healthy is not None else now
                if answer.json().get("models", "ready") == "ready":
                    ready = now
            time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    if healthy is None or ready is None:
        raise RuntimeError("bqas serve did not become healthy within 120 s")
    return healthy, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {
        k: [] for k in ("python -c pass", "--help", "run", "run, new home", "serve healthy", "serve models ready")
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sample = (ROOT / "scenarios/data/voice_de.jsonl").read_text(encoding="utf-8").splitlines()[0]
        (folder / "one.jsonl").write_text(sample + "\n", encoding="utf-8")
        (folder / "one.yaml").write_text(
            "name: one\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: one.jsonl\n", encoding="utf-8"
        )
        env = {**os.environ, "BQAS_HOME": str(folder / "home")}
        timed([BQAS, "run", "one.yaml", "--no-progress", "--out", "out"], env, folder)  # the store exists now
        for rep in range(args.repeat):
            figures["python -c pass"].append(timed([sys.executable, "-c", "pass"], env, folder))
            figures["--help"].append(timed([BQAS, "--help"], env, folder))
            figures["run"].append(timed([BQAS, "run", "one.yaml", "--no-progress", "--out", "out"], env, folder))
            fresh = {**env, "BQAS_HOME": str(folder / f"home-{rep}")}
            figures["run, new home"].append(
                timed([BQAS, "run", "one.yaml", "--no-progress", "--out", f"out-{rep}"], fresh, folder)
            )
            healthy, ready = serve_times(env, folder)
            figures["serve healthy"].append(healthy)
            figures["serve models ready"].append(ready)
    targets = {"--help": 0.15, "run": 2.5, "serve healthy": 3.0}
    for name, values in figures.items():
        target = targets.get(name)
        verdict = "" if target is None else f"  (target < {target:g} s: {'met' if min(values) < target else 'MISSED'})"
        print(f"{name:20s} min {min(values):6.3f} s  median {statistics.median(values):6.3f} s{verdict}")
    print(json.dumps({"load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
