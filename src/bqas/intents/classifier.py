"""The offline intent classifier: sentence embeddings plus labelled examples.

Three methods over L2-normalised embeddings (``default_embedder()``, USE multilingual unless
``BQAS_EMBEDDER`` says otherwise):

* ``logreg`` (default): two multinomial logistic regressions (scikit-learn) fitted when the classifier
  is built, one on the example embeddings, one on hashed character n-grams of the example texts
  (:mod:`bqas.intents.charfeatures`); their log-probabilities are added, the character model's weighted
  ``char_weight`` (1 by default; 0 = embeddings only), and normalised again. The score is the winning
  intent's combined probability (0-1).
* ``centroid``: the mean embedding of each label's examples (re-normalised); the nearest centroid wins.
  The score is the cosine similarity to it.
* ``knn``: the ``k`` most similar examples vote with their cosine similarity; ties go to the label of the
  single most similar example. The score is the winning label's share of the vote mass (0-1).

``logreg`` is the default since the shipped examples grew to 45 per intent (5 hand-written, 40 drawn
from ``bqas synth``'s offline generator, see :mod:`bqas.intents.training`): on unseen synthetic
commands it beat centroid by 9 points, and by 11 points when the test patterns were held out too
(docs/intents.md, benchmarks/offline/bench_intents_synth.py). The character n-grams were added when the
patterns were held out (commands of phrasings no training command came from): embeddings alone reached
76.7 % there. Two models instead of one on both feature blocks: fitted jointly, the character
n-grams explained the examples so well that the embedding weights shrank, and examples in one language
lost their transfer to inputs in another (xSID DEV, English examples: German 0.976 -> 0.795); added as
log-probabilities the embedding model stays what it was. The weight 1 and ``C`` 20 were chosen on a
validation split of the training patterns only (benchmarks/offline/bench_intents_synth.py --validate).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from bqas.intents.examples import Labelled
from bqas.offline.embeddings import Embedder, default_embedder
from bqas.private_folder import private_folder

Method = Literal["knn", "centroid", "logreg"]
DEFAULT_METHOD: Method = "logreg"
DEFAULT_K = 5
LOGREG_C = 20.0
#: Weight of the character n-gram model's log-probabilities in ``logreg``; 0 switches it off.
CHAR_WEIGHT = 1.0
#: Texts per embedding call when progress is reported (one call per chunk; the embedder batches inside).
PROGRESS_CHUNK = 64
#: ``(what, done, total)`` of a long step: embedding the examples, fitting, classifying.
ProgressHook = Callable[[str, int, int], None]


def _embed_reporting(embedder: Embedder, texts: list[str], what: str, on_progress: ProgressHook | None) -> Any:
    """``embedder.embed(texts)``; with ``on_progress``, in chunks that report ``(what, done, total)``."""
    if on_progress is None:
        return embedder.embed(texts)
    on_progress(what, 0, len(texts))
    parts = []
    for start in range(0, len(texts), PROGRESS_CHUNK):
        chunk = texts[start : start + PROGRESS_CHUNK]
        parts.append(embedder.embed(chunk))
        on_progress(what, start + len(chunk), len(texts))
    return np.concatenate(parts) if parts else embedder.embed(texts)


@dataclass(frozen=True)
class Prediction:
    """A predicted label with its score and the nearest example's similarity (for inspection)."""

    label: str
    score: float
    nearest: float


class EmbeddingIntentClassifier:
    """Logistic-regression, nearest-centroid or k-NN classification over labelled examples."""

    def __init__(
        self,
        examples: Sequence[Labelled],
        *,
        embedder: Embedder | None = None,
        method: Method = DEFAULT_METHOD,
        k: int = DEFAULT_K,
        labels: Sequence[str] | None = None,
        cache_dir: Path | None = None,
        char_weight: float = CHAR_WEIGHT,
        on_progress: ProgressHook | None = None,
    ) -> None:
        """``cache_dir``: keep the example embeddings and the fitted weights there (one small file per
        embedder, method and example set), so later calls skip embedding the examples and fitting.
        ``char_weight``: weight of the character n-gram features in ``logreg`` (0: embeddings only).
        ``on_progress``: told ``(what, done, total)`` while the examples are embedded and fitted."""
        if method not in ("knn", "centroid", "logreg"):
            raise ValueError(f"method: expected logreg, centroid or knn, got {method!r}")
        if k < 1:
            raise ValueError("k must be at least 1")
        if not char_weight >= 0:  # also refuses NaN
            raise ValueError("char_weight must be 0 or more")
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
        self.char_weight = float(char_weight) if method == "logreg" else 0.0
        self.examples = list(examples)
        self.labels = sorted({e.label for e in self.examples})
        self._label_index = {label: i for i, label in enumerate(self.labels)}
        self._y = np.array([self._label_index[e.label] for e in self.examples])
        fitted = _load(cache_dir, self._cache_key()) if cache_dir is not None else None
        if fitted is not None:
            self._x, self._weights, self._char = fitted
        else:
            texts = [e.text for e in self.examples]
            what = f"embedding {len(texts)} examples (once; cached)"
            self._x = _embed_reporting(self.embedder, texts, what, on_progress).astype(np.float64)
            self._weights, self._char = None, None
            if method == "logreg" and len(self.labels) > 1:
                if on_progress is not None:
                    on_progress(f"fitting on {len(texts)} examples", 0, 1)
                self._weights = _fit_logreg(self._x, self._y)
                self._char = _fit_char_logreg(texts, self._y) if self.char_weight > 0 else None
                if on_progress is not None:
                    on_progress(f"fitting on {len(texts)} examples", 1, 1)
            if cache_dir is not None:
                _save(cache_dir, self._cache_key(), self._x, self._weights, self._char)
        cents = np.stack([self._x[self._y == i].mean(axis=0) for i in range(len(self.labels))])
        norms = np.linalg.norm(cents, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        self._centroids = cents / norms

    def _cache_key(self) -> str:
        digest = hashlib.sha256()
        from bqas.intents.charfeatures import N_FEATURES, NGRAM_RANGE

        head = (
            "v3",  # the cached models' layout: embedding and character models fitted apart
            self.embedder.name,
            self.method,
            str(LOGREG_C),
            str(self.char_weight),
            str(N_FEATURES),
            str(NGRAM_RANGE),
        )
        for part in (*head, *(f"{e.label}\t{e.text}" for e in self.examples)):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\n")
        return digest.hexdigest()[:32]

    def predict(self, texts: Sequence[str], on_progress: ProgressHook | None = None) -> list[Prediction]:
        """One prediction per text; ``on_progress`` is told ``(what, done, total)`` while they are embedded."""
        if not texts:
            return []
        q = _embed_reporting(self.embedder, list(texts), f"classifying {len(texts)} texts", on_progress)
        q = q.astype(np.float64)
        sims = q @ self._x.T
        if self._weights is not None:
            logits = _log_softmax(q @ self._weights[:, :-1].T + self._weights[:, -1])
            if self._char is not None:
                from bqas.intents.charfeatures import char_features

                idx, weights = self._char
                char_logits = np.asarray(char_features(texts)[:, idx] @ weights[:, :-1].T) + weights[:, -1]
                logits = logits + self.char_weight * _log_softmax(char_logits)
            proba = _softmax(logits)
            best = np.argmax(proba, axis=1)
            return [
                Prediction(self.labels[int(b)], float(proba[i, b]), float(sims[i].max())) for i, b in enumerate(best)
            ]
        if self.method in ("centroid", "logreg"):
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


#: Fitted character n-gram model: the hashed columns that occur in the examples, and one row of
#: ``[weights of those columns..., intercept]`` per label.
CharWeights = tuple[NDArray[np.int64], NDArray[np.float64]]


def _fit_logreg(x: Any, y: NDArray[Any]) -> NDArray[np.float64]:
    """Multinomial logistic regression: one row per label of ``[coefficients..., intercept]`` (predicted
    with :func:`_softmax`, so predicting needs no sklearn).

    ``C`` is large because the embeddings are unit vectors with small coordinates (and the character
    rows L2-normalised counts); class weights are balanced so an intent with fewer distinct examples is
    not out-voted. Deterministic (lbfgs).
    """
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=LOGREG_C, max_iter=3000, class_weight="balanced")
    model.fit(x, y)
    coef, intercept = np.asarray(model.coef_, dtype=np.float64), np.asarray(model.intercept_, dtype=np.float64)
    if coef.shape[0] == 1:  # two labels: sklearn fits one logit; as softmax rows it is (-z/2, z/2)
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.array([-intercept[0] / 2, intercept[0] / 2])
    out: NDArray[np.float64] = np.hstack([coef, intercept[:, None]])
    return out


def _fit_char_logreg(texts: Sequence[str], y: NDArray[Any]) -> CharWeights:
    """The character n-gram model, restricted to the hashed columns that occur in the examples (the
    others carry no data, so their weights would be 0 anyway): a small file instead of 2**18 columns."""
    from bqas.intents.charfeatures import char_features

    chars = char_features(texts)
    idx = np.unique(chars.indices).astype(np.int64)
    return idx, _fit_logreg(chars[:, idx], y)


def _log_softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    z = z - z.max(axis=1, keepdims=True)
    out: NDArray[np.float64] = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return out


def _softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
    return out


def _load(
    cache_dir: Path, key: str
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, CharWeights | None] | None:
    folder = private_folder(cache_dir / "intents", "intent classifier cache", "BQAS_HOME")
    if folder is None:
        return None
    path = folder / f"{key}.npz"
    try:
        with np.load(path, allow_pickle=False) as data:
            weights = data["weights"] if data["weights"].size else None
            char = (
                (data["char_idx"].astype(np.int64), data["char_coef"].astype(np.float64))
                if data["char_idx"].size
                else None
            )
            return data["x"].astype(np.float64), weights, char
    except (OSError, KeyError, ValueError):  # missing or broken: fit again
        return None


def _save(
    cache_dir: Path,
    key: str,
    x: NDArray[np.float64],
    weights: NDArray[np.float64] | None,
    char: CharWeights | None,
) -> None:
    folder = private_folder(cache_dir / "intents", "intent classifier cache", "BQAS_HOME")
    if folder is None:
        return
    try:
        tmp = folder / f"{key}.{os.getpid()}.tmp.npz"
        np.savez(
            tmp,
            x=x.astype(np.float32),
            weights=np.zeros(0) if weights is None else weights,
            char_idx=np.zeros(0, dtype=np.int64) if char is None else char[0],
            char_coef=np.zeros((0, 0)) if char is None else char[1],
        )
        os.replace(tmp, folder / f"{key}.npz")  # atomic: a concurrent reader sees the old or the new file
    except OSError:  # a read-only home only costs the refit next time
        return
