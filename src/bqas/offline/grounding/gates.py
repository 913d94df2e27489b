"""The offline methods of grounding: the grounding score, the invention gate and the unsupported claims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bqas.offline._textutil import as_list, as_text, is_non_answer
from bqas.offline.grounding.claims import analyse_grounding
from bqas.offline.grounding.evidence import (
    ABSENT_ONLY,
    claims_with_evidence,
    evidence_against,
    evidence_fact,
    shown_wrong,
)
from bqas.offline.methods import FACT_KEY, MethodResult, OfflineContext, offline_method


def _inputs(inputs: Mapping[str, Any]) -> tuple[str, list[str], str]:
    return as_text(inputs.get("answer")), as_list(inputs.get("facts"), split_commas=False), as_text(inputs.get("query"))


@offline_method("claim_grounding")
def claim_grounding(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """grounding_score 0-100: share of the answer's checkable claims supported by the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims", note="no facts to check against")
    if is_non_answer(answer):
        # An empty or "Ok." answer grounds nothing the question asked for: a failure, not "unmeasured".
        why = "empty or trivially short answer: nothing answers the question"
        return MethodResult(0.0, "claims", note=why, details={FACT_KEY: why})
    analysis = analyse_grounding(answer, facts, ctx, query)
    checkable = analysis.checkable
    method = f"claims+embedding:{analysis.embedder}"
    if not checkable:
        return MethodResult(None, method, note="no checkable claims", details=analysis.details())
    supported = sum(1 for c in checkable if c.supported)
    value = round(100.0 * supported / len(checkable), 1)
    details = analysis.details() | {"supported": supported, "checkable": len(checkable)}
    return MethodResult(value, method, details=details)


@offline_method("claim_invention_gate")
def claim_invention_gate(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """invention_detection pass/fail: fail if a claim has a number/date/entity/quote not in the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims:facts", note="no facts to check against")
    if not answer:
        return MethodResult("pass", "claims:facts", note="empty answer: nothing claimed")
    analysis = analyse_grounding(answer, facts, ctx, query)
    invented = [
        {"claim": c.text, "unsupported": [f for f in c.facts if not f["supported"]]}
        for c in analysis.checkable
        if c.invented_fact
    ]
    n_facts = sum(len(c.facts) for c in analysis.checkable)
    note = None if n_facts else "no checkable numbers/dates/entities in the answer"
    details: dict[str, Any] = {"invented": invented, "checked_facts": n_facts, "language": analysis.language}
    shown = shown_wrong(evidence_against(analysis))
    if shown:
        details[FACT_KEY] = evidence_fact(shown)
    elif invented:
        # Still "fail", but an estimate: without a fact the verdict goes to a person instead of failing.
        note = ABSENT_ONLY
    return MethodResult("fail" if invented else "pass", "claims:facts", note=note, details=details)


@offline_method("unsupported_claims")
def unsupported_claims(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """hallucinated_claims: texts of the checkable claims that are not supported by the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims", note="no facts to check against")
    if not answer:
        return MethodResult([], "claims", note="empty answer")
    analysis = analyse_grounding(answer, facts, ctx, query)
    bad = [c for c in analysis.checkable if not c.supported]
    return MethodResult(
        claims_with_evidence(analysis, [c.text for c in bad]),
        f"claims+embedding:{analysis.embedder}",
        details={"reasons": {c.text: c.reason for c in bad}},
    )
