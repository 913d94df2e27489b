"""Precision of automatic decisions out of sample: thresholds fitted on permitted DEV sets, applied to MEMERAG.

    .venv/bin/python benchmarks/trust/prepare_gold.py
    nice .venv/bin/python benchmarks/trust/dump_features.py
    .venv/bin/python benchmarks/trust/precision_transfer.py [--features DIR] [--json out.json]

For each fit set (MTRAG, BEGIN, HalluQA leave-one-out, HaluEval, and all four pooled: the sets whose
licences allow fitting) and each target pair, thresholds are fitted on the set's offline p_reject (the
score the engine gives, see figures.py) twice: with the class-rate targets alone (profiles before the
precision guarantee) and with them plus precision >= 0.9 on each side (the default now). Both are applied
to the fit set itself (in-sample) and to MEMERAG en, es and fr (CC BY-NC: measured only, never fitted on),
and the script prints, per side, how many items each decides there and how many of those people agree
with. Only the FNR/FPR/precision
arithmetic of bqas.trust.thresholds is used, on the cached features; no judge runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bqas.offline.p_reject import _shipped
from bqas.training.licences import check_use
from bqas.trust.thresholds import decide, fit_tier

FIT_SETS = ["rag_faithfulness_en", "attribution_en", "hallucination_zh", "hallucination_en"]
TARGETS = [(0.02, 0.05), (0.10, 0.10)]


def _load(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _scores(rows: list[dict]) -> tuple[list[float | None], list[bool]]:
    from figures import _engine_p  # same directory: the engine's offline p_reject from the cached features

    model = _shipped("rag_hallucination")
    assert model is not None
    s = [_engine_p(r, model) for r in rows]
    return [None if np.isnan(v) else float(v) for v in s], [bool(r["reject"]) for r in rows]


def _apply(fit: object, scores: list[float | None], y: list[bool]) -> dict[str, int]:
    acc_t, rej_t = fit.accept.threshold, fit.reject.threshold  # type: ignore[attr-defined]
    out = {"accepted": 0, "accept_agree": 0, "rejected": 0, "reject_agree": 0, "n": len(y)}
    for s, rej in zip(scores, y, strict=True):
        d = decide(s, acc_t, rej_t)
        if d == "accept":
            out["accepted"] += 1
            out["accept_agree"] += int(not rej)
        elif d == "reject":
            out["rejected"] += 1
            out["reject_agree"] += int(rej)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--features", type=Path, default=Path("/tmp/bqas-trust/features"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    for name in FIT_SETS:
        check_use(name, "choose")
    fit_data = {name: _scores(_load(args.features / f"{name}.jsonl")) for name in FIT_SETS}
    fit_data["pooled"] = (
        [s for n in FIT_SETS for s in fit_data[n][0]],
        [y for n in FIT_SETS for y in fit_data[n][1]],
    )
    mem = _load(args.features / "rag_faithfulness_memerag.jsonl")
    tests = {lang: _scores([r for r in mem if f"lang:{lang}" in r["tags"]]) for lang in ("en", "es", "fr")}
    tests["en+es+fr"] = _scores(mem)
    rows = []
    print("| fitted on | targets | guarantee | MEMERAG | auto-accepts (agree) | auto-rejects (agree) |")
    print("|---|---|---|---|---:|---:|")
    for fit_name, (s, y) in fit_data.items():
        for fnr, fpr in TARGETS:
            for label, prec in (("class rates only (before)", None), ("+ precision >= 0.9 (now)", 0.9)):
                fit = fit_tier(
                    s, y, fnr_max=fnr, fpr_max=fpr, delta=0.1, precision_accept_min=prec, precision_reject_min=prec
                )
                for lang, (ts, ty) in [("fit set (in-sample)", (s, y)), *tests.items()]:
                    r = _apply(fit, ts, ty)
                    row = {"fit": fit_name, "fnr_max": fnr, "fpr_max": fpr, "precision_min": prec, "test": lang, **r}
                    rows.append(row)
                    acc = f"{r['accepted']} ({r['accept_agree']})" if r["accepted"] else "0"
                    rej = f"{r['rejected']} ({r['reject_agree']})" if r["rejected"] else "0"
                    print(
                        f"| {fit_name} | FNR ≤ {fnr:g}, FPR ≤ {fpr:g} | {label} | {lang} | {acc} | {rej} |", flush=True
                    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
