"""The logistic function and its inverse, shared by the offline scorers, the trust tier and the fits.

Below every layer that computes a probability from a linear score: one definition, so that a model fitted
in :mod:`bqas.training` and the run time that applies it compute the same number.
"""

from __future__ import annotations

import math


def sigmoid(z: float) -> float:
    """The logistic function, without overflow for any finite ``z`` (1e-300-ish tails become 0 or 1)."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(max(z, -745.0))
    return e / (1.0 + e)


def logit(p: float, eps: float = 1e-4) -> float:
    """``log(p / (1 - p))`` with ``p`` clamped to ``[eps, 1 - eps]`` (0 and 1 would be infinite)."""
    q = min(1.0 - eps, max(eps, p))
    return math.log(q / (1.0 - q))
