"""Offline intent classifier on xSID 0.7 (DEV parts in ../shared/datasets; CC BY-SA 4.0, not shipped).

Two settings, each for k-NN (k = 1, 3, 5, 10) and nearest centroid, with the default embedder (USE
multilingual v3 unless BQAS_EMBEDDER says otherwise):

1. cross-lingual: all English DEV utterances are the labelled examples; every other language's DEV file
   is the test set (de, de-ba Bavarian, gsw Swiss German, zh).
2. in-language few-shot: per language, the records are shuffled with ``random.Random(seed)`` and the
   first 5 of each intent become the examples; the rest is the test set. Intents with 5 records or fewer
   therefore have no test items. Seeds 0-4; mean and range over the seeds are printed.

Also: leave-one-out on BQAS's own 95 teacher examples (src/bqas/data/synth/intent_examples_de.jsonl).

    .venv/bin/python benchmarks/bench_intents_xsid.py [--data ../shared/datasets]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _data import data_part

from bqas.intents.classifier import EmbeddingIntentClassifier
from bqas.intents.evaluate import evaluate_predictions
from bqas.intents.examples import Labelled, default_examples_path, load_labelled
from bqas.intents.training import is_synthetic
from bqas.offline.embeddings import default_embedder

LANGS = ("de", "de-ba", "gsw", "zh", "en")
METHODS: list[tuple[str, int]] = [("knn", 1), ("knn", 3), ("knn", 5), ("knn", 10), ("centroid", 0), ("logreg", 0)]


def _name(method: str, k: int) -> str:
    return f"knn k={k}" if method == "knn" else method


def _score(train: list[Labelled], test: list[Labelled], method: str, k: int) -> tuple[float, float]:
    clf = EmbeddingIntentClassifier(train, method=method, k=max(1, k))  # type: ignore[arg-type]
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
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "datasets")
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
    for method, k in METHODS:
        scores = [_score(data["en"], data[lang], method, k) for lang in LANGS[:-1]]
        print(f"| {_name(method, k)} | " + " | ".join(f"{a:.3f} / {f:.3f}" for a, f in scores) + " |")

    print(f"\n## 2. in-language, 5 examples per intent, rest as test (mean [min-max] over seeds 0-{args.seeds - 1})\n")
    sizes = {lang: few_shot_split(data[lang], 0) for lang in LANGS}
    print(
        "test sizes (seed 0): "
        + ", ".join(f"{lang} {len(te)} (examples {len(tr)})" for lang, (tr, te) in sizes.items())
    )
    print("\n| method | " + " | ".join(f"{lang} acc / macro-F1" for lang in LANGS) + " |")
    print("|---|" + "---|" * len(LANGS))
    for method, k in METHODS:
        cells: list[str] = []
        for lang in LANGS:
            accs, f1s = [], []
            for seed in range(args.seeds):
                train, test = few_shot_split(data[lang], seed)
                a, f = _score(train, test, method, k)
                accs.append(a)
                f1s.append(f)
            cells.append(
                f"{statistics.mean(accs):.3f} [{min(accs):.2f}-{max(accs):.2f}] / "
                f"{statistics.mean(f1s):.3f} [{min(f1s):.2f}-{max(f1s):.2f}]"
            )
        print(f"| {_name(method, k)} | " + " | ".join(cells) + " |")

    print("\n## 3. leave-one-out on the 95 shipped teacher examples (19 intents x 5)\n")
    teacher = [e for e in load_labelled(default_examples_path()) if not is_synthetic(e)]  # the hand-written ones
    print("| method | accuracy | macro-F1 |\n|---|---|---|")
    for method, k in METHODS:
        y_true, y_pred = [], []
        for i, row in enumerate(teacher):
            clf = EmbeddingIntentClassifier(teacher[:i] + teacher[i + 1 :], method=method, k=max(1, k))  # type: ignore[arg-type]
            y_true.append(row.label)
            y_pred.append(clf.predict([row.text])[0].label)
        ev = evaluate_predictions(y_true, y_pred)
        print(f"| {_name(method, k)} | {ev.accuracy:.3f} | {ev.macro_f1:.3f} |")
    print(f"\ntotal {time.perf_counter() - started:.1f} s (2 shared cores; timings are noisy)")


if __name__ == "__main__":
    main()
