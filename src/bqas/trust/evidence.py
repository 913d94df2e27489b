"""Run the offline tier on one sample and return its features (for fitting and measuring p_reject models)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bqas.offline.p_reject_features import extract_features

if TYPE_CHECKING:
    from bqas.judging.offline import OfflineJudge
    from bqas.judgment.result import TierConfidence
    from bqas.judgment.spec import JudgeSpec
    from bqas.offline.methods import MethodResult


def offline_features(
    offline: OfflineJudge, spec: JudgeSpec, values: Mapping[str, Any], language: str
) -> tuple[dict[str, float], float | None, TierConfidence]:
    """The features the generic offline ``p_reject`` model sees for this sample, the tier's raw risk, and
    the offline confidence the engine gives (a registered provider's, else the generic model's)."""
    from bqas.offline.p_reject import offline_confidence, raw_risk

    evidence: dict[str, MethodResult] = {}
    dims, _ = offline.evaluate(spec, values, language, evidence)
    conf = offline_confidence(spec, values, dims, evidence)
    return extract_features(spec, values, dims, evidence), raw_risk(spec, dims), conf
