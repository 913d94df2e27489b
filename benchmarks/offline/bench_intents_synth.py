"""Offline intent classifier on teacher commands of all 19 intents (typos and dialects).

Test commands come from ``bqas synth``'s offline generator (the shipped patterns, word lists, typo and
dialect rules) with a seed that no training command was drawn from, and from the hand-written examples.
Three settings:

1. ``unseen-seed`` (in-distribution): the classifier as shipped (its examples file) on commands drawn
   with the test seed from every pattern. Training commands come from the same patterns with other seeds,
   so a test command repeats a training command only by chance (counted: ``exact overlap``).
2. ``unseen-pattern`` (held-out phrasings): each intent's patterns are split by index; the odd-index ones
   are held out. A classifier is fitted on the hand-written examples plus commands of the even-index
   patterns (training seeds) and tested on commands of the odd-index patterns (test seed). Word lists,
   typo and dialect rules are still shared: both halves come from the same generator family.
3. ``hand-written folds``: the hand-written examples in 5 folds (every 5th line per intent); a classifier
   is fitted on all synthetic commands plus 4 folds and tested on the 5th (phrasings nobody generated).

``--validate`` instead splits the *training* (even-index) patterns once more (index % 4 == 0 fitted,
index % 4 == 2 validated): the classifier's settings were chosen there, never on the held-out patterns.
"before" rows use the round-2 recipe: embeddings only (``char_weight`` 0) and the first 5 hand-written
examples of each intent; "after" rows the shipped recipe.

Variants per intent: plain, typos, de-AT (+typos), de-CH (+typos), bavarian (+typos).

    .venv/bin/python benchmarks/offline/bench_intents_synth.py [--per 10] [--seed 20261201] [--matrix FILE.md]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from bqas.intents.classifier import CHAR_WEIGHT, EmbeddingIntentClassifier
from bqas.intents.evaluate import evaluate_predictions
from bqas.intents.examples import Labelled, default_examples_path, load_labelled
from bqas.intents.training import DEFAULT_PER, TRAIN_SEEDS, VARIANTS, is_synthetic, pattern_subset, synthetic_commands
from bqas.synth.dedup import normalise
from bqas.synth.patterns import PatternBook, load_patterns

TEST_SEED = 20261201
VALIDATION_SEED = 4242
ROUND2_HAND = 5  # hand-written examples per intent of the earlier recipe ("round 2" in docs/intents.md): the first ones of each intent in the file


def _first_per_label(rows: Sequence[Labelled], n: int) -> list[Labelled]:
    taken: Counter[str] = Counter()
    out = []
    for row in rows:
        if taken[row.label] < n:
            taken[row.label] += 1
            out.append(row)
    return out


def _report(name: str, clf: EmbeddingIntentClassifier, test: dict[str, list[Labelled]]) -> list[str]:
    """Print one row (accuracy per variant, macro-F1); return the predicted labels in test order."""
    allrows = [row for rows in test.values() for row in rows]
    start = time.perf_counter()
    scored = clf.predict([r.text for r in allrows])
    ms = 1000 * (time.perf_counter() - start) / max(1, len(allrows))
    preds = [p.label for p in scored]
    ece = _ece([p.score for p in scored], [p == r.label for p, r in zip(preds, allrows, strict=True)])
    ev = evaluate_predictions([r.label for r in allrows], preds)
    out = {"all": ev.accuracy}
    i = 0
    for variant, rows in test.items():
        got = preds[i : i + len(rows)]
        i += len(rows)
        out[variant] = sum(p == r.label for p, r in zip(got, rows, strict=True)) / len(rows)
    cells = "  ".join(f"{k} {100 * v:5.1f}" for k, v in out.items())
    print(f"  {name:<44} {cells}   macro-F1 {100 * ev.macro_f1:5.1f}   ECE {ece:.3f}   {ms:.2f} ms/text", flush=True)
    return preds


def _ece(scores: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """Expected calibration error: |accuracy - mean score| per score bin, weighted by the bin's share."""
    total = 0.0
    for b in range(bins):
        idx = [i for i, s in enumerate(scores) if b / bins < s <= (b + 1) / bins or (b == 0 and s == 0)]
        if idx:
            total += len(idx) * abs(sum(correct[i] for i in idx) / len(idx) - sum(scores[i] for i in idx) / len(idx))
    return total / max(1, len(scores))


def _matrix(rows: Sequence[Labelled], preds: Sequence[str]) -> str:
    labels = sorted({r.label for r in rows} | set(preds))
    counts = Counter((r.label, p) for r, p in zip(rows, preds, strict=True))
    head = "| expected \\ predicted | " + " | ".join(lab[:6] for lab in labels) + " | recall |"
    lines = [head, "|" + "---|" * (len(labels) + 2)]
    for lab in labels:
        total = sum(counts[(lab, p)] for p in labels)
        cells = [str(counts[(lab, p)]) if counts[(lab, p)] else "·" for p in labels]
        lines.append(f"| {lab} | " + " | ".join(cells) + f" | {100 * counts[(lab, lab)] / max(1, total):.0f} % |")
    pairs = Counter((r.label, p) for r, p in zip(rows, preds, strict=True) if r.label != p).most_common(8)
    lines += ["", "most confused (expected -> predicted): " + ", ".join(f"{a} -> {b} {n}" for (a, b), n in pairs)]
    return "\n".join(lines)


def _recipes(hand: list[Labelled], synthetic: list[Labelled]) -> list[tuple[str, list[Labelled], float]]:
    round2 = _first_per_label(hand, ROUND2_HAND)
    return [
        ("before: round-2 hand-written, embeddings", round2 + synthetic, 0.0),
        ("all hand-written, embeddings", hand + synthetic, 0.0),
        ("round-2 hand-written, embeddings + chars", round2 + synthetic, CHAR_WEIGHT),
        ("after: all hand-written, embeddings + chars", hand + synthetic, CHAR_WEIGHT),
    ]


def _pattern_setting(
    title: str, hand: list[Labelled], fit_book: PatternBook, test_book: PatternBook, seed: int, per: int
) -> tuple[list[Labelled], list[str]]:
    intents = sorted(fit_book.intents)
    test = {v: synthetic_commands(test_book, intents, [seed], v, per) for v in VARIANTS}
    synthetic = [
        row for v in VARIANTS for row in synthetic_commands(fit_book, intents, list(TRAIN_SEEDS), v, DEFAULT_PER)
    ]
    print(f"{title}: {sum(map(len, test.values()))} test commands (seed {seed})")
    preds: list[str] = []
    for name, train, weight in _recipes(hand, synthetic):
        preds = _report(name, EmbeddingIntentClassifier(train, char_weight=weight), test)
    return [row for rows in test.values() for row in rows], preds


def _hand_folds(hand: list[Labelled], synthetic: list[Labelled], folds: int = 5) -> None:
    """Each hand-written example is tested once, by a classifier fitted without its fold."""
    position: dict[str, int] = defaultdict(int)
    fold_of = []
    for row in hand:
        fold_of.append(position[row.label] % folds)
        position[row.label] += 1
    print(f"hand-written folds: {len(hand)} hand-written examples in {folds} folds, synthetic commands always fitted")
    for name, weight in (("embeddings only", 0.0), ("after: embeddings + chars", CHAR_WEIGHT)):
        y_true: list[str] = []
        y_pred: list[str] = []
        for k in range(folds):
            rest = [r for r, f in zip(hand, fold_of, strict=True) if f != k]
            fit = rest + synthetic
            test = [r for r, f in zip(hand, fold_of, strict=True) if f == k]
            y_true += [r.label for r in test]
            y_pred += [
                p.label for p in EmbeddingIntentClassifier(fit, char_weight=weight).predict([r.text for r in test])
            ]
        ev = evaluate_predictions(y_true, y_pred)
        print(f"  {name:<44} all {100 * ev.accuracy:5.1f}   macro-F1 {100 * ev.macro_f1:5.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per", type=int, default=10, help="test commands per intent and variant")
    parser.add_argument("--seed", type=int, default=TEST_SEED, help="seed of the test commands")
    parser.add_argument("--validate", action="store_true", help="only the validation split of the training patterns")
    parser.add_argument("--matrix", type=Path, help="write the confusion matrix (Markdown) of the held-out patterns")
    args = parser.parse_args()
    if args.seed in TRAIN_SEEDS:
        raise SystemExit(f"--seed {args.seed} is one of the training seeds {TRAIN_SEEDS}")
    book = load_patterns()
    intents = sorted(book.intents)
    shipped = load_labelled(default_examples_path())
    hand = [e for e in shipped if not is_synthetic(e)]
    if args.validate:
        fit_book, val_book = pattern_subset(book, lambda i: i % 4 == 0), pattern_subset(book, lambda i: i % 4 == 2)
        _pattern_setting("validation (training patterns only)", hand, fit_book, val_book, VALIDATION_SEED, args.per)
        return

    test = {v: synthetic_commands(book, intents, [args.seed], v, args.per) for v in VARIANTS}
    seen = {normalise(e.text) for e in shipped}
    overlap = sum(normalise(r.text) in seen for rows in test.values() for r in rows)
    n = sum(len(rows) for rows in test.values())
    print(f"unseen-seed: {n} test commands (seed {args.seed}), {len(intents)} intents; exact overlap with the")
    print(f"  shipped examples: {overlap} ({100 * overlap / n:.1f} %)")
    synthetic = [e for e in shipped if is_synthetic(e)]
    for name, train, weight in _recipes(hand, synthetic):
        _report(name, EmbeddingIntentClassifier(train, char_weight=weight), test)
    _report("shipped default", EmbeddingIntentClassifier(shipped), test)

    even, odd = pattern_subset(book, lambda i: i % 2 == 0), pattern_subset(book, lambda i: i % 2 == 1)
    rows, preds = _pattern_setting("unseen-pattern (odd-index patterns held out)", hand, even, odd, args.seed, args.per)
    _hand_folds(hand, synthetic)
    if args.matrix:
        args.matrix.write_text(_matrix(rows, preds) + "\n", encoding="utf-8")
        print(f"confusion matrix (after, held-out patterns): {args.matrix}")


if __name__ == "__main__":
    main()
