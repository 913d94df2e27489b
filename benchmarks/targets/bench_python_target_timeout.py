"""``bqas run`` against a ``type: python`` target whose sync function sleeps far past its ``timeout``, side
by side with one that answers at once: does the timeout bound the run?

What users run: the ``bqas`` command line, one process per run, timed from start to exit (start-up
included). N voice samples; the sleeping function sleeps ``--sleep`` seconds (default 40) with
``timeout: --timeout`` (default 0.5). Before the fix, each abandoned call held a thread of the loop's default
executor that the run joined at exit: 10 samples took 61 s instead of 19, and a function that never
returned hung the run. Each repetition runs both, alternating which goes first; min and median printed.

Run: nice .venv/bin/python benchmarks/targets/bench_python_target_timeout.py [--n 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

FUNCTIONS = """import time


def sleeps(sample):
    time.sleep(float(__import__("os").environ["BENCH_SLEEP"]))
    return {"response": "zu spät", "detected_intent": "reminder"}


def instant(sample):
    return {"response": "Gern, ich erinnere dich.", "detected_intent": "reminder"}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--sleep", type=float, default=40.0)
    ap.add_argument("--timeout", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bqas-bench-pytarget-"))
    (work / "bench_functions.py").write_text(FUNCTIONS, encoding="utf-8")
    samples = [
        {"id": f"s{i}", "user_input": f"Erinnere mich an die Konferenz Nummer {i}", "expected_intent": "reminder"}
        for i in range(args.n)
    ]
    for name in ("sleeps", "instant"):
        doc = {
            "name": f"bench-{name}",
            "judges": ["voice"],
            "backend": "offline",
            "samples": samples,
            "target": {"type": "python", "function": f"bench_functions:{name}", "timeout": args.timeout},
        }
        (work / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    env = os.environ | {
        "PYTHONPATH": str(work),
        "BQAS_HOME": str(work / "home"),
        "BENCH_SLEEP": str(args.sleep),
    }
    bqas = str(Path(sys.executable).parent / "bqas")
    walls: dict[str, list[float]] = {"sleeps": [], "instant": []}
    for rep in range(args.repeat):
        order = ("sleeps", "instant") if rep % 2 == 0 else ("instant", "sleeps")
        for name in order:
            started = time.perf_counter()
            done = subprocess.run(
                [bqas, "run", str(work / f"{name}.yaml"), "--out", str(work / f"out-{name}-{rep}"), "--no-progress"],
                env=env, capture_output=True, text=True, timeout=args.sleep * args.n + 600,
            )  # fmt: skip
            walls[name].append(time.perf_counter() - started)
            print(f"rep {rep} {name}: {walls[name][-1]:.2f} s (exit {done.returncode})", flush=True)
    for name, values in walls.items():
        print(f"{name}: min {min(values):.2f} s, median {statistics.median(values):.2f} s over {len(values)} runs")
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
