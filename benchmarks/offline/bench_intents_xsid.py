"""Offline intent classifier on xSID 0.7 (DEV parts in ../shared/datasets; CC BY-SA 4.0, not shipped).

Two settings, each for k-NN (k = 1, 3, 5, 10) and nearest centroid, with the default embedder (USE
multilingual v3 unless BQAS_EMBEDDER says otherwise):

1. cross-lingual: all English DEV utterances are the labelled examples; every other language's DEV file
   is the test set (de, de-ba Bavarian, gsw Swiss German, zh).
2. in-language few-shot: per language, the records are shuffled with ``random.Random(seed)`` and the
   first 5 of each intent become the examples; the rest is the test set. Intents with 5 records or fewer
   therefore have no test items. Seeds 0-4; mean and range over the seeds are printed.

``logreg`` runs twice: on the embeddings only (the earlier default, "round 2" in docs/intents.md) and with
the character n-grams beside them (the default now). BQAS's own hand-written teacher examples are measured in
benchmarks/offline/bench_intents_synth.py (hand-written folds).

    .venv/bin/python benchmarks/offline/bench_intents_xsid.py [--data ../shared/datasets]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import data_part

from bqas.intents.classifier import CHAR_WEIGHT, EmbeddingIntentClassifier
from bqas.intents.evaluate import evaluate_predictions
from bqas.intents.examples import Labelled, load_labelled
from bqas.offline.embeddings import default_embedder

LANGS = ("de", "de-ba", "gsw", "zh", "en")
#: (method, k, char_weight)
METHODS: list[tuple[str, int, float]] = [
    ("knn", 1, 0),
    ("knn", 3, 0),
    ("knn", 5, 0),
    ("knn", 10, 0),
    ("centroid", 0, 0),
    ("logreg", 0, 0),
    ("logreg", 0, CHAR_WEIGHT),
]


def _name(method: str, k: int, char_weight: float) -> str:
    if method == "logreg":
        return "logreg, embeddings + chars" if char_weight else "logreg, embeddings only"
    return f"knn k={k}" if method == "knn" else method


def _score(train: list[Labelled], test: list[Labelled], method: str, k: int, char_weight: float) -> tuple[float, float]:
    clf = EmbeddingIntentClassifier(train, method=method, k=max(1, k), char_weight=char_weight)  # type: ignore[arg-type]
    preds = clf.predict([t.text for t in test])
    ev = evaluate_predictions([t.label for t in test], [p.label for p in preds])
    return ev.accuracy, ev.macro_f1


def few_shot_split(data: list[Labelled], seed: int, shots: int = 5) -> tuple[list[Labelled], list[Labelled]]:
    """First ``shots`` per intent after a seeded shuffle are examples; the rest is the test set."""
    rows = list(data)
    random.Random(seed).shuffle(rows)
    taken: dict[str, int] = defaultdict(int)
    train, test = [], []
    for row in rows:
        if taken[row.label] < shots:
            taken[row.label] += 1
            train.append(row)
        else:
            test.append(row)
    return train, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "datasets")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    data = {lang: load_labelled(args.data / f"intents_{lang}.jsonl") for lang in LANGS}
    started = time.perf_counter()
    default_embedder().embed([r.text for rows in data.values() for r in rows])  # warm the cache once
    print(
        f"embedder: {default_embedder().name}; {sum(map(len, data.values()))} texts embedded in "
        f"{time.perf_counter() - started:.1f} s"
    )

    print(f"data: {data_part(args.data)}")
    print(f"\n## 1. cross-lingual: English ({len(data['en'])} utterances) as examples\n")
    print("| method | " + " | ".join(f"{lang} acc / macro-F1" for lang in LANGS[:-1]) + " |")
    print("|---|" + "---|" * (len(LANGS) - 1))
    for method, k, weight in METHODS:
        scores = [_score(data["en"], data[lang], method, k, weight) for lang in LANGS[:-1]]
        print(f"| {_name(method, k, weight)} | " + " | ".join(f"{a:.3f} / {f:.3f}" for a, f in scores) + " |")

    print(f"\n## 2. in-language, 5 examples per intent, rest as test (mean [min-max] over seeds 0-{args.seeds - 1})\n")
    sizes = {lang: few_shot_split(data[lang], 0) for lang in LANGS}
    print(
        "test sizes (seed 0): "
        + ", ".join(f"{lang} {len(te)} (examples {len(tr)})" for lang, (tr, te) in sizes.items())
    )
    print("\n| method | " + " | ".join(f"{lang} acc / macro-F1" for lang in LANGS) + " |")
    print("|---|" + "---|" * len(LANGS))
    for method, k, weight in METHODS:
        cells: list[str] = []
        for lang in LANGS:
            accs, f1s = [], []
            for seed in range(args.seeds):
                train, test = few_shot_split(data[lang], seed)
                a, f = _score(train, test, method, k, weight)
                accs.append(a)
                f1s.append(f)
            cells.append(
                f"{statistics.mean(accs):.3f} [{min(accs):.2f}-{max(accs):.2f}] / "
                f"{statistics.mean(f1s):.3f} [{min(f1s):.2f}-{max(f1s):.2f}]"
            )
        print(f"| {_name(method, k, weight)} | " + " | ".join(cells) + " |")

    print(f"\ntotal {time.perf_counter() - started:.1f} s (2 shared cores; timings are noisy)")


if __name__ == "__main__":
    main()
