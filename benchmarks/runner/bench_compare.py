"""bqas compare's bootstrap over two runs of N varied records: the shipped interval code against
scipy.stats.bootstrap (percentile, 2,000 resamples, what it used before), side by side in one process.

Run: nice .venv/bin/python benchmarks/runner/bench_compare.py [N] [REPEATS]
The records are the viewer tests' runs (tests/viewer_runs.py: German, Chinese and English samples, composites
with two decimals, a 1-5 faithfulness, unscored ones); run B is shifted by -2 so the intervals exclude 0.
Prints seconds per compare_runs (min / median) and the intervals both ways.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import numpy as np
from scipy.stats import bootstrap

from bqas.runner import compare
from viewer_runs import record


def scipy_ci(diffs: list[float], *, confidence: float = 0.95, seed: int = 0) -> tuple[float | None, float | None]:
    """The interval as computed before (scipy's percentile bootstrap)."""
    if len(diffs) < 2:
        return None, None
    data = np.asarray(diffs, dtype=float)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    res = bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=2000,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return round(float(res.confidence_interval.low), 4), round(float(res.confidence_interval.high), 4)


def timed(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[float, compare.Comparison]:
    t0 = time.perf_counter()
    result = compare.compare_runs(a, b)
    return time.perf_counter() - t0, result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rng_a, rng_b = random.Random(1), random.Random(2)
    a = [record(i, "r-a", rng_a) for i in range(n)]
    b = [record(i, "r-b", rng_b, shift=-2.0) for i in range(n)]
    shipped = compare.bootstrap_ci
    times: dict[str, list[float]] = {"shipped": [], "scipy": []}
    results: dict[str, compare.Comparison] = {}
    for _ in range(repeats):
        for label, fn in (("shipped", shipped), ("scipy", scipy_ci)):
            compare.bootstrap_ci = fn  # type: ignore[assignment]
            seconds, results[label] = timed(a, b)
            times[label].append(seconds)
    compare.bootstrap_ci = shipped
    print(f"N = {n:,} pairs, {repeats} rounds, interleaved")
    for label, values in times.items():
        print(f"  {label:8s} min {min(values):7.2f} s  median {statistics.median(values):7.2f} s")
    ratios = [s / t for s, t in zip(times["scipy"], times["shipped"], strict=True)]
    print(f"  scipy / shipped, paired: min {min(ratios):.1f}x  median {statistics.median(ratios):.1f}x")
    for d_new, d_old in zip(results["shipped"].dimensions, results["scipy"].dimensions, strict=True):
        print(
            f"  {d_new.name:28s} n {d_new.n:7,}  shipped [{d_new.ci_low}, {d_new.ci_high}]"
            f"  scipy [{d_old.ci_low}, {d_old.ci_high}]"
        )


if __name__ == "__main__":
    main()
