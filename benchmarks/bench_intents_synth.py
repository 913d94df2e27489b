"""Offline intent classifier on synthetic teacher commands of all 19 intents (typos and dialects).

The test commands come from ``bqas synth``'s offline generator (the shipped patterns, word lists, typo
and dialect rules) with seeds that no training command was drawn from. Two settings:

1. ``unseen-seed``: the classifier as shipped (its examples file) on commands drawn with the test seed
   from every pattern. The training commands in the examples file were drawn with other seeds, so a
   test command repeats a training command only by chance (counted and printed: ``exact overlap``).
2. ``unseen-pattern`` (stricter): each intent's patterns are split in two halves (even / odd index);
   a classifier is fitted on the hand-written examples plus commands from the even half (training
   seeds) and tested on commands from the odd half (test seed). Word lists, typo and dialect rules
   are still shared: both halves come from the same generator family.

Variants per intent: plain, typos, de-AT (+typos), de-CH (+typos), bavarian (+typos).

    .venv/bin/python benchmarks/bench_intents_synth.py [--per 10] [--seed 20261201] [--matrix FILE.md]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from bqas.intents.classifier import EmbeddingIntentClassifier
from bqas.intents.evaluate import evaluate_predictions
from bqas.intents.examples import Labelled, default_examples_path, load_labelled
from bqas.intents.training import TRAIN_SEEDS, VARIANTS, is_synthetic, synthetic_commands
from bqas.synth.dedup import normalise
from bqas.synth.patterns import PatternBook, load_patterns

TEST_SEED = 20261201


def _halves(book: PatternBook, keep: int) -> PatternBook:
    """The book with every intent's patterns of index parity ``keep`` only."""
    intents = {
        name: replace(entry, patterns=[p for i, p in enumerate(entry.patterns) if i % 2 == keep] or entry.patterns)
        for name, entry in book.intents.items()
    }
    return PatternBook(book.slots, intents)


def _report(name: str, clf: EmbeddingIntentClassifier, test: dict[str, list[Labelled]]) -> dict[str, float]:
    out: dict[str, float] = {}
    allrows = [row for rows in test.values() for row in rows]
    start = time.perf_counter()
    preds = clf.predict([r.text for r in allrows])
    ms = 1000 * (time.perf_counter() - start) / max(1, len(allrows))
    ev = evaluate_predictions([r.label for r in allrows], [p.label for p in preds])
    out["all"] = ev.accuracy
    i = 0
    for variant, rows in test.items():
        got = preds[i : i + len(rows)]
        i += len(rows)
        out[variant] = sum(p.label == r.label for p, r in zip(got, rows, strict=True)) / len(rows)
    cells = "  ".join(f"{k} {100 * v:5.1f}" for k, v in out.items())
    print(f"  {name:<34} {cells}   macro-F1 {100 * ev.macro_f1:5.1f}   {ms:.2f} ms/text")
    return out


def _matrix(clf: EmbeddingIntentClassifier, test: dict[str, list[Labelled]]) -> str:
    rows = [row for rows in test.values() for row in rows]
    preds = [p.label for p in clf.predict([r.text for r in rows])]
    labels = sorted({r.label for r in rows} | set(preds))
    counts = Counter((r.label, p) for r, p in zip(rows, preds, strict=True))
    short = {lab: lab[:6] for lab in labels}
    head = "| expected \\ predicted | " + " | ".join(short[lab] for lab in labels) + " | recall |"
    lines = [head, "|" + "---|" * (len(labels) + 2)]
    for lab in labels:
        total = sum(counts[(lab, p)] for p in labels)
        cells = [str(counts[(lab, p)]) if counts[(lab, p)] else "·" for p in labels]
        lines.append(f"| {lab} | " + " | ".join(cells) + f" | {100 * counts[(lab, lab)] / max(1, total):.0f} % |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per", type=int, default=10, help="test commands per intent and variant")
    parser.add_argument("--seed", type=int, default=TEST_SEED, help="seed of the test commands")
    parser.add_argument("--matrix", type=Path, help="write the confusion matrix (Markdown) of the shipped classifier")
    args = parser.parse_args()
    if args.seed in TRAIN_SEEDS:
        raise SystemExit(f"--seed {args.seed} is one of the training seeds {TRAIN_SEEDS}")
    book = load_patterns()
    intents = sorted(book.intents)
    test = {v: synthetic_commands(book, intents, [args.seed], v, args.per) for v in VARIANTS}
    shipped = load_labelled(default_examples_path())
    seen = {normalise(e.text) for e in shipped}
    overlap = sum(normalise(r.text) in seen for rows in test.values() for r in rows)
    n = sum(len(rows) for rows in test.values())
    print(f"unseen-seed: {n} test commands (seed {args.seed}), {len(intents)} intents; exact overlap with the")
    print(f"  shipped examples: {overlap} ({100 * overlap / n:.1f} %)")
    hand = [e for e in shipped if not is_synthetic(e)]
    for method in ("centroid", "knn", "logreg"):
        _report(f"{method}, hand-written examples only", EmbeddingIntentClassifier(hand, method=method), test)  # type: ignore[arg-type]
    for method in ("centroid", "logreg"):
        _report(f"{method}, shipped examples", EmbeddingIntentClassifier(shipped, method=method), test)  # type: ignore[arg-type]
    default = EmbeddingIntentClassifier(shipped)
    _report(f"default ({default.method}), shipped examples", default, test)

    train_book, test_book = _halves(book, 0), _halves(book, 1)
    held = {v: synthetic_commands(test_book, intents, [args.seed], v, args.per) for v in VARIANTS}
    per_train = max(1, round(len([e for e in shipped if is_synthetic(e)]) / len(intents) / len(VARIANTS)))
    train = hand + [
        row for v in VARIANTS for row in synthetic_commands(train_book, intents, list(TRAIN_SEEDS), v, per_train)
    ]
    print(f"unseen-pattern: fitted on {len(train)} examples (even-index patterns), tested on odd-index patterns")
    for method in ("centroid", "logreg"):
        _report(f"{method}, even-half examples", EmbeddingIntentClassifier(train, method=method), held)  # type: ignore[arg-type]
    if args.matrix:
        args.matrix.write_text(_matrix(default, test) + "\n", encoding="utf-8")
        print(f"confusion matrix of the default classifier (unseen-seed): {args.matrix}")


if __name__ == "__main__":
    random.seed(0)
    main()
