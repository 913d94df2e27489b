"""Run the offline tier on one sample and return its features (for fitting and measuring p_reject models)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bqas.trust.features import extract_features

if TYPE_CHECKING:
    from bqas.judging.offline import OfflineJudge
    from bqas.judging.spec import JudgeSpec
    from bqas.offline.methods import MethodResult


def offline_features(
    offline: OfflineJudge, spec: JudgeSpec, values: Mapping[str, Any], language: str
) -> tuple[dict[str, float], float | None]:
    """The feature dict the offline ``p_reject`` model sees for this sample, and the tier's raw risk."""
    from bqas.trust.offline import raw_risk

    evidence: dict[str, MethodResult] = {}
    dims, _ = offline.evaluate(spec, values, language, evidence)
    return extract_features(spec, values, dims, evidence), raw_risk(spec, dims)
