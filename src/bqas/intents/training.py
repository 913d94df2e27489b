"""Training commands for the offline intent classifier, drawn from ``bqas synth``'s offline generator.

The shipped examples file holds the hand-written examples (20 per intent, no ``id``) followed by
synthetic commands (``id`` ``synth-<intent>-<variant>-<n>``) drawn with :data:`TRAIN_SEEDS` from
the shipped patterns in five variants (plain, typos, de-AT, de-CH, bavarian, the dialects with typos).
Benchmarks test with other seeds (benchmarks/offline/bench_intents_synth.py refuses a training seed).

Rebuild the file reproducibly (keeps the hand-written lines, replaces the synthetic ones):

    .venv/bin/python -m bqas.intents.training [--per 8] [--out src/bqas/data/synth/intent_examples_de.jsonl]
"""

from __future__ import annotations

import argparse
import json
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from bqas.intents.examples import Labelled, default_examples_path, load_labelled
from bqas.synth.dedup import normalise
from bqas.synth.dialects import load_dialects
from bqas.synth.offline import generate_candidates
from bqas.synth.patterns import PatternBook, load_patterns

#: Seeds the shipped training commands were drawn with; never use them for a test set.
TRAIN_SEEDS: tuple[int, ...] = (101, 102, 103)
#: Variant name -> (typos, dialect).
VARIANTS: dict[str, tuple[bool, str | None]] = {
    "plain": (False, None),
    "typos": (True, None),
    "de-AT": (True, "de-AT"),
    "de-CH": (True, "de-CH"),
    "bavarian": (True, "bavarian"),
}
DEFAULT_PER = 8  # per intent, variant and seed group


def is_synthetic(example: Labelled) -> bool:
    """Whether a shipped example is a generated training command (not hand-written)."""
    return bool(example.id and example.id.startswith("synth-"))


def pattern_subset(book: PatternBook, keep: Callable[[int], bool]) -> PatternBook:
    """The book with each intent's patterns whose index (in the patterns file) satisfies ``keep``; an
    intent left without patterns keeps all of them. Benchmarks and tests hold patterns out this way
    (odd indices held out; ``% 4`` splits of the even ones for validation)."""
    intents = {
        name: replace(entry, patterns=[p for i, p in enumerate(entry.patterns) if keep(i)] or entry.patterns)
        for name, entry in book.intents.items()
    }
    return PatternBook(book.slots, intents)


def synthetic_commands(
    book: PatternBook, intents: Sequence[str], seeds: Sequence[int], variant: str, per: int
) -> list[Labelled]:
    """``per`` distinct commands per intent in ``variant``, drawn with ``seeds`` (deterministic).

    Each (seed, intent, variant) gets its own random stream, so adding an intent or a variant does not
    change the commands of the others.
    """
    typos, dialect_name = VARIANTS[variant]
    dialect = load_dialects().get(dialect_name) if dialect_name else None
    out: list[Labelled] = []
    for intent in intents:
        seen: set[str] = set()
        kept: list[str] = []
        for n, seed in enumerate(seeds, start=1):
            rng = random.Random(zlib.crc32(f"{seed}:{intent}:{variant}".encode()))
            stream = generate_candidates(book, intent, rng, typos=typos, dialect=dialect)
            want = -(-per * n // len(seeds))  # the seeds share the commands evenly
            for _ in range(per * 40):  # few patterns collide often; give up on a too-small pattern set
                if len(kept) >= want:
                    break
                text = next(stream).text
                key = normalise(text)
                if key not in seen:
                    seen.add(key)
                    kept.append(text)
        out.extend(Labelled(text, intent, f"synth-{intent}-{variant}-{i:03d}") for i, text in enumerate(kept[:per], 1))
    return out


def build_examples(hand: Sequence[Labelled], per: int = DEFAULT_PER) -> list[Labelled]:
    """The hand-written examples plus ``per`` synthetic commands per intent and variant."""
    book = load_patterns()
    intents = sorted({e.label for e in hand})
    synthetic = [row for variant in VARIANTS for row in synthetic_commands(book, intents, TRAIN_SEEDS, variant, per)]
    return [*hand, *synthetic]


def main(argv: Sequence[str] | None = None) -> None:
    """Rewrite the examples file: hand-written lines kept, synthetic lines drawn anew."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per", type=int, default=DEFAULT_PER, help="synthetic commands per intent and variant")
    parser.add_argument("--out", type=Path, default=default_examples_path())
    args = parser.parse_args(argv)
    hand = [e for e in load_labelled(args.out) if not is_synthetic(e)]
    rows = build_examples(hand, args.per)
    lines = []
    for e in rows:
        obj = {"text": e.text, "intent": e.label} if e.id is None else {"id": e.id, "text": e.text, "intent": e.label}
        lines.append(json.dumps(obj, ensure_ascii=False))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(hand)} hand-written + {len(rows) - len(hand)} synthetic examples")


if __name__ == "__main__":
    main()
