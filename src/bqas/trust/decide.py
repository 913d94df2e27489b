"""Applying a calibration profile to a result: accept, reject or escalate, and which tier decided."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bqas.trust.thresholds import decide

if TYPE_CHECKING:
    from bqas.judgment.result import JudgmentResult
    from bqas.trust.profile import CalibrationProfile, TierProfile

LOW_CONFIDENCE = "low confidence"
# Deterministic rules whose escalation no profile may override: a person must look, whatever p_reject says.
HARD_ESCALATIONS = ("judge manipulation",)


def tier_score(result: JudgmentResult, tier: TierProfile) -> float | None:
    """The score the tier's thresholds apply to (its p_reject, or its raw risk), None if it has none."""
    conf = result.confidence.get(tier.tier)
    if conf is None:
        return None
    return conf.p_reject if tier.score == "p_reject" else conf.risk


def tier_decision(result: JudgmentResult, tier: TierProfile) -> str:
    """accept / reject / escalate for one tier of the profile."""
    return decide(tier_score(result, tier), tier.accept_threshold, tier.reject_threshold)


def apply_profile(result: JudgmentResult, profile: CalibrationProfile) -> None:
    """Set ``decision``, ``decided_by`` and ``profile_id``; an escalated result goes to human review
    with the reason ``low confidence``. The first tier (offline, then LLM) that is certified to decide does."""
    result.profile_id = profile.id
    if any(r.startswith(HARD_ESCALATIONS) for r in result.escalation_reasons):
        result.decision, result.decided_by, result.escalation = "escalate", "human", "human_review"
        return
    for tier in profile.tiers:
        if tier.tier not in result.confidence:
            continue
        choice = tier_decision(result, tier)
        if choice != "escalate":
            result.decision = "accept" if choice == "accept" else "reject"
            result.decided_by = tier.tier
            # Certified: no person needs to look (the policy's reasons stay in escalation_reasons).
            result.escalation = None
            return
    result.decision = "escalate"
    result.decided_by = "human"
    if LOW_CONFIDENCE not in result.escalation_reasons:
        result.escalation_reasons.append(LOW_CONFIDENCE)
    result.escalation = "human_review"
