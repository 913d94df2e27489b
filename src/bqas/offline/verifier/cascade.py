"""The offline grounding cascade: the learned grounding model first; where it is unsure, the verifier.

Stage 1 is :mod:`bqas.offline.grounding_model` (four features of the rule analysis, logistic, calibrated;
microseconds on top of the analysis). Where its probability falls inside the *band* ``[low, high)`` —
around its own threshold, where it is least sure, chosen on the calibration data — stage 2 runs: the verifier reads each checkable claim (the ``max_claims`` least supported by the
rule analysis) with its evidence, the answer's verifier score is the highest claim probability, and the
final probability is a logistic combination of both stages' logits. Outside the band the first stage's
probability stands, so the average cost stays near the first stage's.

The band, the combination and the thresholds live in ``bqas/data/verifier/cascade.json``; they are fitted
(:mod:`bqas.training.verifier.fit`) only on the calibration part of the permitted datasets, which the
verifier was not trained on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bqas.mathx import logit, sigmoid

CASCADE_RESOURCE = "cascade.json"
FORMAT = "bqas-grounding-cascade/1"


@dataclass(frozen=True)
class Cascade:
    """Where stage 2 runs and how its score is combined with stage 1's."""

    cascade_id: str
    low: float
    high: float
    #: p = sigmoid(w_stage1 * logit(p1) + w_verifier * logit(v) + bias)
    w_stage1: float
    w_verifier: float
    bias: float
    threshold: float  # combined p >= threshold -> the invention gate fails
    claim_threshold: float  # a claim with verifier probability >= this is listed as hallucinated
    max_claims: int
    card: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "cascade") -> Cascade:
        if data.get("format") != FORMAT:
            raise ValueError(f"{where}: field 'format' must be {FORMAT!r}, got {data.get('format')!r}")
        try:
            return cls(
                cascade_id=str(data["cascade_id"]),
                low=float(data["band"][0]),
                high=float(data["band"][1]),
                w_stage1=float(data["combine"]["w_stage1"]),
                w_verifier=float(data["combine"]["w_verifier"]),
                bias=float(data["combine"]["bias"]),
                threshold=float(data["threshold"]),
                claim_threshold=float(data["claim_threshold"]),
                max_claims=int(data["max_claims"]),
                card=dict(data.get("card") or {}),
            )
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise ValueError(f"{where}: malformed cascade file ({exc!r})") from None

    def in_band(self, p1: float) -> bool:
        return self.low <= p1 < self.high

    def combine(self, p1: float, verifier: float) -> float:
        return sigmoid(self.w_stage1 * logit(p1) + self.w_verifier * logit(verifier) + self.bias)


_LOADED: dict[str, Cascade | None] = {}
_LOCK = threading.Lock()


def load_cascade(path: Path | None = None) -> Cascade | None:
    """The shipped cascade (None when the package has no verifier), or the one in ``path``."""
    from bqas.offline.verifier.runtime import RESOURCE, available

    key = str(path) if path else CASCADE_RESOURCE
    with _LOCK:
        if key not in _LOADED:
            if path is not None:
                _LOADED[key] = Cascade.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
            else:
                res = resources.files("bqas").joinpath("data", RESOURCE, CASCADE_RESOURCE)
                if not res.is_file() or not available():
                    _LOADED[key] = None
                else:
                    _LOADED[key] = Cascade.from_json(json.loads(res.read_text(encoding="utf-8")), key)
        return _LOADED[key]


def claims_to_verify(claims: Sequence[Any], limit: int) -> list[str]:
    """The checkable claims the verifier reads: the least supported by the rule analysis first (claims
    with an unsupported fact, then by the best context-sentence similarity, lowest first), at most ``limit``."""

    def order(c: Any) -> tuple[int, int, float]:
        sim = c.similarity if c.similarity is not None else 1.0
        return (0 if c.invented_fact else 1, 0 if not c.supported else 1, sim)

    checkable = [c for c in claims if c.checkable]
    return [c.text for c in sorted(checkable, key=order)[:limit]]


@dataclass(frozen=True)
class VerifierResult:
    """Stage 2's output for one answer."""

    score: float  # the highest claim probability
    claims: dict[str, float]  # claim text -> P(unsupported)
    model_id: str


def verify(claims: Sequence[str], facts: Sequence[str], cascade: Cascade) -> VerifierResult | None:
    """Run the verifier on ``claims`` (None when there is none)."""
    from bqas.offline.verifier.runtime import claim_probabilities, load_verifier

    if not claims:
        return None
    v = load_verifier()
    probs = claim_probabilities(claims, facts, v)
    return VerifierResult(max(probs), {c: round(p, 4) for c, p in zip(claims, probs, strict=True)}, v.model_id)
