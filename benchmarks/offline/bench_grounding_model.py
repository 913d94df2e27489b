"""Cross-dataset figures of the learned grounding scorer (docs/calibration.md, docs/grounding-model.md).

    nice .venv/bin/python benchmarks/offline/bench_grounding_model.py --data ../shared/datasets [--cache FILE]

For each trainable dataset (MTRAG, BEGIN, HalluQA) a model is trained with the shipped recipe
(:func:`bqas.training.grounding.train.train`: its own inner leave-one-dataset-out calibration and
threshold) on everything *except* that dataset and the synthetic examples made from its passages, and
measured on it at that model's threshold (nested leave-one-dataset-out). MEMERAG en/es/fr (CC BY-NC,
measuring only) is measured with the model trained on all three, i.e. the recipe of the shipped file.
Beside it: the rule-based scorer of the same analysis (grounding_score = share of supported claims,
the invention gate = any unsupported number/date/entity/quote), so the gain is read side by side.

Printed per set: n (positives = unfaithful), unscored (no checkable claim), ROC-AUC, balanced accuracy,
FPR and FNR at the threshold without the unscored, and FNR counting unscored as accept; held-out sets
also at the shipped recipe's threshold (the model trained on all three). HaluEval (``hallucination_en``,
MIT) has no reference text: every answer is unscored ("no facts"), which the table shows as such.
``--cache`` keeps the features (JSON Lines) so that a re-run only refits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bqas.offline.grounding_features import FEATURE_NAMES
from bqas.offline.grounding_model import GroundingModel
from bqas.training.grounding.datasets import Example, load_halueval, load_memerag
from bqas.training.grounding.train import Featurized, build_examples, dataset_of, featurize, metrics, train

ROOT = Path(__file__).resolve().parents[2]


def _featurize_cached(examples: list[Example], cache: Path | None) -> tuple[Featurized, float]:
    """Features of ``examples`` (from ``cache`` when it has all of them) and seconds per example."""
    if cache is not None and cache.is_file():
        rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
        if len(rows) == len(examples):
            out = Featurized()
            for ex, row in zip(examples, rows, strict=True):
                if row is None:
                    out.unscored[ex.source] = out.unscored.get(ex.source, 0) + 1
                else:
                    out.rows.append((ex, row))
            return out, float("nan")
    t0 = time.perf_counter()
    feats = featurize(examples, progress=lambda i, n: print(f"  features {i}/{n}", file=sys.stderr))
    per = (time.perf_counter() - t0) / max(1, len(examples))
    if cache is not None:
        by_id = {id(ex): x for ex, x in feats.rows}
        cache.write_text("\n".join(json.dumps(by_id.get(id(ex))) for ex in examples) + "\n", encoding="utf-8")
    return feats, per


def _figures(labels: list[int], probs: list[float | None], threshold: float) -> dict[str, Any]:
    scored = [(y, p) for y, p in zip(labels, probs, strict=True) if p is not None]
    m = metrics([y for y, _ in scored], [p for _, p in scored], threshold)
    pos = sum(labels)
    missed = sum(1 for y, p in zip(labels, probs, strict=True) if y and (p is None or p < threshold))
    m["unscored"] = len(labels) - len(scored)
    m["n"] = len(labels)
    m["positives"] = pos
    m["fnr_unscored_accept"] = missed / pos if pos else None
    return m


def _row(name: str, scorer: str, m: dict[str, Any]) -> str:
    def pct(v: Any) -> str:
        return "–" if v is None else f"{100 * v:.1f} %"

    def num(v: Any) -> str:
        return "–" if v is None else f"{v:.3f}"

    return (
        f"| {name} | {scorer} | {m['n']} ({m['positives']}) | {m['unscored']} | {num(m['roc_auc'])} | "
        f"{num(m['balanced_accuracy'])} | {pct(m['fpr'])} | {pct(m['fnr'])} | {pct(m['fnr_unscored_accept'])} |"
    )


def _score(model: GroundingModel, feats: Featurized, examples: list[Example]) -> list[float | None]:
    by_id = {id(ex): x for ex, x in feats.rows}
    return [model.probability(by_id[id(ex)]) if id(ex) in by_id else None for ex in examples]


def _rules(feats: Featurized, examples: list[Example]) -> tuple[list[float | None], list[float | None]]:
    """The rule-based scorer on the same analysis: 1 - supported share, and the invention gate (0/1)."""
    by_id = {id(ex): x for ex, x in feats.rows}
    i_share, i_gate = FEATURE_NAMES.index("share_supported"), FEATURE_NAMES.index("invented_share")
    share = [1.0 - by_id[id(ex)][i_share] if id(ex) in by_id else None for ex in examples]
    gate = [float(by_id[id(ex)][i_gate] > 0) if id(ex) in by_id else None for ex in examples]
    return share, gate


def data_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every grounding bench reads its data with: the datasets folder, the scenarios' data
    folder and the split seed."""
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--scenarios", type=Path, default=ROOT / "scenarios" / "data")
    parser.add_argument("--seed", type=int, default=0)


def cached_rows(data: Path, scenarios: Path, seed: int, cache: Path) -> list[tuple[Example, list[float]]]:
    """(example, features) of the trainable and MEMERAG examples from the feature cache :func:`main` wrote
    (same data, seed and perturbation kinds); exits naming the file when it is not that cache."""
    examples = build_examples(data, scenarios, seed) + load_memerag(data / "rag_faithfulness_memerag.jsonl")
    cached = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    if len(cached) != len(examples) or len(next(c for c in cached if c)) != len(FEATURE_NAMES):
        raise SystemExit(
            f"{cache}: not the feature cache of these examples and features; rerun bench_grounding_model.py"
        )
    return [(e, x) for e, x in zip(examples, cached, strict=True) if x is not None]


def set_kinds(kinds: str) -> None:
    """Use these synthetic perturbation kinds (``negate,number,entity,invent,invent`` = recipe 1's)."""
    from bqas.training.grounding import synthetic as gd

    if kinds:
        gd.KINDS = tuple(k.strip() for k in kinds.split(",") if k.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data_arguments(parser)
    parser.add_argument("--cache", type=Path, default=None, help="feature cache (JSON Lines)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument("--kinds", default="", help="synthetic perturbation kinds (bench_grounding_recipes.py)")
    args = parser.parse_args(argv)
    set_kinds(args.kinds)

    train_examples = build_examples(args.data, args.scenarios, args.seed)
    memerag_path = args.data / "rag_faithfulness_memerag.jsonl"
    eval_examples = load_memerag(memerag_path) if memerag_path.is_file() else []
    halueval_path = args.data / "hallucination_en.jsonl"
    halueval = load_halueval(halueval_path) if halueval_path.is_file() else []
    examples = train_examples + eval_examples
    cache = args.cache
    feats, per = _featurize_cached(examples, cache)
    print(f"data: {args.data} ({len(train_examples)} trainable incl. synthetic, {len(eval_examples)} MEMERAG)")
    if per == per:
        print(f"feature extraction: {1000 * per:.1f} ms per example (whole run, model load included)")
    train_ids = {id(ex) for ex in train_examples}
    train_feats = Featurized([r for r in feats.rows if id(r[0]) in train_ids], {})

    header = (
        "| set | scorer | n (unfaithful) | unscored | ROC-AUC | bal. acc. | FPR | FNR | FNR (unscored = accept) |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    print(header)
    results: dict[str, Any] = {}
    full = GroundingModel.from_json(train(train_feats, seed=args.seed))
    datasets = sorted({ex.source for ex in train_examples if not ex.source.startswith("synthetic:")})
    for held in datasets:
        rows = [r for r in train_feats.rows if dataset_of(r[0].source) != held]
        model = GroundingModel.from_json(train(Featurized(rows, {}), seed=args.seed))
        test = [ex for ex in train_examples if ex.source == held]
        labels = [ex.label for ex in test]
        m = _figures(labels, _score(model, feats, test), model.threshold)
        results[f"{held} (held out)"] = m
        print(_row(f"{held} (held out)", f"learned, t={model.threshold:.3f}", m))
        at_shipped = _figures(labels, _score(model, feats, test), full.threshold)
        results[f"{held} (held out, shipped threshold)"] = at_shipped
        print(_row(f"{held} (held out)", f"learned, shipped t={full.threshold:.3f}", at_shipped))
        share, gate = _rules(feats, test)
        print(_row(held, "rules: 1 - supported share, t=0.5", _figures(labels, share, 0.5)))
        print(_row(held, "rules: invention gate", _figures(labels, gate, 0.5)))
    for lang in ("en", "es", "fr"):
        test = [ex for ex in eval_examples if ex.language == lang]
        if not test:
            continue
        labels = [ex.label for ex in test]
        m = _figures(labels, _score(full, feats, test), full.threshold)
        results[f"memerag-{lang}"] = m
        print(_row(f"MEMERAG {lang}", f"learned (all three), t={full.threshold:.3f}", m))
        share, gate = _rules(feats, test)
        print(_row(f"MEMERAG {lang}", "rules: 1 - supported share, t=0.5", _figures(labels, share, 0.5)))
        print(_row(f"MEMERAG {lang}", "rules: invention gate", _figures(labels, gate, 0.5)))
    if halueval:
        # No reference text: nothing to ground against, so every answer is unscored (never a guess).
        m = _figures([ex.label for ex in halueval], [None] * len(halueval), full.threshold)
        results["halueval"] = m
        print(_row("HaluEval (no facts)", f"learned (all three), t={full.threshold:.3f}", m))
    print(f"shipped recipe: {full.model_id}, features {', '.join(full.features)}")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
