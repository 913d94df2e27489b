"""The specifics an offline ``failed`` verdict may rest on: what the facts lack, named with the context
sentence a person compares it with."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bqas.offline._textutil import CJK_RE, content_stems, stems_found
from bqas.offline.grounding.claims import GroundingAnalysis
from bqas.offline.grounding.dates import date_supported, extract_dates
from bqas.offline.grounding.names import _norm_words, extract_entities, text_supported
from bqas.offline.grounding.numbers import extract_numbers, number_supported

#: The note of an invention gate whose findings are only names the facts lack (none the facts contradict).
ABSENT_ONLY = "names the facts lack but do not contradict: absent, not shown wrong"


@dataclass(frozen=True)
class Evidence:
    """A specific of one claim (number, date, quotation, name) that the facts do not contain: what an
    offline ``failed`` verdict may rest on, since a person can check it in the texts."""

    claim: str
    kind: str
    text: str
    checked_against: str
    #: For a name: the name the facts give in its place (in the sentence most like the claim, which shares
    #: another name, number or date with it). None for a name that is only absent.
    instead: str | None = None

    @property
    def shows_wrong(self) -> bool:
        """Whether this is ground for ``failed``: a number, date or quotation the facts lack, or a name where
        the facts give another. A name that is only absent is not: answers add names from what everybody
        knows ("the United States", "Social Security") as often as they invent them."""
        return self.kind != "entity" or self.instead is not None

    def finding(self) -> str:
        if self.instead is not None:
            return f"{self.kind} {self.text!r} not in the facts, which say {self.instead!r}"
        return f"{self.kind} {self.text!r} not in the facts"


def evidence_against(analysis: GroundingAnalysis) -> list[Evidence]:
    """Every unsupported specific of the answer's checkable claims, with the context sentence most like its
    claim (what a reader compares it with)."""
    out: list[Evidence] = []
    for c in analysis.checkable:
        sentence = " ".join((c.best_context or "").split())
        against = sentence if len(sentence) <= 200 else sentence[:199] + "…"
        for f in (*c.facts, *c.calendar):
            if f["supported"] or _formatting(c.text, f["kind"], f["text"]):
                continue
            instead = _name_instead(c.text, sentence, analysis.language) if f["kind"] == "entity" else None
            out.append(Evidence(c.text, f["kind"], f["text"], against, instead))
        out.extend(Evidence(c.text, f["kind"], f["text"], against, f["instead"]) for f in c.swapped)
    return out


def shown_wrong(evidence: list[Evidence]) -> list[Evidence]:
    """The findings that are ground for ``failed`` (see :attr:`Evidence.shows_wrong`)."""
    return [e for e in evidence if e.shows_wrong]


def _mostly_worded_like(claim: str, sentence: str) -> bool:
    """Whether most of the claim's content stems are the sentence's: the same statement in its words."""
    stems = [s for s in content_stems(claim) if not CJK_RE.search(s)]
    if len(stems) < 3:
        return False
    found = stems_found(stems, set(content_stems(sentence)))
    return sum(found) >= 0.6 * len(stems)


def _name_instead(claim: str, sentence: str, language: str) -> str | None:
    """The name ``sentence`` gives that ``claim`` lacks, when the two are about the same thing (they share a
    name, a number or a date): "Born in Paris in 1867, Marie Curie ..." against "Marie Curie was born in
    Warsaw in 1867" gives "Warsaw"."""
    if not sentence:
        return None
    claim_norm = _norm_words(claim)
    claim_words = set(claim_norm.split())
    names = extract_entities(sentence, language)
    others = [n for n in names if not text_supported(n, claim_norm, claim_words)]
    if not others:
        return None
    shared = any(text_supported(n, claim_norm, claim_words) for n in names) or _mostly_worded_like(claim, sentence)
    if not shared:
        claim_dates, claim_rest = extract_dates(claim)
        sentence_dates, sentence_rest = extract_dates(sentence)
        numbers = extract_numbers(sentence_rest, context=True)
        shared = any(date_supported(d, sentence_dates) for d in claim_dates) or any(
            number_supported(n, numbers) for n in extract_numbers(claim_rest)
        )
    return others[0] if shared else None


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
