"""The contradiction suite (``tests/fixtures/contradiction_suite``) measures the shipped verifier and is never
trained on: no training pair may share a sentence with it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bqas.offline.text.sentences import split_sentences
from bqas.training.verifier.datasets import Pair, _rows


def suite_sentences(suite: Path) -> set[str]:
    """Every context and answer sentence of the contradiction suite (casefolded, spaces collapsed)."""
    out: set[str] = set()
    for path in sorted(suite.glob("*.jsonl")):
        for r in _rows(path):
            for text in (r["context"], r["faithful"], r["unfaithful"]):
                out.update(_key(s) for s in split_sentences(text))
    return out


def drop_overlap(pairs: Sequence[Pair], banned: set[str]) -> list[Pair]:
    """The pairs none of whose claim or evidence sentences is in ``banned`` (keys of :func:`suite_sentences`)."""
    return [
        p
        for p in pairs
        if not any(_key(s) in banned for s in (*split_sentences(p.claim), *split_sentences(p.evidence)))
    ]


def _key(text: str) -> str:
    return " ".join(text.casefold().split())
