"""Each grounding feature alone: its ROC-AUC (positive = unfaithful; < 0.5 = higher means faithful) per set.

    nice .venv/bin/python benchmarks/offline/bench_grounding_single_features.py --data ../shared/datasets \
        --cache /tmp/grounding-features.jsonl

Reads the feature cache of ``bench_grounding_model.py`` (same data, seed and order). MEMERAG (CC BY-NC) is
measured only: these figures explain the recipes' MEMERAG rows, nothing is fitted or chosen on them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_grounding_model import cached_rows, data_arguments

from bqas.offline.grounding_features import FEATURE_NAMES

ROOT = Path(__file__).resolve().parents[2]
SETS = ("mtrag", "begin", "halluqa", "memerag-en", "memerag-es", "memerag-fr")


def main(argv: list[str] | None = None) -> int:
    from sklearn.metrics import roc_auc_score

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data_arguments(parser)
    parser.add_argument("--cache", type=Path, required=True, help="feature cache of bench_grounding_model.py")
    args = parser.parse_args(argv)
    rows = cached_rows(args.data, args.scenarios, args.seed, args.cache)
    by_set = {s: [(e.label, x) for e, x in rows if e.source == s] for s in SETS}
    print("| feature | " + " | ".join(SETS) + " |")
    print("|---|" + "---:|" * len(SETS))
    for i, name in enumerate(FEATURE_NAMES):
        cells = [f"{roc_auc_score([y for y, _ in r], [x[i] for _, x in r]):.3f}" for r in by_set.values() if r]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
