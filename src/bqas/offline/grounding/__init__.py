"""Grounding / hallucination checks for RAG answers without NLI.

No usable German/Chinese NLI model exists on PyPI, so this module does not pretend to decide entailment.
It checks what can be checked mechanically and uses embeddings only as a topical-support signal:

1. The answer is split into claims (sentences; German/English ``. ! ? ;`` and Chinese ``。！？；``).
   Questions and claims with fewer than two content words (e.g. "Sure!") are not checkable.
2. From each claim, *checkable facts* are extracted: numbers with units (kg, t, %, €, mm, years,
   Chinese 公斤/千克/吨/万 ...; "7.370 kg" = "7370 kg" = "7,37 t"), dates, named entities (acronyms,
   alphanumeric tokens, titled names, English capitalised phrases, Latin names inside Chinese text) and
   quoted strings. Each is looked up in the facts/contexts: a number must occur there with the same value
   (after unit conversion; a coarser rounding of a context value counts, "7 t" for 7370 kg), a date with
   the same components, an entity / quotation as (normalised) text.
3. Each claim is compared with every context sentence (embedding cosine) and its content words with the
   contexts' words (lexical overlap).

A claim is *supported* when all its checkable facts are found AND it is topically supported: best-sentence
cosine >= ``SIM_THRESHOLD`` (0.55) OR lexical overlap >= ``LEX_THRESHOLD`` (0.7); for a claim that has
checkable facts, all found, the bars are lower (0.25 / 0.3), since the found facts are evidence already.
Numbers are compared as magnitudes (signs are ignored); thousands separators are ``.`` ``,`` ``'`` and
narrow/no-break spaces, not plain spaces. Methods:

* ``claim_grounding`` -> grounding_score 0-100 = share of supported checkable claims.
* ``claim_invention_gate`` -> ``"fail"`` if any claim has an unsupported number/date/entity/quotation
  (the strong signal), else ``"pass"``.
* ``unsupported_claims`` -> the texts of the checkable claims that are not supported.

What it cannot see: a wrong claim made only of words that also occur in the context (swapped roles,
negation: "X is not Y" vs "X is Y"), a name swapped for a common noun (German nouns are not read as names),
and any paraphrase the embedding does not recognise.

What an offline ``failed`` may rest on (``evidence``): a number, date or quotation the facts lack, or a name
where the facts' sentence about the same thing gives another. A name the facts only lack is no such ground
(answers add names from what everybody knows as often as they invent them): the gate still fails, as an
estimate, and a person decides. Thresholds and figures: ``docs/offline-judge.md``.

The package by job: ``numbers`` (digits, units, number words, Chinese numerals), ``dates`` (written dates,
weekdays, months), ``names`` (entities, quotations), ``context`` (the facts prepared and cached), ``claims``
(the analysis of one answer), ``evidence`` (what a ``failed`` verdict may name), ``gates`` (the offline
methods).
"""

from __future__ import annotations

from bqas.offline.grounding.claims import (
    LEX_THRESHOLD,
    LEX_THRESHOLD_WITH_FACTS,
    SIM_THRESHOLD,
    SIM_THRESHOLD_WITH_FACTS,
    ClaimCheck,
    GroundingAnalysis,
    analyse_grounding,
)
from bqas.offline.grounding.context import (
    _CONTEXT_CACHE_SIZE,
    _CONTEXTS,
    _FALLBACK_UNITS,
    CANDIDATES_PER_CLAIM,
    EMBED_ALL_UNITS,
    _build_context,
    _context_for,
    candidate_units,
    context_words,
)
from bqas.offline.grounding.dates import (
    _DATE_PATTERNS,
    DateFact,
    _date_prefilter,
    date_supported,
    extract_dates,
    fold_day,
    month_names,
    weekdays_of,
    weekdays_written,
)
from bqas.offline.grounding.evidence import (
    ABSENT_ONLY,
    Evidence,
    claims_with_evidence,
    evidence_against,
    evidence_fact,
    shown_wrong,
)
from bqas.offline.grounding.gates import claim_grounding, claim_invention_gate, unsupported_claims
from bqas.offline.grounding.names import extract_entities, extract_quotes, text_supported
from bqas.offline.grounding.numbers import NumberFact, extract_numbers, number_supported

__all__ = [
    "ABSENT_ONLY",
    "CANDIDATES_PER_CLAIM",
    "EMBED_ALL_UNITS",
    "LEX_THRESHOLD",
    "LEX_THRESHOLD_WITH_FACTS",
    "SIM_THRESHOLD",
    "SIM_THRESHOLD_WITH_FACTS",
    "_CONTEXTS",
    "_CONTEXT_CACHE_SIZE",
    "_DATE_PATTERNS",
    "_FALLBACK_UNITS",
    "ClaimCheck",
    "DateFact",
    "Evidence",
    "GroundingAnalysis",
    "NumberFact",
    "_build_context",
    "_context_for",
    "_date_prefilter",
    "analyse_grounding",
    "candidate_units",
    "claim_grounding",
    "claim_invention_gate",
    "claims_with_evidence",
    "context_words",
    "date_supported",
    "evidence_against",
    "evidence_fact",
    "extract_dates",
    "extract_entities",
    "extract_numbers",
    "extract_quotes",
    "fold_day",
    "month_names",
    "number_supported",
    "shown_wrong",
    "text_supported",
    "unsupported_claims",
    "weekdays_of",
    "weekdays_written",
]
