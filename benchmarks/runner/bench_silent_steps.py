"""How long a command stays silent: the time to its first byte on stdout or stderr, and the longest
stretch without one from its start to its exit, as a user watching it sees it. Measured in a pipe (a CI log) and on a pseudo-terminal (a
person at a terminal; a spinner's redraws count as output), for each source tree given, in fresh
processes, repeated; prints min and median per tree and mode.

    .venv/bin/python benchmarks/runner/bench_silent_steps.py --repeats 3 \\
        --tree after=src --tree before=/tmp/old/src -- eval-intents synth.jsonl

Each tree is put first on PYTHONPATH of the project's venv interpreter, so two versions of bqas run side
by side on the same machine and the same data; ``BQAS_HOME`` is a scratch folder per run (a cold store,
the model cache of the user as usual).
"""

from __future__ import annotations

import argparse
import itertools
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time


def _silences(cmd: list[str], env: dict[str, str], terminal: bool) -> tuple[float, float, float]:
    """(time to the first output, longest silent stretch, total time) of one run of ``cmd``."""
    start = time.monotonic()
    stamps = [start]
    if terminal:
        leader, follower = pty.openpty()
        proc = subprocess.Popen(cmd, env=env, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL)
        os.close(follower)
        streams = [leader]
    else:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None and proc.stderr is not None
        streams = [proc.stdout.fileno(), proc.stderr.fileno()]
    open_streams = list(streams)
    while open_streams:
        ready, _, _ = select.select(open_streams, [], [], 0.5)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if chunk:
                stamps.append(time.monotonic())
            else:
                open_streams.remove(fd)
    proc.wait()
    end = time.monotonic()
    stamps.append(end)
    if terminal:
        os.close(leader)
    longest = max(b - a for a, b in itertools.pairwise(stamps))
    return stamps[1] - start, longest, end - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="NAME=SRC_DIR (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("args", nargs="+", help="the bqas command's arguments (after --)")
    opts = parser.parse_args()
    trees = [t.split("=", 1) for t in opts.tree]
    print(f"load average: {os.getloadavg()}")
    for mode in ("pipe", "terminal"):
        for name, src in trees:
            firsts, gaps, totals = [], [], []
            for _ in range(opts.repeats):
                with tempfile.TemporaryDirectory() as home:
                    env = {**os.environ, "PYTHONPATH": os.path.abspath(src), "BQAS_HOME": home, "TERM": "xterm"}
                    env.pop("BQAS_SLOW_STEP_SECONDS", None)
                    cmd = [sys.executable, "-c", "from bqas.cli.main import main; main()", *opts.args]
                    first, gap, total = _silences(cmd, env, terminal=mode == "terminal")
                firsts.append(first)
                gaps.append(gap)
                totals.append(total)
            print(
                f"{mode:8} {name:8} first output min {min(firsts):5.1f} s median {statistics.median(firsts):5.1f} s"
                f" · longest silence min {min(gaps):6.1f} s median {statistics.median(gaps):6.1f} s"
                f" · whole command min {min(totals):6.1f} s median {statistics.median(totals):6.1f} s"
            )
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
