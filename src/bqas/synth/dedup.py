"""Duplicate and near-duplicate removal: normalised text first, then embedding cosine similarity."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Literal

import numpy as np

from bqas.offline.embeddings import Embedder
from bqas.synth.typos import fold_umlauts

DEFAULT_THRESHOLD = 0.92
DupReason = Literal["duplicate", "near_duplicate"]


def normalise(text: str) -> str:
    """Casefold, fold umlauts (ä -> ae, ß -> ss), drop punctuation and symbols, collapse whitespace."""
    folded = fold_umlauts(text.casefold())
    kept = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in folded)
    return " ".join(kept.split())


class NearDuplicateFilter:
    """Remembers kept texts; a new text is a duplicate when its normalised form was kept before, and a
    near-duplicate when its embedding has cosine >= ``threshold`` with a kept text's embedding."""

    def __init__(self, embedder: Embedder | None, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self._keys: set[str] = set()
        self._vectors: list[np.ndarray] = []

    def check(self, texts: Sequence[str]) -> list[DupReason | None]:
        """For each text in order: None if it is new (and is now remembered), else the reason it is not.

        Texts are compared with the kept ones and with the earlier texts of the same batch."""
        vectors = self.embedder.embed(list(texts)) if self.embedder is not None and texts else None
        out: list[DupReason | None] = []
        for i, text in enumerate(texts):
            key = normalise(text)
            if key in self._keys:
                out.append("duplicate")
                continue
            if vectors is not None:
                vec = vectors[i]
                if self._vectors and float(np.max(np.stack(self._vectors) @ vec)) >= self.threshold:
                    out.append("near_duplicate")
                    continue
                self._vectors.append(vec)
            self._keys.add(key)
            out.append(None)
        return out
