"""How many claims the verifier reads (``max_claims``), chosen on permitted data only.

    .venv/bin/python benchmarks/offline/choose_max_claims.py --cache DIR

``DIR`` holds ``calibration.jsonl`` and ``suite.jsonl`` as ``benchmarks/offline/bench_verifier.py --cache DIR``
writes them (stage 1, the claims and each claim's verifier probability, per example). For 1 to 4 claims the
cascade is fitted as ``bqas grounding-model fit-cascade`` fits it, on 4 of 5 folds of the calibration part
(MTRAG, BEGIN, HalluQA DEV; the verifier never trained on it), and scored on the fifth: ROC-AUC of the
pooled out-of-fold probabilities per dataset, their mean, and the contradiction suite's ranking under the
cascade fitted on the whole calibration part. Rule: the fewest claims whose mean out-of-fold ROC-AUC is
within 0.005 of the best (each claim costs the verifier one more pass). MEMERAG is not read.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bqas.offline.verifier.cascade import Cascade
from bqas.training.grounding.train import metrics
from bqas.training.verifier.fit import cascade_probability, fit_cascade

TOLERANCE = 0.005


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def out_of_fold(rows: list[dict[str, Any]], k: int, folds: int, seed: int) -> dict[str, float]:
    """ROC-AUC per dataset of the cascade's out-of-fold probabilities with ``k`` claims read."""
    scored = [r for r in rows if "p1" in r]
    order = list(range(len(scored)))
    random.Random(seed).shuffle(order)
    fold_of = {i: n % folds for n, i in enumerate(order)}
    probs: dict[int, float] = {}
    for f in range(folds):
        train = [r for i, r in enumerate(scored) if fold_of[i] != f]
        cascade = Cascade.from_json(fit_cascade(train, "cv", max_claims=k))
        for i, r in enumerate(scored):
            if fold_of[i] == f:
                p = cascade_probability(r, cascade)
                assert p is not None
                probs[i] = p
    out = {}
    for source in sorted({r["source"] for r in scored}):
        idx = [i for i, r in enumerate(scored) if r["source"] == source]
        m = metrics([scored[i]["label"] for i in idx], [probs[i] for i in idx], 0.5)
        out[source] = float(m["roc_auc"])  # type: ignore[arg-type]
    return out


def suite_ranking(rows: list[dict[str, Any]], calibration: list[dict[str, Any]], k: int) -> dict[str, float]:
    """Share of suite pairs (faithful, unfaithful, ...) ranked right, per language, by the whole-part fit."""
    cascade = Cascade.from_json(fit_cascade([r for r in calibration if "p1" in r], "all", max_claims=k))
    ok: dict[str, list[int]] = {}
    for good, bad in zip(rows[0::2], rows[1::2], strict=True):
        pg, pb = cascade_probability(good, cascade), cascade_probability(bad, cascade)
        ok.setdefault(good["language"], []).append(int(pg is not None and pb is not None and pg < pb))
    return {lang: sum(v) / len(v) for lang, v in sorted(ok.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5, help="fold assignments averaged")
    args = ap.parse_args()
    calibration = _read(args.cache / "calibration.jsonl")
    suite = _read(args.cache / "suite.jsonl")
    print(f"{len(calibration)} calibration examples, {len(suite) // 2} suite pairs")
    means = {}
    print("| claims | MTRAG | BEGIN | HalluQA | mean (out of fold) | suite de / en / zh |")
    print("|---:|---:|---:|---:|---:|---|")
    for k in (1, 2, 3, 4):
        per_seed = [out_of_fold(calibration, k, args.folds, seed) for seed in range(args.seeds)]
        auc = {s: sum(d[s] for d in per_seed) / len(per_seed) for s in per_seed[0]}
        means[k] = sum(auc.values()) / len(auc)
        suite_k = suite_ranking(suite, calibration, k)
        print(f"| {k} | {auc.get('mtrag', float('nan')):.3f} | {auc.get('begin', float('nan')):.3f} | "
              f"{auc.get('halluqa', float('nan')):.3f} | {means[k]:.4f} | "
              + " / ".join(f"{suite_k.get(lang, float('nan')):.1%}" for lang in ("de", "en", "zh")) + " |")  # fmt: skip
    best = max(means.values())
    chosen = min(k for k, m in means.items() if m >= best - TOLERANCE)
    print(f"chosen: {chosen} claim(s) (the fewest within {TOLERANCE} of the best mean, {best:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
