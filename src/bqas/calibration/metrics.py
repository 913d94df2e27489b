"""The statistics of a calibration, each returned as a :class:`Figure`: a value, or "undefined" with why.

Degenerate inputs are reported honestly: a correlation of a constant vector, a κ when both raters used a
single label, a rate with an empty denominator are *undefined* (``value`` None plus a reason), never NaN
and never a number chosen for the occasion. scikit-learn, scipy and krippendorff do the arithmetic.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np


@dataclass(frozen=True)
class Figure:
    """One statistic over ``n`` items: ``value``, or None with ``reason`` when it is undefined."""

    value: float | None
    n: int
    reason: str | None = None
    p_value: float | None = None

    @classmethod
    def undefined(cls, n: int, reason: str) -> Figure:
        return cls(None, n, reason)

    @property
    def defined(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": None if self.value is None else round(self.value, 6), "n": self.n}
        if self.value is None:
            out["undefined"] = self.reason
        if self.p_value is not None:
            out["p_value"] = round(self.p_value, 6)
        return out

    def text(self, percent: bool = False, digits: int = 3) -> str:
        """For tables: ``12.5 %`` / ``0.731`` or ``undefined (why)``."""
        if self.value is None:
            return f"undefined ({self.reason})"
        return f"{100 * self.value:.1f} %" if percent else f"{self.value:.{digits}f}"


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) or math.isinf(value) else float(value)


def rate(numerator: int, denominator: int, *, empty: str) -> Figure:
    """``numerator / denominator``; undefined (with ``empty`` as reason) when the denominator is 0."""
    if denominator == 0:
        return Figure.undefined(0, empty)
    return Figure(numerator / denominator, denominator)


@dataclass(frozen=True)
class RejectCounts:
    """Confusion counts for "reject" as the positive class (people's view vs the judge's)."""

    tp: int = 0  # people reject, judge rejects
    fp: int = 0  # people accept, judge rejects
    fn: int = 0  # people reject, judge accepts
    tn: int = 0  # people accept, judge accepts

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def fpr(self) -> Figure:
        """Judge rejects what people accept / all people accept."""
        return rate(self.fp, self.fp + self.tn, empty="no response that people accept")

    def fnr(self) -> Figure:
        """Judge accepts what people reject / all people reject."""
        return rate(self.fn, self.fn + self.tp, empty="no response that people reject")

    def accuracy(self) -> Figure:
        return rate(self.tp + self.tn, self.n, empty="no scored sample with a human accept/reject label")


def reject_counts(human: Sequence[bool], judge: Sequence[bool]) -> RejectCounts:
    """Count (human reject, judge reject) pairs with scikit-learn's confusion matrix."""
    if not human:
        return RejectCounts()
    from sklearn.metrics import confusion_matrix

    tn, fp, fn, tp = (int(x) for x in confusion_matrix(list(human), list(judge), labels=[False, True]).ravel())
    return RejectCounts(tp=tp, fp=fp, fn=fn, tn=tn)


def label_matrix(
    human: Sequence[str], judge: Sequence[str], rows: Sequence[str], cols: Sequence[str]
) -> list[list[int]]:
    """Counts of (human label = row, judge label = column); labels outside ``rows``/``cols`` are dropped."""
    if not human:
        return [[0] * len(cols) for _ in rows]
    from sklearn.metrics import confusion_matrix

    labels = list(dict.fromkeys([*rows, *cols]))
    full = confusion_matrix(list(human), list(judge), labels=labels)
    index = {label: i for i, label in enumerate(labels)}
    return [[int(full[index[r], index[c]]) for c in cols] for r in rows]


def agreement(a: Sequence[Any], b: Sequence[Any]) -> Figure:
    """Share of items on which both raters gave the same label."""
    same = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    return rate(same, len(a), empty="no item rated by both")


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], *, weights: str | None = None) -> Figure:
    """Cohen's κ; undefined when expected agreement is 1 (both raters used one and the same label)."""
    n = len(a)
    if n == 0:
        return Figure.undefined(0, "no item rated by both")
    if len(set(a) | set(b)) < 2:
        return Figure.undefined(n, f"both raters gave only {next(iter(set(a)))!r}; κ is 0/0")
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = cohen_kappa_score(list(a), list(b), weights=weights)
    finite = _finite(float(value))
    if finite is None:
        return Figure.undefined(n, "κ is 0/0 (chance agreement is 1)")
    return Figure(finite, n)


def correlation(x: Sequence[float], y: Sequence[float], kind: str) -> Figure:
    """Spearman's ρ or Pearson's r with its p-value; undefined below 3 pairs or for a constant vector."""
    n = len(x)
    if n == 0:
        return Figure.undefined(0, "no pair: the judge measured no labelled sample")
    if n < 3:
        return Figure.undefined(n, "fewer than 3 pairs")
    if len(set(x)) < 2:
        return Figure.undefined(n, "the judge's values are constant")
    if len(set(y)) < 2:
        return Figure.undefined(n, "the human values are constant")
    from scipy import stats

    fn = stats.spearmanr if kind == "spearman" else stats.pearsonr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fn(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    value = _finite(float(res.statistic))
    if value is None:
        return Figure.undefined(n, f"{kind} is undefined for these values")
    p_value = _finite(float(res.pvalue))
    return Figure(value, n, p_value=p_value)


def mean_abs_diff(x: Sequence[float], y: Sequence[float]) -> Figure:
    """Mean absolute difference of paired values (same scale)."""
    if not x:
        return Figure.undefined(0, "no pair")
    return Figure(float(np.mean(np.abs(np.asarray(x, float) - np.asarray(y, float)))), len(x))


def krippendorff_alpha(a: Sequence[Any], b: Sequence[Any], level: Literal["nominal", "interval"]) -> Figure:
    """Krippendorff's α for two raters (``nominal`` labels or ``interval`` numbers); undefined when the
    pairable values hold a single value (no disagreement is possible, α is 0/0)."""
    n = len(a)
    if n == 0:
        return Figure.undefined(0, "no item rated by both")
    if level == "nominal":
        codes = {label: i for i, label in enumerate(sorted({*map(str, a), *map(str, b)}))}
        data = np.array([[codes[str(v)] for v in a], [codes[str(v)] for v in b]], dtype=float)
    else:
        data = np.array([list(a), list(b)], dtype=float)
    if len(np.unique(data)) < 2:
        return Figure.undefined(n, "all values are the same; α is 0/0")
    import krippendorff

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    except (ValueError, ZeroDivisionError) as exc:
        return Figure.undefined(n, f"α cannot be computed: {exc}")
    finite = _finite(float(value))
    if finite is None:
        return Figure.undefined(n, "α is 0/0 for these values")
    return Figure(finite, n)


def latency_stats(values: Sequence[float]) -> dict[str, Any]:
    """Mean, median and 95th percentile (linear interpolation) in milliseconds."""
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "undefined": "no judged sample"}
    arr = np.asarray(values, dtype=float)
    return {
        "n": len(values),
        "mean": round(float(arr.mean()), 3),
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
    }
