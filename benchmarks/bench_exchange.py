"""What storing the LLM exchange (issue 17: the viewer's sample page) costs the runner.

``benchmarks/bench_runner.py``'s child runs (N samples through ``execute_run`` against the scripted
server, modes ``off`` and ``defaults``) with this tree and with a baseline tree (a ``git worktree`` of
``--base``, default the commit before the exchange was stored), alternated and repeated so that both meet
the same machine noise; the baseline tree's ``src`` goes first on ``PYTHONPATH``. Printed: wall and CPU
per run, and the paired ratios this/base (min and median).

Run: .venv/bin/python benchmarks/bench_exchange.py --base BEFORE [--this AFTER] [--n 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).resolve().parents[1]


def child(tree: Path, n: int, url: str, mode: str, concurrency: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    script = tree / "benchmarks" / "bench_runner.py"
    command = [sys.executable, str(script), "--child", str(n), url, mode, "--concurrency", str(concurrency)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=tree)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (before the change)")
    parser.add_argument("--this", help="the commit to measure (default: this working tree)")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from _server import scripted_server
    from bench_runner import REPLY

    with tempfile.TemporaryDirectory() as tmp:
        base, this = Path(tmp) / "base", Path(tmp) / "this" if args.this else ROOT
        for tree, rev in ((base, args.base), (this, args.this)):
            if tree != ROOT:
                subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), rev], cwd=ROOT, check=True)
        try:
            walls: dict[tuple[str, str], list[float]] = {}
            cpus: dict[tuple[str, str], list[float]] = {}
            with scripted_server(args.latency, REPLY) as url:
                for _ in range(args.repeat):
                    for mode in ("off", "defaults"):
                        for name, tree in (("base", base), ("this", this)):
                            res = child(tree, args.n, url, mode, args.concurrency)
                            walls.setdefault((name, mode), []).append(res["wall"])
                            cpus.setdefault((name, mode), []).append(res["cpu"])
                            print(
                                f"{name:4s} {mode:8s} N={args.n}: wall {res['wall']:.3f} s, CPU {res['cpu']:.3f} s,"
                                f" stored {res['stored']}",
                                flush=True,
                            )
        finally:
            for tree in (base, this):
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=True)
    # CPU seconds too: on a shared machine the wall times carry other processes' load.
    for what, table in (("wall", walls), ("CPU", cpus)):
        for mode in ("off", "defaults"):
            this, prior = table[("this", mode)], table[("base", mode)]
            paired = [t / b for t, b in zip(this, prior, strict=True)]
            print(
                f"{what:4s} {mode:8s}: this min {min(this):.3f} median {statistics.median(this):.3f} s; base min"
                f" {min(prior):.3f} median {statistics.median(prior):.3f} s; this/base paired min {min(paired):.3f}"
                f" median {statistics.median(paired):.3f}"
            )
    ratios = [d / o for d, o in zip(walls[("this", "defaults")], walls[("this", "off")], strict=True)]
    print(f"this: defaults/off paired min {min(ratios):.3f} median {statistics.median(ratios):.3f} (target <= 1.3)")


if __name__ == "__main__":
    main()
