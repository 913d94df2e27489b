"""``bqas run --ray`` benchmark (issue 16): the offline judge over N RAG samples, on Ray and locally.

What users run: ``bqas run scenario.yaml`` through the CLI (results.jsonl, junit.xml and report.html
written, inside the timing), each run in a fresh process, the wall time taken around that process
(Ray's local cluster start included). The samples come from ``_samples.rag_samples``: distinct German
and Chinese RAG samples, 3-5 passages and ~4,000 characters of context each (``rag_hallucination``).

Modes, side by side in each round, rounds repeated (``--repeat``; min and median printed):

* ``local-1``: a local run with one offline worker thread (``BQAS_OFFLINE_WORKERS=1``): the yardstick of
  the Ray overhead at one worker;
* ``local``: a local run with the defaults (one worker thread per CPU);
* ``ray-1``: ``--ray local --ray-workers 1``;
* ``ray-2``: ``--ray local --ray-workers 2``.

Targets (issue 16): ray-2 >= 1.8x faster than ray-1; ray-1 <= 1.10x local-1; driver peak RSS flat in N
(``--sizes`` with two sizes). The driver's peak RSS is the CLI process's own (``RUSAGE_SELF``), not the
actors'.

Run: nice .venv/bin/python benchmarks/bench_ray.py [--sizes 1000 4000] [--repeat 2] [--modes ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

CHILD = """
import resource, sys
from bqas.cli.main import app
try:
    app(sys.argv[2:], standalone_mode=False)
finally:
    with open(sys.argv[1], "w") as fh:
        fh.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
"""

MODES = {
    "local-1": ([], {"BQAS_OFFLINE_WORKERS": "1"}),
    "local": ([], {}),
    "ray-1": (["--ray", "local", "--ray-workers", "1"], {}),
    "ray-2": (["--ray", "local", "--ray-workers", "2"], {}),
}


def write_scenario(folder: Path, n: int) -> Path:
    """N German/Chinese RAG samples and a scenario for the offline rag_hallucination judge."""
    from _samples import rag_samples

    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for sample in rag_samples(n, languages=("de", "zh")):
            fh.write(json.dumps(sample, ensure_ascii=False) + "\n")
    path = folder / "scenario.yaml"
    path.write_text(
        "name: bench-ray\njudges: [rag_hallucination]\nbackend: offline\nlanguage: de\nconcurrency: 8\n"
        "dataset: data.jsonl\nthresholds:\n  max_unscored: 1.0\n",
        encoding="utf-8",
    )
    return path


def one_run(scenario: Path, mode: str, folder: Path) -> dict[str, float]:
    """One ``bqas run`` in a fresh process (own BQAS_HOME): wall seconds and the driver's peak RSS."""
    flags, extra_env = MODES[mode]
    home = Path(tempfile.mkdtemp(dir=folder))
    rss_file = home / "rss"
    env = {**os.environ, "BQAS_HOME": str(home), **extra_env}
    cmd = [sys.executable, "-c", CHILD, str(rss_file), "run", str(scenario), "--no-progress"]
    cmd += ["--out", str(home / "out"), *flags]
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if not (home / "out" / "report.html").is_file():
        raise SystemExit(f"{mode} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    lines = sum(1 for _ in (home / "out" / "results.jsonl").open(encoding="utf-8"))
    return {"wall": wall, "rss_mb": float(rss_file.read_text()), "results": lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in args.sizes:
            folder = root / f"n{n}"
            folder.mkdir()
            scenario = write_scenario(folder, n)
            runs: dict[str, list[dict[str, float]]] = {m: [] for m in args.modes}
            for _ in range(args.repeat):
                for mode in args.modes:  # side by side in each round: the machine's noise hits all modes
                    result = one_run(scenario, mode, folder)
                    runs[mode].append(result)
                    print(json.dumps({"n": n, "mode": mode, **result}), flush=True)
            walls = {m: [r["wall"] for r in rs] for m, rs in runs.items()}
            summary = {
                m: {
                    "wall_min": min(w),
                    "wall_median": statistics.median(w),
                    "rss_max_mb": max(r["rss_mb"] for r in runs[m]),
                }
                for m, w in walls.items()
            }
            ratios = {}
            if "ray-1" in walls and "ray-2" in walls:
                ratios["speedup_2_vs_1_min"] = min(walls["ray-1"]) / min(walls["ray-2"])
                ratios["speedup_2_vs_1_median"] = statistics.median(walls["ray-1"]) / statistics.median(walls["ray-2"])
            if "ray-1" in walls and "local-1" in walls:
                ratios["overhead_ray1_vs_local1_min"] = min(walls["ray-1"]) / min(walls["local-1"])
                ratios["overhead_ray1_vs_local1_median"] = statistics.median(walls["ray-1"]) / statistics.median(
                    walls["local-1"]
                )
            print(json.dumps({"n": n, "summary": summary, "ratios": ratios}, indent=1), flush=True)


if __name__ == "__main__":
    main()
