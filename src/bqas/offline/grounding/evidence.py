"""The specifics an offline ``failed`` verdict may rest on: what the facts lack, named with the context
sentence a person compares it with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bqas.offline._textutil import CJK_RE
from bqas.offline.grounding.claims import GroundingAnalysis


@dataclass(frozen=True)
class Evidence:
    """A specific of one claim (number, date, quotation, name) that the facts do not contain: what an
    offline ``failed`` verdict may rest on, since a person can check it in the texts."""

    claim: str
    kind: str
    text: str
    checked_against: str

    def finding(self) -> str:
        return f"{self.kind} {self.text!r} not in the facts"


def evidence_against(analysis: GroundingAnalysis) -> list[Evidence]:
    """Every unsupported specific of the answer's checkable claims, with the context sentence most like its
    claim (what a reader compares it with)."""
    out: list[Evidence] = []
    for c in analysis.checkable:
        against = " ".join((c.best_context or "").split())
        against = against if len(against) <= 200 else against[:199] + "…"
        found = [*c.facts, *c.calendar]
        out.extend(
            Evidence(c.text, f["kind"], f["text"], against)
            for f in found
            if not f["supported"] and not _formatting(c.text, f["kind"], f["text"])
        )
    return out


def _formatting(claim: str, kind: str, text: str) -> bool:
    """Whether an unsupported specific is formatting rather than a claim: a list item's number ("Drugs 4."
    where the splitter cut before the next item's text), "24/7", a single word in scare quotes ("best"),
    a markdown heading's words ("**Order Pickup**:")."""
    escaped = re.escape(text)
    list_item = re.search(rf"(?<![\w.,]){escaped}\.(?:\s*$|\s+[A-Z])", claim) or re.search(r"\b24/7\b", claim)
    if kind == "number" and re.fullmatch(r"\d{1,2}", text) and list_item:
        return True
    if kind == "quote" and not CJK_RE.search(text) and len(text.split()) == 1:
        return True
    return kind == "entity" and re.search(rf"{escaped}\s*(?:\*\*\s*:|:\s*\*\*)", claim) is not None


def evidence_fact(evidence: list[Evidence]) -> str:
    """The :data:`~bqas.offline.methods.FACT_KEY` sentence for a list of findings (the first three)."""
    shown = "; ".join(e.finding() for e in evidence[:3])
    more = f" (+{len(evidence) - 3} more)" if len(evidence) > 3 else ""
    return shown + more


def claims_with_evidence(analysis: GroundingAnalysis, others: list[str]) -> list[str]:
    """``hallucinated_claims``: first each claim with a specific the facts lack, naming that specific and the
    context sentence it was checked against; then the other claims found unsupported (by wording or the
    verifier: estimates, listed as the claim alone)."""
    per_claim: dict[str, list[Evidence]] = {}
    for e in evidence_against(analysis):
        per_claim.setdefault(e.claim, []).append(e)
    lines = [
        f"{claim} [{'; '.join(e.finding() for e in found)}; checked against: {found[0].checked_against!r}]"
        for claim, found in per_claim.items()
    ]
    return [*lines, *(c for c in dict.fromkeys(others) if c not in per_claim)]
