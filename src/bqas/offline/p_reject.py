"""The offline tier's ``p_reject``: a small fitted model per judge, looked up by judge name.

Where a judge's model comes from, in order:

1. a provider registered in code with :func:`register_offline_provider` (e.g. a learned grounding scorer
   that already gives a calibrated probability of an unfaithful answer);
2. ``confidence: {offline: FILE}`` in the judge's ``judge.yaml`` (FILE relative to the judge folder);
3. the shipped model file ``bqas/data/trust/<judge>.offline.json``.

A judge with none gets ``p_reject: null`` with the reason; it cannot auto-decide unless a calibration
profile calibrates its raw ``risk`` score. Model files are JSON coefficients (never pickle): a logistic
regression over standardised features (:mod:`bqas.offline.p_reject_features`) followed by Platt scaling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.judgment.result import TierConfidence
from bqas.mathx import sigmoid
from bqas.offline.logistic import StandardisedLinear

if TYPE_CHECKING:
    from bqas.judgment.result import DimensionProvenance
    from bqas.judgment.spec import JudgeSpec
    from bqas.offline.methods import MethodResult

MODEL_FORMAT = "bqas-p-reject/1"

OfflineProvider = Callable[
    ["JudgeSpec", Mapping[str, Any], Mapping[str, "DimensionProvenance"], Mapping[str, "MethodResult"]],
    TierConfidence,
]
_PROVIDERS: dict[str, OfflineProvider] = {}
_PROVIDER_IDS: dict[str, Callable[[], str]] = {}


def register_offline_provider(
    judge: str, provider: OfflineProvider, model_id: str | Callable[[], str] | None = None
) -> None:
    """Use ``provider`` for the offline ``p_reject`` of ``judge`` (overrides model files).

    ``model_id`` names what the provider scores with (a string or a function giving it); calibration
    profiles record it, so a profile fitted with another model is refused."""
    _PROVIDERS[judge] = provider
    if model_id is None:
        _PROVIDER_IDS.pop(judge, None)
    else:
        _PROVIDER_IDS[judge] = model_id if callable(model_id) else (lambda: str(model_id))


def offline_model_id(spec: JudgeSpec) -> str | None:
    """The identity of the judge's offline p_reject: the provider's model id and/or the fitted model's id."""
    parts = []
    if spec.name in _PROVIDERS:
        parts.append(_PROVIDER_IDS[spec.name]() if spec.name in _PROVIDER_IDS else f"provider:{spec.name}")
    model = model_for(spec)
    if model is not None:
        parts.append(model.id)
    return "+".join(parts) or None


@dataclass(frozen=True)
class LogisticModel:
    """p = sigmoid(a * (w · (x - mean) / scale + b0) + b): logistic regression with Platt scaling."""

    id: str
    judge: str
    linear: StandardisedLinear
    platt_a: float
    platt_b: float
    # Evidence the training data never showed (e.g. e-mail addresses for a model fitted on person names):
    # when any of these features is non-zero the model does not answer (p_reject null with the reason).
    requires_zero: tuple[str, ...] = ()

    @property
    def features(self) -> tuple[str, ...]:
        """The features the model uses, in coefficient order."""
        return self.linear.features

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> LogisticModel:
        if data.get("format") != MODEL_FORMAT:
            raise ValueError(f"{where}: format: expected {MODEL_FORMAT!r}, got {data.get('format')!r}")
        try:
            return cls(
                id=str(data["id"]),
                judge=str(data["judge"]),
                linear=StandardisedLinear.from_json(data, where),
                platt_a=float(data["platt"]["a"]),
                platt_b=float(data["platt"]["b"]),
                requires_zero=tuple(str(f) for f in data.get("requires_zero") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: not a p_reject model: {exc!r}") from None

    def predict(self, features: Mapping[str, float]) -> float:
        """p_reject for one feature dict (absent features count as 0). Pure Python: a few microseconds."""
        return sigmoid(self.platt_a * self.linear.logit_of(features) + self.platt_b)


@cache
def _shipped(judge: str) -> LogisticModel | None:
    ref = resources.files("bqas").joinpath(f"data/trust/{judge}.offline.json")
    if not ref.is_file():
        return None
    return LogisticModel.from_dict(json.loads(ref.read_text(encoding="utf-8")), f"bqas/data/trust/{judge}.offline.json")


@cache
def _from_file(path: str) -> LogisticModel:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read p_reject model: {exc}") from None
    return LogisticModel.from_dict(data, path)


def model_for(spec: JudgeSpec) -> LogisticModel | None:
    """The fitted offline model of a judge (judge.yaml ``confidence.offline``, else the shipped one)."""
    conf = spec.extra.get("confidence") or {}
    name = conf.get("offline") if isinstance(conf, dict) else None
    if name:
        return _from_file(str((spec.directory / str(name)).resolve()))
    return _shipped(spec.name)


def raw_risk(spec: JudgeSpec, dims: Mapping[str, DimensionProvenance]) -> float | None:
    """The offline tier's uncalibrated risk: 1 for a failed gate, else 1 - composite/100 (None: unscored)."""
    from bqas.judgment.policy import apply_policy

    if spec.scoring is None:
        return None
    values = {n: p.value for n, p in dims.items() if p.measured and p.value is not None}
    outcome = apply_policy(values, spec.scoring, spec.dimensions)
    if outcome.gate_failures:
        return 1.0
    if outcome.composite is None:
        return None
    return round(min(1.0, max(0.0, 1.0 - outcome.composite / 100.0)), 6)


def offline_confidence(
    spec: JudgeSpec,
    values: Mapping[str, Any],
    dims: Mapping[str, DimensionProvenance],
    evidence: Mapping[str, MethodResult],
) -> TierConfidence:
    """The offline tier's confidence for one judgment (``p_reject`` null with a reason when no model)."""
    risk = raw_risk(spec, dims)
    provider = _PROVIDERS.get(spec.name)
    if provider is not None:
        conf = provider(spec, values, dims, evidence)
        return conf.model_copy(update={"risk": risk}) if conf.risk is None else conf
    model = model_for(spec)
    if model is None:
        return TierConfidence(risk=risk, reason=f"no fitted offline p_reject model for judge {spec.name}")
    from bqas.offline.p_reject_features import extract_features

    features = extract_features(spec, values, dims, evidence)
    outside = [f for f in model.requires_zero if features.get(f, 0.0) != 0.0]
    if outside:
        return TierConfidence(
            risk=risk,
            model=model.id,
            reason=f"outside the training data of {model.id}: {', '.join(outside)}",
        )
    p = model.predict(features)
    return TierConfidence(p_reject=round(p, 6), risk=risk, method="logistic+platt", model=model.id)
