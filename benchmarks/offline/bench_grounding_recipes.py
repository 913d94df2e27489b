"""Which training recipe of the learned grounding scorer transfers best: nested leave-one-dataset-out.

    nice .venv/bin/python benchmarks/offline/bench_grounding_recipes.py --data ../shared/datasets \
        --cache /tmp/grounding-features.jsonl [--only all,length-free]

Reads the feature cache that ``bench_grounding_model.py --cache`` writes (same data, seed and order) and
runs each :class:`bqas.training.grounding.train.Recipe` through the real ``train()`` *nested*: for each
training dataset (MTRAG, BEGIN, HalluQA) the whole recipe (feature selection, fit, Platt calibration,
threshold) runs without it and without the synthetic examples made from its passages, and is measured on
it at that run's own threshold (ROC-AUC, balanced accuracy, FPR, FNR). The recipe to ship is chosen on
these figures only. MEMERAG en/es/fr (CC BY-NC, measured only) is printed for the recipe fitted on all
three at its threshold; it is never used to choose.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench_grounding_model import cached_rows, data_arguments, set_kinds

from bqas.offline.grounding_model import GroundingModel
from bqas.training.grounding import train as gt
from bqas.training.grounding.datasets import Example
from bqas.training.licences import measure_only

ROOT = Path(__file__).resolve().parents[2]
Rows = list[tuple[Example, list[float]]]
_NOT_LENGTH_FREE_MINMAX = ("sim_min", "lex_min", "best_lex_min", "novel_weakest_q", "most_novel_sim")

#: The candidates compared (the shipped one is ``gt.SHIPPED``).
RECIPES: dict[str, gt.Recipe] = {
    "all": gt.Recipe(3),  # recipe 3 (all features to choose from) with the single-sentence sim2 fix
    "all-fpr35": gt.Recipe(3, max_fpr=0.35),
    "length-free": gt.Recipe(4, candidates=gt.LENGTH_FREE),
    "length-free-fpr35": gt.Recipe(4, candidates=gt.LENGTH_FREE, max_fpr=0.35),
    "length-free-weakest": gt.Recipe(4, candidates=gt.LENGTH_FREE + _NOT_LENGTH_FREE_MINMAX),
    "length-free-worst-t": gt.Recipe(4, candidates=gt.LENGTH_FREE, threshold_objective="worst"),
    "length-free-mean": gt.Recipe(4, candidates=gt.LENGTH_FREE, selection="mean"),
    "length-free-supported": gt.SHIPPED,  # shipped since 2026-12-01 (with synthetic.KINDS)
    "length-free-sim": gt.Recipe(4, candidates=gt.LENGTH_FREE, forced=("sim_mean",)),
}


def _scores(model: GroundingModel, rows: Rows) -> tuple[list[int], list[float]]:
    return [e.label for e, _ in rows], [model.probability(x) for _, x in rows]


def _cells(m: dict[str, Any]) -> str:
    auc, ba, fpr, fnr = m["roc_auc"], m["balanced_accuracy"], m["fpr"], m["fnr"]
    return f"{auc:.3f} / {ba:.3f} / {100 * fpr:.0f} / {100 * fnr:.0f}"


def evaluate(recipe: gt.Recipe, train: Rows, mem: Rows, seed: int) -> dict[str, Any]:
    """Nested leave-one-dataset-out figures of ``recipe`` and MEMERAG with the recipe on all three."""
    out: dict[str, Any] = {}
    held_models: dict[str, GroundingModel] = {}
    for ds in ("begin", "halluqa", "mtrag"):
        inner = [r for r in train if gt.dataset_of(r[0].source) != ds]
        model = GroundingModel.from_json(gt.train(gt.Featurized(inner, {}), seed=seed, recipe=recipe))
        held_models[ds] = model
        ys, ps = _scores(model, [r for r in train if r[0].source == ds])
        out[ds] = gt.metrics(ys, ps, model.threshold) | {"threshold": model.threshold, "features": model.features}
    full = GroundingModel.from_json(gt.train(gt.Featurized(train, {}), seed=seed, recipe=recipe))
    for ds in ("begin", "halluqa", "mtrag"):
        # The held-out model's scores at the threshold the recipe ships (the one fitted on all three).
        inner_model = held_models[ds]
        ys, ps = _scores(inner_model, [r for r in train if r[0].source == ds])
        out[f"{ds}@shipped-t"] = gt.metrics(ys, ps, full.threshold)
    for lang in ("en", "es", "fr"):
        ys, ps = _scores(full, [r for r in mem if r[0].source == f"memerag-{lang}"])
        if ys:
            out[f"memerag-{lang}"] = gt.metrics(ys, ps, full.threshold)
    out["shipped"] = {"threshold": full.threshold, "features": list(full.features)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    data_arguments(parser)
    parser.add_argument("--cache", type=Path, required=True, help="feature cache of bench_grounding_model.py")
    parser.add_argument("--only", default="", help="comma-separated recipe names (default: all)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument(
        "--kinds",
        default="",
        help="synthetic perturbation kinds, comma-separated (default: synthetic.KINDS; the LLM-like set: "
        "negate,number,entity,invent,invent,generalise,attribute,detail)",
    )
    args = parser.parse_args(argv)
    set_kinds(args.kinds)

    rows = cached_rows(args.data, args.scenarios, args.seed, args.cache)
    train = [r for r in rows if measure_only(r[0].source) is None]
    mem = [r for r in rows if r[0].source.startswith("memerag")]
    wanted = [n.strip() for n in args.only.split(",") if n.strip()] or list(RECIPES)
    print(f"data: {args.data}; cells: ROC-AUC / balanced accuracy / FPR % / FNR % at the run's own threshold")
    print("| recipe | BEGIN (held out) | HalluQA (held out) | MTRAG (held out) | MEMERAG en | es | fr | t | features |")
    print("|---|---|---|---|---|---|---|---:|---|")
    results: dict[str, Any] = {}
    for name in wanted:
        r = results[name] = evaluate(RECIPES[name], train, mem, args.seed)
        cells = [_cells(r[k]) for k in ("begin", "halluqa", "mtrag", "memerag-en", "memerag-es", "memerag-fr")]
        held_t = "/".join(f"{r[k]['threshold']:.2f}" for k in ("begin", "halluqa", "mtrag"))
        at_t = " | ".join(_cells(r[f"{k}@shipped-t"]) for k in ("begin", "halluqa", "mtrag"))
        print(
            f"| {name} | " + " | ".join(cells) + f" | {r['shipped']['threshold']:.3f} (held out {held_t}) | "
            f"{', '.join(r['shipped']['features'])} |",
            flush=True,
        )
        print(f"| {name}, held out at t={r['shipped']['threshold']:.3f} | {at_t} | | | | | |", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
