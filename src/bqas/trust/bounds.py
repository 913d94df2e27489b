"""Exact binomial bounds (Clopper-Pearson) and the sample-size floor they imply."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray


def cp_upper(errors: ArrayLike, n: int, delta: float) -> NDArray[np.float64]:
    """One-sided Clopper-Pearson upper bound(s) on a binomial rate at confidence ``1 - delta``.

    ``errors`` (a count or an array of counts, each 0..n) out of ``n`` trials. With ``n == 0`` nothing is
    known and the bound is 1. Vectorised, because a fit evaluates it at every candidate threshold.
    """
    from scipy.stats import beta

    k = np.asarray(errors, dtype=np.float64)
    if n <= 0:
        return np.ones_like(k)
    out = np.ones_like(k)
    below = k < n
    # P(Bin(n, p) <= k) = delta at p = Beta.ppf(1 - delta, k + 1, n - k): the exact one-sided bound.
    out[below] = beta.ppf(1.0 - delta, k[below] + 1.0, n - k[below])
    return out


def cp_upper_each(errors: ArrayLike, trials: ArrayLike, delta: float) -> NDArray[np.float64]:
    """One-sided Clopper-Pearson upper bounds for pairs ``(errors[i], trials[i])`` (1 where nothing is known).

    The decided-set bounds need it: each candidate threshold decides its own number of items."""
    from scipy.stats import beta

    k = np.asarray(errors, dtype=np.float64)
    n = np.broadcast_to(np.asarray(trials, dtype=np.float64), k.shape)
    out = np.ones_like(k)
    below = k < n
    out[below] = beta.ppf(1.0 - delta, k[below] + 1.0, n[below] - k[below])
    return out


def cp_interval(successes: int, n: int, confidence: float = 0.9) -> tuple[float, float] | None:
    """Two-sided Clopper-Pearson interval for a binomial rate (None when ``n`` is 0)."""
    from scipy.stats import beta

    if n <= 0:
        return None
    tail = (1.0 - confidence) / 2
    lo = 0.0 if successes == 0 else float(beta.ppf(tail, successes, n - successes + 1))
    hi = 1.0 if successes == n else float(beta.ppf(1.0 - tail, successes + 1, n - successes))
    return lo, hi


@lru_cache(maxsize=256)
def min_n_for_zero_errors(alpha: float, delta: float) -> int:
    """The fewest trials for which zero errors certify rate <= alpha at confidence 1 - delta.

    Zero errors in n trials bound the rate by 1 - delta**(1/n); it is <= alpha once (1 - alpha)**n <= delta,
    e.g. alpha 0.02, delta 0.1 -> 114 (0.98**114 ≈ 0.1).
    """
    if not 0.0 < alpha < 1.0 or not 0.0 < delta < 1.0:
        raise ValueError(f"alpha and delta must lie in (0, 1), got {alpha}, {delta}")
    n = math.ceil(math.log(delta) / math.log(1.0 - alpha))
    # Guard against floating error at the boundary: step until the exact bound really is <= alpha.
    while float(cp_upper(0, n, delta)) > alpha:
        n += 1
    while n > 1 and float(cp_upper(0, n - 1, delta)) <= alpha:
        n -= 1
    return n


def max_errors_allowed(n: int, alpha: float, delta: float) -> int:
    """The most errors among ``n`` trials whose upper bound is still <= alpha (-1 when even 0 fails)."""
    if n <= 0:
        return -1
    ks = np.arange(n + 1)
    ok = np.nonzero(cp_upper(ks, n, delta) <= alpha)[0]
    return int(ok[-1]) if ok.size else -1
