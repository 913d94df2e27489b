"""The statistics of a calibration, each returned as a :class:`Figure`: a value, or "undefined" with why.

Degenerate inputs are reported honestly: a correlation of a constant vector, a κ when both raters used a
single label, a rate with an empty denominator are *undefined* (``value`` None plus a reason), never NaN
and never a number chosen for the occasion. scikit-learn, scipy and krippendorff do the arithmetic.

Each figure carries its 95 % confidence interval where one is defined: Clopper-Pearson (exact binomial)
for rates, a percentile bootstrap (1,000 resamples of the items, fixed seed) for Cohen's κ and the
correlations, Student's t for a mean. A target is judged on the interval, not on the point
(:mod:`bqas.calibration.targets`).

A percentile bootstrap of a handful of items says nothing: three agreeing items resample to κ = 1 every
time and give the interval [1, 1]. Below :data:`MIN_BOOTSTRAP_N` items κ and the correlations have no
interval (a target on them is "not enough evidence"); above it, κ's interval is widened to hold the
interval that the exact (Clopper-Pearson) interval of the observed agreement gives at the observed chance
agreement, so perfect agreement on 25 items cannot read as κ in [1, 1] either.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

CONFIDENCE = 0.95  # of every interval a calibration reports
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
# Fewest items for a bootstrap interval (κ, correlations); fewer give no interval, with this reason.
MIN_BOOTSTRAP_N = 20
TOO_FEW_FOR_BOOTSTRAP = f"fewer than {MIN_BOOTSTRAP_N} items: a bootstrap interval needs at least {MIN_BOOTSTRAP_N}"


@dataclass(frozen=True)
class Figure:
    """One statistic over ``n`` items: ``value``, or None with ``reason`` when it is undefined;
    ``interval``: its 95 % confidence interval (None where none is defined), ``method`` how it was made;
    ``successes``: the numerator of a rate (so a target can say how many more items would decide it)."""

    value: float | None
    n: int
    reason: str | None = None
    p_value: float | None = None
    interval: tuple[float, float] | None = None
    method: str | None = None
    successes: int | None = None
    no_interval: str | None = None  # why a defined figure has no interval

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
        if self.interval is not None:
            out["interval"] = [round(self.interval[0], 6), round(self.interval[1], 6)]
            out["confidence"] = CONFIDENCE
            out["interval_method"] = self.method
        elif self.no_interval is not None:
            out["no_interval"] = self.no_interval
        if self.successes is not None:
            out["k"] = self.successes
        return out

    def text(self, percent: bool = False, digits: int = 3) -> str:
        """For tables: ``12.5 % [8.1–18.2 %]`` / ``0.731 [0.62–0.80]`` or ``undefined (why)``."""
        if self.value is None:
            return f"undefined ({self.reason})"
        point = f"{100 * self.value:.1f} %" if percent else f"{self.value:.{digits}f}"
        if self.interval is None:
            return point
        lo, hi = self.interval
        span = f"{100 * lo:.1f}–{100 * hi:.1f} %" if percent else f"{lo:.{digits}f}–{hi:.{digits}f}"
        return f"{point} [{span}]"


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) or math.isinf(value) else float(value)


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Two-sided exact binomial interval for ``k`` successes in ``n`` trials (n > 0)."""
    from scipy.stats import beta

    tail = (1.0 - confidence) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1.0 - tail, k + 1, n - k))
    return lo, hi


def rate(numerator: int, denominator: int, *, empty: str) -> Figure:
    """``numerator / denominator`` with its Clopper-Pearson interval; undefined (with ``empty`` as reason)
    when the denominator is 0."""
    if denominator == 0:
        return Figure.undefined(0, empty)
    return Figure(
        numerator / denominator,
        denominator,
        interval=clopper_pearson(numerator, denominator),
        method="clopper-pearson",
        successes=numerator,
    )


def _percentile_interval(values: np.ndarray) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if finite.size < BOOTSTRAP_RESAMPLES // 2:  # most resamples degenerate: no honest interval
        return None
    tail = 100 * (1.0 - CONFIDENCE) / 2
    return float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))


def _resample_indices(n: int) -> np.ndarray:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    return rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))


def bootstrap_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Cohen's κ (unweighted), vectorised over the resamples."""
    labels = sorted({*map(str, a), *map(str, b)})
    code = {lab: i for i, lab in enumerate(labels)}
    x = np.array([code[str(v)] for v in a])
    y = np.array([code[str(v)] for v in b])
    n, m = len(x), len(labels)
    idx = _resample_indices(n)
    pairs = x[idx] * m + y[idx] + np.arange(BOOTSTRAP_RESAMPLES)[:, None] * (m * m)
    counts = np.bincount(pairs.ravel(), minlength=BOOTSTRAP_RESAMPLES * m * m).reshape(-1, m, m) / n
    observed = np.trace(counts, axis1=1, axis2=2)
    expected = np.einsum("ri,ri->r", counts.sum(axis=2), counts.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = (observed - expected) / (1.0 - expected)
    return _percentile_interval(kappas)


def bootstrap_correlation(x: Sequence[float], y: Sequence[float], kind: str) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Spearman's ρ or Pearson's r, vectorised over the resamples."""
    from scipy.stats import rankdata

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    idx = _resample_indices(len(xs))
    a, b = xs[idx], ys[idx]
    if kind == "spearman":
        a, b = rankdata(a, axis=1), rankdata(b, axis=1)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    return _percentile_interval(r)


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
    if weights is not None:
        return Figure(finite, n)
    if n < MIN_BOOTSTRAP_N:
        return Figure(finite, n, no_interval=TOO_FEW_FOR_BOOTSTRAP)
    boot = bootstrap_kappa(a, b)
    if boot is None:
        return Figure(finite, n, no_interval="most bootstrap resamples hold a single label (κ is 0/0)")
    exact = _kappa_from_agreement(a, b)
    return Figure(finite, n, interval=(min(boot[0], exact[0]), max(boot[1], exact[1])), method="bootstrap+exact")


def _kappa_from_agreement(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, float]:
    """κ = (p_o - p_e) / (1 - p_e) at the ends of the Clopper-Pearson interval of the observed agreement
    p_o, with the chance agreement p_e as observed (defined: the caller has p_e < 1)."""
    n = len(a)
    same = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    labels = {*map(str, a), *map(str, b)}
    pe = sum((sum(1 for x in a if str(x) == lab) / n) * (sum(1 for y in b if str(y) == lab) / n) for lab in labels)
    lo, hi = clopper_pearson(same, n)
    return (lo - pe) / (1.0 - pe), (hi - pe) / (1.0 - pe)


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
    if n < MIN_BOOTSTRAP_N:
        return Figure(value, n, p_value=p_value, no_interval=TOO_FEW_FOR_BOOTSTRAP)
    return Figure(value, n, p_value=p_value, interval=bootstrap_correlation(x, y, kind), method="bootstrap")


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
    """Mean (with its 95 % Student-t interval and the standard deviation), median and 95th percentile
    (linear interpolation) in milliseconds. A time is never negative: the interval's lower end is at
    least 0 (Student's t on three samples would reach below it)."""
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "undefined": "no judged sample"}
    arr = np.asarray(values, dtype=float)
    out: dict[str, Any] = {
        "n": len(values),
        "mean": round(float(arr.mean()), 3),
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
    }
    if len(values) > 1:
        from scipy.stats import t

        sd = float(arr.std(ddof=1))
        half = float(t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1)) * sd / math.sqrt(len(values))
        out["sd"] = round(sd, 3)
        out["mean_interval"] = [max(0.0, round(float(arr.mean()) - half, 3)), round(float(arr.mean()) + half, 3)]
    return out
