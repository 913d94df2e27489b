"""Features of one answer's grounding, for the learned grounding scorer (:mod:`bqas.offline.grounding_model`).

Everything here is derived from the :class:`~bqas.offline.grounding.GroundingAnalysis` that the rule-based
methods compute anyway (claims, their checked facts, the claim x context-sentence cosine matrix), plus one
query/answer similarity whose sentence vectors are already in the embedder's cache. No second model pass.

A model file names the features it uses (a subset of ``FEATURE_NAMES``); one naming a feature this version
does not compute is refused when loaded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from bqas.offline._textutil import CJK_RE, cjk_bigrams, content_stems, stems_found, words
from bqas.offline.grounding import ClaimCheck, GroundingAnalysis, context_words

#: Feature names, in the order of the model's coefficient vector.
FEATURE_NAMES: tuple[str, ...] = (
    "share_supported",  # share of checkable claims the rules call supported
    "sim_min",  # weakest claim: its best context-sentence cosine
    "sim_mean",  # mean best-sentence cosine over the claims
    "sim2_mean",  # mean second-best context-sentence cosine
    "sim_gap_weakest",  # best minus second-best cosine of the weakest claim
    "lex_min",  # weakest claim: share of its content words found anywhere in the contexts
    "lex_mean",
    "best_lex_min",  # weakest claim: share of its content words found in its best sentence
    "best_lex_mean",
    "novel_share",  # share of the answer's content words not in any context (specificity)
    "novel_words",  # log1p of the number of the answer's content words not in any context
    "novel_words_weakest",  # log1p of the most content words not in any context in one claim
    "weak_claims_share",  # share of claims with more than a third of their content words not in any context
    "invented_share",  # share of claims with an unsupported number/date/entity/quote
    "unsupported_numbers",  # log1p counts per kind
    "unsupported_dates",
    "unsupported_entities",
    "unsupported_quotes",
    "facts_checked",  # log1p of all checked facts
    "negation_mismatch",  # share of claims whose negation differs from their best sentence
    "modality_mismatch",  # share of claims whose hedging/modality differs from their best sentence
    "claims",  # log1p of the checkable claims
    "uncheckable_share",  # share of sentences too short or questions
    "length_ratio",  # log of answer characters / context characters
    "qa_relevance",  # cosine of the question and the answer (0 without a question)
    # Novelty against the contexts *and the question* (restating what was asked is no invention):
    "novel_share_q",  # share of the answer's content words in neither the contexts nor the question
    "novel_words_q",  # log1p of their number
    "novel_weakest_q",  # the highest such share in one claim
    "novel_run_max",  # log1p of the longest run of consecutive such words in one claim (an added phrase)
    "novel_runs",  # log1p of the number of runs of >= 2 such words (added details)
    "weak_claims",  # log1p of the number of claims with more than a third of such words
    "novel_digits",  # log1p of the digit tokens in neither the contexts nor the question
    # The same, as shares of the claims, so that they do not grow with the answer's length:
    "novel_runs_share",  # share of claims with a run of >= 2 words in neither the contexts nor the question
    "weak_claims_q_share",  # share of claims with more than a third of such words
    "most_novel_sim",  # best context-sentence cosine of the claim with the highest share of such words
)

_NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nor",
        "nothing",
        "nobody",
        "neither",
        "without",
        "cannot",
        "n't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "doesn't",
        "don't",
        "didn't",
        "won't",
        "can't",
        "couldn't",
        "shouldn't",
        "hasn't",
        "haven't",
        "hadn't",
        "nicht",
        "kein",
        "keine",
        "keinen",
        "keinem",
        "keiner",
        "keines",
        "nie",
        "niemals",
        "nichts",
        "niemand",
        "ohne",
        "weder",
    ]
)
_ZH_NEGATION_RE = re.compile(r"[不没無无非未别莫勿]")
_MODALS = frozenset(
    [
        "may",
        "might",
        "could",
        "possibly",
        "perhaps",
        "probably",
        "likely",
        "unlikely",
        "maybe",
        "suggest",
        "suggests",
        "seem",
        "seems",
        "appear",
        "appears",
        "can",
        "kann",
        "könnte",
        "könnten",
        "dürfte",
        "vielleicht",
        "möglicherweise",
        "wahrscheinlich",
        "vermutlich",
        "eventuell",
        "scheint",
        "scheinen",
        "wohl",
    ]
)
_ZH_MODAL_RE = re.compile(r"可能|也许|或许|大概|似乎|好像|应该")


def _has_negation(text: str) -> bool:
    toks = words(text)
    if any(t in _NEGATIONS or t.endswith("n't") for t in toks):
        return True
    return bool(CJK_RE.search(text) and _ZH_NEGATION_RE.search(text))


def _has_modality(text: str) -> bool:
    if any(t in _MODALS for t in words(text)):
        return True
    return bool(CJK_RE.search(text) and _ZH_MODAL_RE.search(text))


def _overlap(stems: list[str], haystack_text: str) -> float:
    """Share of ``stems`` (Latin stems and CJK bigrams) that occur in ``haystack_text``."""
    if not stems:
        return 0.0
    hay = set(content_stems(haystack_text))
    latin = [s for s in stems if not CJK_RE.search(s)]
    grams = [s for s in stems if CJK_RE.search(s)]
    bigrams = set(cjk_bigrams(haystack_text))
    hits = sum(stems_found(latin, hay)) + sum(1 for g in grams if g in bigrams)
    return hits / len(stems)


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return float(sum(vals) / len(vals)) if vals else 0.0


def _novelty(claims: list[ClaimCheck], facts: list[str], query: str) -> tuple[list[float], list[float]]:
    """The query-aware novelty features: per claim, which content words occur in neither the contexts
    nor the question, and how they cluster (an invented detail is a run of new words; a paraphrase
    scatters single ones). The analysis already matched each stem against the contexts; only the ones
    it did not find are matched against the (short) question here.

    Returns the features (the ``novel_share_q`` ... ``weak_claims_q_share`` block without the last) and
    each claim's share of such words."""
    vocab = context_words(facts)
    q_stems, q_bigrams, q_vocab = set(content_stems(query)), set(cjk_bigrams(query)), set(words(query))
    total = novel = run_max = runs = weak = digits = run_claims = 0
    weakest = 0.0
    shares: list[float] = []
    for claim in claims:
        flags = [
            new and not (g in q_bigrams if CJK_RE.search(g) else stems_found([g], q_stems)[0])
            for g, new in zip(claim.stems, claim.unfound, strict=True)
        ]
        digits += sum(1 for t in words(claim.text) if t.isdigit() and t not in vocab and t not in q_vocab)
        if not flags:
            shares.append(0.0)
            continue
        k = sum(flags)
        shares.append(k / len(flags))
        total += len(flags)
        novel += k
        weakest = max(weakest, k / len(flags))
        weak += k / len(flags) > 1 / 3
        run = claim_runs = 0
        for new in flags:
            run = run + 1 if new else 0
            run_max = max(run_max, run)
            claim_runs += run == 2
        runs += claim_runs
        run_claims += claim_runs > 0
    n = max(1, len(claims))
    features = [
        novel / total if total else 0.0,
        math.log1p(novel),
        weakest,
        math.log1p(run_max),
        math.log1p(runs),
        math.log1p(weak),
        math.log1p(digits),
        run_claims / n,
        weak / n,
    ]
    return features, shares


def grounding_features(
    analysis: GroundingAnalysis,
    answer: str,
    facts: list[str],
    qa_relevance: float | None = None,
    query: str = "",
) -> list[float] | None:
    """The feature vector (in ``FEATURE_NAMES`` order), or None when no claim could be checked."""
    checkable = analysis.checkable
    if not checkable or analysis.similarities is None:
        return None
    sims = np.asarray(analysis.similarities, dtype=np.float64)
    if sims.shape[1] >= 2:
        top2 = -np.sort(-sims, axis=1)[:, :2]
        best, second = top2[:, 0], top2[:, 1]
    else:
        # One context sentence: there is no second-best one. Zeros here would read as "no other sentence
        # is anywhere near it" (sim2_mean is a sign of support on MTRAG) and push a grounded one-sentence
        # answer over a one-sentence context towards unfaithful; the best one is the honest stand-in (gap 0).
        best = sims[:, 0]
        second = best.copy()
    weakest = int(best.argmin())
    lex = [c.lexical_overlap or 0.0 for c in checkable]
    best_lex: list[float] = []
    neg_mismatch = 0
    mod_mismatch = 0
    for c in checkable:
        sentence = c.best_context or ""
        best_lex.append(_overlap(content_stems(c.text), sentence))
        neg_mismatch += _has_negation(c.text) != _has_negation(sentence)
        mod_mismatch += _has_modality(c.text) != _has_modality(sentence)
    missing: dict[str, int] = {"number": 0, "date": 0, "entity": 0, "quote": 0}
    n_facts = 0
    for c in checkable:
        for f in c.facts:
            n_facts += 1
            if not f["supported"]:
                missing[f["kind"]] = missing.get(f["kind"], 0) + 1
    # Specificity: content words of the answer not found in any context, from the per-claim overlaps
    # (weighted by each claim's number of content words) rather than a second pass over the contexts.
    sizes = [len(content_stems(c.text)) for c in checkable]
    novel = 1.0 - sum(v * k for v, k in zip(lex, sizes, strict=True)) / sum(sizes) if sum(sizes) else 0.0
    joined_len = sum(len(f) for f in facts)
    n = len(checkable)
    novelty, shares = _novelty(checkable, facts, query)
    return [
        sum(1 for c in checkable if c.supported) / n,
        float(best[weakest]),
        float(best.mean()),
        float(second.mean()),
        float(best[weakest] - second[weakest]),
        min(lex),
        _mean(lex),
        min(best_lex),
        _mean(best_lex),
        novel,
        math.log1p(sum((1.0 - v) * k for v, k in zip(lex, sizes, strict=True))),
        math.log1p(max((1.0 - v) * k for v, k in zip(lex, sizes, strict=True))),
        sum(1 for v in lex if v < 2 / 3) / n,
        sum(1 for c in checkable if c.invented_fact) / n,
        math.log1p(missing["number"]),
        math.log1p(missing["date"]),
        math.log1p(missing["entity"]),
        math.log1p(missing["quote"]),
        math.log1p(n_facts),
        neg_mismatch / n,
        mod_mismatch / n,
        math.log1p(n),
        1.0 - n / len(analysis.claims),
        math.log((len(answer) + 1) / (joined_len + 1)),
        qa_relevance if qa_relevance is not None else 0.0,
        *novelty,
        float(best[int(np.argmax(shares))]),
    ]
