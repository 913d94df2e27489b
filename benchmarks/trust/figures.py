"""Figures for docs/calibration.md: offline ROC-AUC and the coverage certified at FNR/FPR targets.

    .venv/bin/python benchmarks/trust/prepare_gold.py
    nice .venv/bin/python benchmarks/trust/dump_features.py
    nice .venv/bin/python benchmarks/trust/figures.py [--splits 50] [--json out.json]

For each set: the ROC-AUC of the offline p_reject the engine gives (rag_hallucination: the learned
grounding scorer's p_unfaithful where it scores, else the generic p_reject model; rag_privacy: the
generic model), and over repeated random halves (thresholds fitted on one half with
bqas.trust.thresholds.fit_tier, measured on the other): mean coverage, mean realised FNR/FPR on the test
halves, how often the test-half rate exceeded the target, and how often the test half demonstrates a
violation (its one-sided 90 % lower bound above the target). Also the raw risk 1 - composite/100.
MEMERAG (CC BY-NC) is evaluation-only: its rows give the ROC-AUC alone (split by source language too), no
threshold is fitted on any half of it; precision_transfer.py measures it under thresholds fitted on the
permitted sets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import beta
from sklearn.metrics import roc_auc_score

from bqas.offline.p_reject import LogisticModel, _shipped
from bqas.training.licences import check_use, measure_only
from bqas.trust.thresholds import decide, fit_tier

HALLU = ["rag_faithfulness_en", "hallucination_en", "attribution_en", "hallucination_zh"]
SETS = {
    **dict.fromkeys(HALLU, "rag_hallucination"),
    "pii_de": "rag_privacy",
    "rag_faithfulness_memerag": "rag_hallucination",
}
TARGETS = [(0.02, 0.05), (0.05, 0.05), (0.10, 0.10)]


def _load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


IN_SAMPLE = {"rag_faithfulness_en", "hallucination_en", "attribution_en", "hallucination_zh", "pii_de"}


def _engine_p(row: dict, model: LogisticModel) -> float:
    """The offline p_reject the engine gives: the provider's (learned grounding scorer) where it scored,
    else the shipped generic model on the same features (recomputed, so a refitted model counts)."""
    if row.get("p_method") == "learned-grounding":
        return float(row["p_reject"])
    if row.get("p_reject") is None and row.get("p_method") is None:
        return np.nan  # the model refused (evidence outside its training data): never auto-decided
    return model.predict(row["features"])


def halves(
    scores: np.ndarray, y: np.ndarray, fnr: float, fpr: float, splits: int, seed: int, precision: float | None = 0.9
) -> dict:
    rng = np.random.default_rng(seed)
    cov, r_fnr, r_fpr, v_fnr, v_fpr, s_fnr, s_fpr = [], [], [], [], [], [], []
    decided = {"accept": [0, 0], "reject": [0, 0]}  # [decided, agree] summed over the test halves
    s_prec = {"accept": [], "reject": []}  # test half demonstrates precision below the target
    for _ in range(splits):
        idx = rng.permutation(len(y))
        a, b = idx[: len(y) // 2], idx[len(y) // 2 :]
        fit = fit_tier(
            [None if np.isnan(s) else float(s) for s in scores[a]],
            list(y[a]),
            fnr_max=fnr,
            fpr_max=fpr,
            delta=0.1,
            precision_accept_min=precision,
            precision_reject_min=precision,
        )
        dec = np.array(
            [decide(None if np.isnan(s) else float(s), fit.accept.threshold, fit.reject.threshold) for s in scores[b]]
        )
        yb = y[b]
        cov.append(float(np.mean(dec != "escalate")))
        fn = float(np.sum((dec == "accept") & yb) / max(1, yb.sum()))
        fp = float(np.sum((dec == "reject") & ~yb) / max(1, (~yb).sum()))
        r_fnr.append(fn)
        r_fpr.append(fp)
        v_fnr.append(fn > fnr)
        v_fpr.append(fp > fpr)
        # A violation the test half demonstrates: its one-sided 90 % lower bound lies above the target.
        k_fn, k_fp = int(np.sum((dec == "accept") & yb)), int(np.sum((dec == "reject") & ~yb))
        s_fnr.append(k_fn > 0 and beta.ppf(0.1, k_fn, yb.sum() - k_fn + 1) > fnr)
        s_fpr.append(k_fp > 0 and beta.ppf(0.1, k_fp, (~yb).sum() - k_fp + 1) > fpr)
        for side, wrong in (("accept", yb), ("reject", ~yb)):
            mine = dec == side
            n_dec, n_wrong = int(mine.sum()), int((mine & wrong).sum())
            decided[side][0] += n_dec
            decided[side][1] += n_dec - n_wrong
            # Demonstrated: the one-sided 90 % lower bound of the error share lies above 1 - target.
            if precision is not None and n_wrong > 0:
                s_prec[side].append(beta.ppf(0.1, n_wrong, n_dec - n_wrong + 1) > 1 - precision)
            else:
                s_prec[side].append(False)
    return {
        "coverage": float(np.mean(cov)),
        "fnr": float(np.mean(r_fnr)),
        "fpr": float(np.mean(r_fpr)),
        "fnr_exceeded": float(np.mean(v_fnr)),
        "fpr_exceeded": float(np.mean(v_fpr)),
        "fnr_violated": float(np.mean(s_fnr)),
        "fpr_violated": float(np.mean(s_fpr)),
        "coverage_min": float(np.min(cov)),
        # Of all auto-accepts / auto-rejects on the test halves: how many, and how many people agree with.
        "accept_decided": decided["accept"][0],
        "accept_agree": decided["accept"][1],
        "reject_decided": decided["reject"][0],
        "reject_agree": decided["reject"][1],
        "accept_precision_violated": float(np.mean(s_prec["accept"])),
        "reject_precision_violated": float(np.mean(s_prec["reject"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=Path, default=Path("/tmp/bqas-trust/features"))
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--precision", type=float, default=0.9, help="precision target per side (0: none)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None, help="print the docs table of a --json file")
    args = parser.parse_args()
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return
    data = {s: _load(args.features / f"{s}.jsonl") for s in SETS if (args.features / f"{s}.jsonl").exists()}
    groups: list[tuple[str, str, list[dict]]] = []
    for name, rows in data.items():
        groups.append((name, SETS[name], rows))
        if name == "rag_faithfulness_memerag":
            for lang in ("en", "es", "fr"):
                groups.append(
                    (f"memerag_{lang}", "rag_hallucination", [r for r in rows if f"lang:{lang}" in r["tags"]])
                )
    out = []
    for name, judge, rows in groups:
        model = _shipped(judge)
        assert model is not None
        y = np.array([r["reject"] for r in rows], dtype=bool)
        base = name.split("_memerag")[0] if name.startswith("memerag_") else name
        scores: dict[str, np.ndarray] = {"offline p_reject": np.array([_engine_p(r, model) for r in rows])}
        scores["raw risk"] = np.array([np.nan if r["risk"] is None else r["risk"] for r in rows])
        learned = sum(1 for r in rows if r.get("p_method") == "learned-grounding")
        for kind, s in scores.items():
            ok = ~np.isnan(s)
            auc = roc_auc_score(y[ok], s[ok]) if ok.any() and 0 < y[ok].sum() < ok.sum() else None
            row = {
                "set": name,
                "score": kind,
                # Fitted on this set's DEV rows: the learned grounding scorer (MTRAG, BEGIN, HalluQA) and/or
                # the generic p_reject model (those and HaluEval, GermEval). MEMERAG: never.
                "in_sample": kind == "offline p_reject" and base in IN_SAMPLE,
                "n": len(y),
                "rejects": int(y.sum()),
                "scored": int(ok.sum()),
                "learned_scorer_rows": learned,
                "roc_auc": auc,
                "distinct": len(np.unique(s[ok])),
                "targets": {},
            }
            # MEMERAG (CC BY-NC) is for measuring only: no threshold is fitted on any part of it. Its
            # decisions under thresholds fitted on the permitted sets: precision_transfer.py.
            evaluation_only = measure_only(name) is not None
            if not evaluation_only:
                check_use(name, "choose")
            for fnr, fpr in [] if evaluation_only else TARGETS:
                row["targets"][f"{fnr:g}/{fpr:g}"] = halves(
                    s, y, fnr, fpr, args.splits, seed=7, precision=args.precision or None
                )
            out.append(row)
            t = row["targets"]
            cells = " | ".join(
                f"{v['coverage']:.1%} · FNR {v['fnr']:.1%} ({v['fnr_exceeded']:.0%}/{v['fnr_violated']:.0%}) · "
                f"FPR {v['fpr']:.1%} ({v['fpr_exceeded']:.0%}/{v['fpr_violated']:.0%})"
                for v in t.values()
            )
            auc_s = "—" if auc is None else f"{auc:.3f}"
            print(
                f"| {name} | {kind}{' (in-sample)' if row['in_sample'] else ''} | {len(y)} ({y.sum()}) | {auc_s} | {cells} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


def markdown(rows: list[dict]) -> str:
    """The table of docs/calibration.md from the JSON rows (``--markdown FILE.json``)."""

    def prec(v: dict, side: str) -> str:
        n, k = v.get(f"{side}_decided", 0), v.get(f"{side}_agree", 0)
        return "–" if not n else f"{k / n:.0%}"

    def cell(v: dict) -> str:
        return (
            f"{v['coverage']:.1%} · {v['fnr']:.1%} / {v['fpr']:.1%} · {v['fnr_violated']:.0%} / {v['fpr_violated']:.0%}"
            + (f" · {prec(v, 'accept')} / {prec(v, 'reject')}" if "accept_decided" in v else "")
        )

    out = [
        "| set | p_reject score | n (rejects) | ROC-AUC | FNR ≤ 2 %, FPR ≤ 5 % | FNR ≤ 5 %, FPR ≤ 5 % | FNR ≤ 10 %, FPR ≤ 10 % |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        kind = r["score"] + (" (in-sample)" if r["in_sample"] else "")
        auc = "—" if r["roc_auc"] is None else f"{r['roc_auc']:.3f}"
        cells = " | ".join(cell(v) for v in r["targets"].values()) or "evaluation-only: no thresholds fitted on it | | "
        out.append(f"| {r['set']} | {kind} | {r['n']} ({r['rejects']}) | {auc} | {cells} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
