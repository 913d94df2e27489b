"""The offline intent classifier: sentence embeddings plus labelled examples.

Two methods over L2-normalised embeddings (``default_embedder()``, USE multilingual unless
``BQAS_EMBEDDER`` says otherwise):

* ``knn``: the ``k`` most similar examples vote with their cosine similarity; ties go to the label of the
  single most similar example. The score is the winning label's share of the vote mass (0-1).
* ``centroid``: the mean embedding of each label's examples (re-normalised); the nearest centroid wins.
  The score is the cosine similarity to it.

The default is ``centroid``: with few examples per intent (5, like the shipped set) it beat k-NN (k = 1,
3, 5, 10) in every language of xSID and on the shipped examples (docs/intents.md, bench_intents_xsid.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bqas.intents.examples import Labelled
from bqas.offline.embeddings import Embedder, default_embedder

Method = Literal["knn", "centroid"]
DEFAULT_METHOD: Method = "centroid"
DEFAULT_K = 5


@dataclass(frozen=True)
class Prediction:
    """A predicted label with its score and the nearest example's similarity (for inspection)."""

    label: str
    score: float
    nearest: float


class EmbeddingIntentClassifier:
    """k-NN or nearest-centroid classification over labelled examples."""

    def __init__(
        self,
        examples: Sequence[Labelled],
        *,
        embedder: Embedder | None = None,
        method: Method = DEFAULT_METHOD,
        k: int = DEFAULT_K,
        labels: Sequence[str] | None = None,
    ) -> None:
        if method not in ("knn", "centroid"):
            raise ValueError(f"method: expected knn or centroid, got {method!r}")
        if k < 1:
            raise ValueError("k must be at least 1")
        if labels is not None:
            missing = sorted(set(labels) - {e.label for e in examples})
            if missing:
                raise ValueError(f"no examples for intent(s): {', '.join(missing)}")
            allowed = set(labels)
            examples = [e for e in examples if e.label in allowed]
        if not examples:
            raise ValueError("no labelled examples")
        self.embedder = embedder or default_embedder()
        self.method: Method = method
        self.k = k
        self.examples = list(examples)
        self.labels = sorted({e.label for e in self.examples})
        self._label_index = {label: i for i, label in enumerate(self.labels)}
        self._y = np.array([self._label_index[e.label] for e in self.examples])
        self._x = self.embedder.embed([e.text for e in self.examples]).astype(np.float64)
        cents = np.stack([self._x[self._y == i].mean(axis=0) for i in range(len(self.labels))])
        norms = np.linalg.norm(cents, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        self._centroids = cents / norms

    def predict(self, texts: Sequence[str]) -> list[Prediction]:
        """One prediction per text."""
        if not texts:
            return []
        q = self.embedder.embed(list(texts)).astype(np.float64)
        sims = q @ self._x.T
        if self.method == "centroid":
            csims = q @ self._centroids.T
            best = np.argmax(csims, axis=1)
            return [
                Prediction(self.labels[int(b)], float(csims[i, b]), float(sims[i].max())) for i, b in enumerate(best)
            ]
        k = min(self.k, sims.shape[1])
        out: list[Prediction] = []
        for i in range(sims.shape[0]):
            # Stable ordering: among equal similarities the earlier example comes first (deterministic).
            order = np.argsort(-sims[i], kind="stable")[:k]
            votes = np.zeros(len(self.labels))
            for j in order:
                votes[self._y[j]] += max(float(sims[i, j]), 0.0)
            top = votes.max()
            winners = np.flatnonzero(votes == top)
            # A tie goes to the tied label with the single most similar example.
            label = next(int(self._y[j]) for j in order if int(self._y[j]) in set(winners.tolist()))
            total = votes.sum()
            out.append(
                Prediction(self.labels[label], float(votes[label] / total) if total else 0.0, float(sims[i, order[0]]))
            )
        return out
