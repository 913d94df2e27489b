"""Fitting the trust tier's offline ``p_reject`` models (:class:`bqas.offline.p_reject.LogisticModel` reads them):
logistic regression (scikit-learn) plus Platt scaling, to JSON (``benchmarks/trust/train_offline.py``).

The Platt step is fitted on out-of-fold decision values (5-fold cross-validation), so it corrects the
logistic regression's over-confidence on its own training data; the final regression is then refitted on
all rows. Only licensed data may be fitted (see src/bqas/data/trust/MODEL_CARD.md); the caller chooses it and
checks it with :func:`bqas.training.licences.check_use`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bqas.offline.p_reject import MODEL_FORMAT


def feature_names(rows: Sequence[Mapping[str, float]]) -> list[str]:
    """The features seen in any row (sorted; the constant ``bias`` is left to the intercept)."""
    return sorted({k for r in rows for k in r} - {"bias"})


def matrix(rows: Sequence[Mapping[str, float]], names: Sequence[str]) -> np.ndarray:
    """Rows as a float matrix in ``names`` order (absent features are 0, as at prediction time)."""
    return np.array([[float(r.get(n, 0.0)) for n in names] for r in rows], dtype=np.float64)


def fit_model(
    rows: Sequence[Mapping[str, float]],
    rejected: Sequence[bool],
    *,
    judge: str,
    model_id: str,
    c: float = 1.0,
    seed: int = 0,
    requires_zero: Sequence[str] = (),
) -> dict[str, Any]:
    """Fit and return the model as a JSON-ready dict (the ``bqas-p-reject/1`` format).

    ``requires_zero``: features the training data does not cover; they are left out of the fit, and the
    model refuses to answer where one is non-zero."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    names = [n for n in feature_names(rows) if n not in set(requires_zero)]
    x, y = matrix(rows, names), np.asarray(rejected, dtype=int)
    if len(set(y.tolist())) < 2:
        raise ValueError("fitting a p_reject model needs both accepted and rejected responses")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale

    def regression() -> LogisticRegression:
        return LogisticRegression(C=c, max_iter=2000)

    oof = np.zeros(len(y))
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(z, y):
        oof[test] = regression().fit(z[train], y[train]).decision_function(z[test])
    platt = LogisticRegression(C=1e6, max_iter=1000).fit(oof.reshape(-1, 1), y)
    final = regression().fit(z, y)
    keep = [i for i, w in enumerate(final.coef_[0]) if abs(w) > 1e-12]
    out: dict[str, Any] = {
        "format": MODEL_FORMAT,
        "id": model_id,
        "judge": judge,
        "kind": "logistic+platt",
        "features": [names[i] for i in keep],
        "mean": [round(float(mean[i]), 8) for i in keep],
        "scale": [round(float(scale[i]), 8) for i in keep],
        "coef": [round(float(final.coef_[0][i]), 8) for i in keep],
        "intercept": round(float(final.intercept_[0]), 8),
        "platt": {"a": round(float(platt.coef_[0][0]), 8), "b": round(float(platt.intercept_[0]), 8)},
        "requires_zero": sorted(requires_zero),
        "n": len(y),
        "n_reject": int(y.sum()),
    }
    # The id names the coefficients too: a profile fitted with other coefficients is then refused.
    blob = json.dumps([out[k] for k in ("features", "mean", "scale", "coef", "intercept", "platt")]).encode()
    out["id"] = f"{model_id}-{hashlib.sha256(blob).hexdigest()[:8]}"
    return out
