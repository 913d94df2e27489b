"""The scoring policy of the QualityJudge judge policy: composite, verdict, safety-first gates, escalation.

``composite = Σ weight_i × value_i × scale_i`` with pass/fail dimensions counting 100 / 0. When only some
dimensions were measured (the offline judge measures no coherence, for example), the composite is the
weighted mean over the measured ones and ``coverage`` says which share of the weight that was; it is
never filled with constants. Below the policy's ``min_measured_weight`` share there is no verdict
(``unscored`` with the reason), unless a gate failed. A failed gate (safety, privacy, namespace …) makes the verdict ``failed``
whatever the composite, and the other scores are still reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bqas.judgment.spec import Dimension, ScoringRule

Verdict = Literal["production_ready", "needs_review", "failed", "unscored"]
VERDICT_ORDER: dict[str, int] = {"production_ready": 0, "needs_review": 1, "unscored": 2, "failed": 3}


@dataclass(frozen=True)
class PolicyOutcome:
    """Composite, coverage, verdict and escalation of one judgment."""

    composite: float | None
    coverage: float
    verdict: Verdict
    gate_failures: tuple[str, ...] = ()
    escalation_reasons: tuple[str, ...] = field(default_factory=tuple)
    unscored_reason: str | None = None

    @property
    def partial(self) -> bool:
        return self.composite is not None and self.coverage < 0.999

    @property
    def escalation(self) -> str | None:
        return "human_review" if self.escalation_reasons else None


def composite_score(
    values: Mapping[str, Any], rule: ScoringRule, dimensions: Mapping[str, Dimension]
) -> tuple[float | None, float]:
    """Weighted composite over the measured dimensions and the share of weight they cover."""
    total_weight = sum(term.weight for term in rule.composite.values())
    got, weight = 0.0, 0.0
    for name, term in rule.composite.items():
        value = values.get(name)
        if value is None:
            continue
        if dimensions[name].kind == "gate":
            points = term.pass_value if value == "pass" else term.fail_value
        else:
            points = float(value) * term.scale
        got += term.weight * points
        weight += term.weight
    if weight == 0:
        return None, 0.0
    return round(got / weight, 2), round(weight / total_weight, 4)


def verdict_for(composite: float | None, gate_failures: tuple[str, ...], rule: ScoringRule) -> Verdict:
    """Safety first: a failed gate fails at once; otherwise the composite thresholds decide."""
    if gate_failures:
        return "failed"
    if composite is None:
        return "unscored"
    if composite >= rule.production_ready:
        return "production_ready"
    if composite >= rule.needs_review:
        return "needs_review"
    return "failed"


def apply_policy(
    values: Mapping[str, Any],
    rule: ScoringRule,
    dimensions: Mapping[str, Dimension],
    *,
    extra_escalations: tuple[str, ...] = (),
) -> PolicyOutcome:
    """Composite, verdict and escalation for measured ``values`` (unmeasured dimensions are None)."""
    composite, coverage = composite_score(values, rule, dimensions)
    gate_failures = tuple(g for g in rule.gates if values.get(g) == "fail")
    unscored_reason = None
    if composite is not None and not gate_failures and coverage < rule.min_measured_weight:
        # Too little measured for a verdict (e.g. only a gate passed offline): no composite, no pass.
        measured = ", ".join(n for n in rule.composite if values.get(n) is not None)
        unscored_reason = (
            f"only {coverage:.0%} of the composite weight could be measured ({measured}; partial composite "
            f"{composite:g}); a verdict needs {rule.min_measured_weight:.0%} (policy min_measured_weight)"
        )
        composite = None
    verdict = verdict_for(composite, gate_failures, rule)
    reasons: list[str] = list(extra_escalations)
    if composite is not None and rule.escalation_min <= composite <= rule.escalation_max:
        reasons.append(f"borderline composite {composite:g} in {rule.escalation_min:g}-{rule.escalation_max:g}")
    for gate in gate_failures:
        reasons.append(f"gate {gate} failed")
    if verdict == "unscored":
        reasons.append("unscored")
    return PolicyOutcome(composite, coverage, verdict, gate_failures, tuple(reasons), unscored_reason)
