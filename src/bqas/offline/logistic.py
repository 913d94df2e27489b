"""One evaluator for the JSON logistic models of the offline tier (no pickle, pure Python).

Both the learned grounding scorer (:mod:`bqas.offline.grounding_model`, knot calibration) and the
per-judge ``p_reject`` models (:mod:`bqas.offline.p_reject`, Platt scaling) are a logistic regression over
standardised features, stored as ``mean``/``scale``/``coef``/``intercept`` lists in JSON. They differ only
in how a feature vector is looked up and in the calibration after the logit; the parsing, the checks
and the arithmetic live here once (the logistic function itself: :func:`bqas.mathx.sigmoid`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StandardisedLinear:
    """``intercept + sum(coef * (x - mean) / scale)`` over named features."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> StandardisedLinear:
        """Parse the ``features``/``mean``/``scale``/``coef``/``intercept`` fields; a missing field or a list
        of the wrong length raises ValueError naming ``where`` and the field. A zero scale counts as 1
        (a constant feature in training: its coefficient is then irrelevant)."""
        feats = tuple(str(f) for f in data.get("features") or ())
        if not feats:
            raise ValueError(f"{where}: field 'features' must list at least one feature")
        n = len(feats)
        columns: dict[str, tuple[float, ...]] = {}
        for key in ("mean", "scale", "coef"):
            values = data.get(key)
            if not isinstance(values, list) or len(values) != n:
                raise ValueError(f"{where}: field {key!r} must have {n} numbers")
            try:
                columns[key] = tuple(float(v) for v in values)
            except (TypeError, ValueError):
                raise ValueError(f"{where}: field {key!r} must hold numbers") from None
        try:
            intercept = float(data["intercept"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{where}: field 'intercept' must be a number") from None
        return cls(feats, columns["mean"], tuple(s or 1.0 for s in columns["scale"]), columns["coef"], intercept)

    def logit(self, values: Iterable[float]) -> float:
        """The linear score of the feature values, given in ``features`` order."""
        return self.intercept + sum(
            c * (v - m) / s for c, v, m, s in zip(self.coef, values, self.mean, self.scale, strict=True)
        )

    def logit_of(self, features: Mapping[str, float]) -> float:
        """The linear score of a feature dict (absent features count as 0)."""
        return self.logit(features.get(name, 0.0) for name in self.features)
