"""One ``bqas`` command, as users run it, against several checkouts side by side: is a change worth it?

Each ``--src LABEL=DIR`` names the ``src`` folder of a checkout (``git worktree add /tmp/without <commit>``,
then edit it); the first is the reference the others are compared with (default: this checkout's, as
``this``). In every repetition each tree runs the command once, in a fresh process with DIR first on
``PYTHONPATH`` and its own BQAS home (its store; the model cache is shared), the order rotating from one
repetition to the next. One untimed run per tree first (byte-compiles the tree, creates its store).

Printed per tree: wall seconds and CPU seconds (user + system of the process and its children), min and
median; and per repetition the ratio to the reference's run of the same repetition, min and median. On a
shared machine read the ratios, not the seconds.

Run, e.g. the offline demo scenario::

    .venv/bin/python benchmarks/runner/bench_trees.py --repeat 7 --src this=src --src without=/tmp/w/src \\
        -- run scenarios/voice_de.yaml --no-progress

``{out}`` in the command is replaced by a fresh folder per run (``--out`` is added when it is missing).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(command: list[str], env: dict[str, str], out: Path) -> tuple[float, float, int]:
    argv = [part.replace("{out}", str(out)) for part in command]
    if "{out}" not in " ".join(command) and argv and argv[0] == "run" and "--out" not in argv and "-o" not in argv:
        argv += ["--out", str(out)]
    cpu = _child_cpu()
    start = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "bqas"), *argv], env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    return wall, _child_cpu() - cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", action="append", default=[], metavar="LABEL=DIR", help="a checkout's src folder")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per tree (default 5)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the bqas arguments")
    args = parser.parse_args()
    command = [part for part in args.command if part != "--"] or ["run", "scenarios/voice_de.yaml", "--no-progress"]
    trees = [spec.split("=", 1) for spec in args.src] or [["this", "src"]]
    if len(trees) < 2:
        parser.error("name at least two trees (--src LABEL=DIR, the first is the reference)")
    work = Path(tempfile.mkdtemp(prefix="bqas-trees-"))
    models = work / "models"
    envs: dict[str, dict[str, str]] = {}
    for label, src in trees:
        envs[label] = {
            **os.environ,
            "PYTHONPATH": str(Path(src).resolve()),
            "BQAS_HOME": str(work / f"home-{label}"),
            "BQAS_MODEL_CACHE": str(models),
        }
    print(f"command: bqas {' '.join(command)}; trees: {', '.join(f'{lab}={src}' for lab, src in trees)}")
    print(f"load average at start: {os.getloadavg()[0]:.1f}", flush=True)
    codes: set[int] = set()
    for label, _src in trees:  # untimed: compiles the tree, creates its store
        codes.add(_run(command, envs[label], work / f"warm-{label}")[2])
    wall: dict[str, list[float]] = {label: [] for label, _ in trees}
    cpu: dict[str, list[float]] = {label: [] for label, _ in trees}
    labels = [label for label, _ in trees]
    for rep in range(args.repeat):
        order = labels[rep % len(labels) :] + labels[: rep % len(labels)]
        for label in order:
            out = work / f"out-{label}-{rep}"
            w, c, code = _run(command, envs[label], out)
            codes.add(code)
            wall[label].append(w)
            cpu[label].append(c)
            shutil.rmtree(out, ignore_errors=True)
        print(f"  repetition {rep + 1}: " + ", ".join(f"{lab} {wall[lab][-1]:.2f} s" for lab in labels), flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}; exit codes seen: {sorted(codes)}")
    ref = labels[0]
    for label in labels:
        line = (
            f"{label:>12}: wall {min(wall[label]):.3f} / {statistics.median(wall[label]):.3f} s, "
            f"CPU {min(cpu[label]):.3f} / {statistics.median(cpu[label]):.3f} s (min / median)"
        )
        if label != ref:
            rw = [a / b for a, b in zip(wall[label], wall[ref], strict=True)]
            rc = [a / b for a, b in zip(cpu[label], cpu[ref], strict=True)]
            line += (
                f"; / {ref}: wall {min(rw):.3f} / {statistics.median(rw):.3f}, "
                f"CPU {min(rc):.3f} / {statistics.median(rc):.3f}"
            )
        print(line)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if codes <= {0, 1} else 1)


if __name__ == "__main__":
    main()
