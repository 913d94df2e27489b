"""Retrain the shipped offline p_reject models from the cached features (reproducible, seeded).

    .venv/bin/python benchmarks/trust/prepare_gold.py
    nice .venv/bin/python benchmarks/trust/dump_features.py
    nice .venv/bin/python benchmarks/trust/train_offline.py [--features DIR] [--write]

Training data (licenses allow shipping fitted parameters): rag_hallucination on MTRAG
(rag_faithfulness_en, Apache-2.0), HaluEval (hallucination_en, MIT), BEGIN (attribution_en, CC BY 4.0)
and HalluQA (hallucination_zh, Apache-2.0); rag_privacy on GermEval 2014 (pii_de, CC BY 4.0). Never
MEMERAG, XNLI or OCNLI (non-commercial; MEMERAG forbids training). Prints held-out figures (70/30
stratified split per set, seeded) and, with --write, writes src/bqas/data/trust/<judge>.offline.json
fitted on all rows.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from bqas.offline.p_reject import LogisticModel
from bqas.training.licences import check_use
from bqas.training.p_reject import fit_model

TRAIN = {
    "rag_hallucination": ["rag_faithfulness_en", "hallucination_en", "attribution_en", "hallucination_zh"],
    "rag_privacy": ["pii_de"],
}
# GermEval labels person names only: other PII kinds (and judge manipulation) never appear with a label
# there, so the privacy model must not answer for them (their gate failure stands; p_reject is null).
OUT_OF_SCOPE = {
    "rag_hallucination": ["manipulation_n"],
    "rag_privacy": ["pii_email", "pii_phone", "pii_iban", "pii_address", "pii_id", "manipulation_n"],
}
OUT = Path(__file__).resolve().parents[2] / "src" / "bqas" / "data" / "trust"


def _load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=Path, default=Path("/tmp/bqas-trust/features"))
    parser.add_argument("--write", action="store_true", help="write the fitted models into the package")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    date = datetime.now(UTC).date().isoformat()
    for judge, sets in TRAIN.items():
        for name in sets:
            check_use(name, "train")
        data = {s: _load(args.features / f"{s}.jsonl") for s in sets}
        train_rows, test_rows = [], []
        for name, rows in data.items():
            labels = [r["reject"] for r in rows]
            tr, te = train_test_split(rows, test_size=0.3, stratify=labels, random_state=args.seed)
            train_rows += tr
            test_rows += [(name, r) for r in te]
        held = fit_model(
            [r["features"] for r in train_rows],
            [r["reject"] for r in train_rows],
            judge=judge,
            model_id="held-out",
            requires_zero=OUT_OF_SCOPE[judge],
        )
        model = LogisticModel.from_dict(held, "held-out")
        print(f"{judge}: held-out (fit on 70 % of each set, measured on the other 30 %)")
        for name in [*sets, "all"]:
            part = [r for n, r in test_rows if name in (n, "all")]
            y = np.array([r["reject"] for r in part], dtype=int)
            p = np.array([model.predict(r["features"]) for r in part])
            auc = roc_auc_score(y, p) if 0 < y.sum() < len(y) else float("nan")
            distinct = len(np.unique(np.round(p, 6))) / len(p)
            print(
                f"  {name:22s} n={len(y):5d} rejects={int(y.sum()):4d} ROC-AUC={auc:.3f} "
                f"Brier={brier_score_loss(y, p):.3f} mean p={p.mean():.3f} base={y.mean():.3f} "
                f"distinct p={distinct:.0%}"
            )
        rows = [r for rs in data.values() for r in rs]
        final = fit_model(
            [r["features"] for r in rows],
            [r["reject"] for r in rows],
            judge=judge,
            model_id=f"{judge}-offline-{date}",
            seed=args.seed,
            requires_zero=OUT_OF_SCOPE[judge],
        )
        final["trained"] = date
        final["data"] = {s: len(rs) for s, rs in data.items()}
        print(f"  final: {len(final['features'])} features, n={final['n']}, rejects={final['n_reject']}")
        if args.write:
            OUT.mkdir(parents=True, exist_ok=True)
            path = OUT / f"{judge}.offline.json"
            path.write_text(json.dumps(final, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"  written: {path}")


if __name__ == "__main__":
    main()
