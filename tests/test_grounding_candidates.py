"""Grounding on long contexts embeds only the candidate units (those sharing content words with a claim),
and the built contexts are cached: the same decisions at a fraction of the embedding cost."""

from __future__ import annotations

from bqas.offline import grounding
from bqas.offline.grounding import context as grounding_context
from bqas.offline.methods import OfflineContext
from offline_spies import CountingEmbedder

FILLER = [f"Der Raum {i} im Nordflügel wird für die Arbeitsgemeinschaft Nummer {i} genutzt." for i in range(40)]
FACTS = [
    " ".join(FILLER[:20]) + " Die Stadtbibliothek Augsburg öffnet montags um 9 Uhr.",
    " ".join(FILLER[20:]) + " Die Anmeldung kostet 12 Euro, ermäßigt 6 Euro.",
]
ANSWER = "Die Stadtbibliothek Augsburg öffnet montags um 9 Uhr. Die Anmeldung kostet 12 Euro."


def _run(embed_all: bool) -> tuple[CountingEmbedder, grounding.GroundingAnalysis]:
    emb = CountingEmbedder()
    grounding._CONTEXTS.clear()
    ctx = OfflineContext(language="de", embedder_factory=lambda: emb)
    if embed_all:
        saved = grounding_context.EMBED_ALL_UNITS
        grounding_context.EMBED_ALL_UNITS = 10**9
        try:
            return emb, grounding.analyse_grounding(ANSWER, FACTS, ctx)
        finally:
            grounding_context.EMBED_ALL_UNITS = saved
    return emb, grounding.analyse_grounding(ANSWER, FACTS, ctx)


def test_long_context_embeds_only_candidate_units() -> None:
    full_emb, full = _run(True)
    cand_emb, cand = _run(False)
    n_units = len(grounding._build_context(FACTS).units)
    assert n_units > grounding.EMBED_ALL_UNITS
    assert len(full_emb.asked) == 2 + n_units
    # Two claims, at most CANDIDATES_PER_CLAIM units each (before: every one of the 42 units).
    assert len(cand_emb.asked) <= 2 + 2 * grounding.CANDIDATES_PER_CLAIM
    assert [c.supported for c in cand.checkable] == [c.supported for c in full.checkable] == [True, True]
    assert [c.best_context for c in cand.checkable] == [c.best_context for c in full.checkable]


def test_claim_without_shared_words_falls_back_to_the_first_units() -> None:
    context = grounding._build_context(FACTS)
    chosen = grounding.candidate_units(["设备总重七千公斤。"], context)
    assert chosen == list(range(min(len(context.units), grounding._FALLBACK_UNITS)))


def test_built_contexts_are_cached_and_bounded() -> None:
    grounding._CONTEXTS.clear()
    first = grounding._context_for(FACTS)
    assert grounding._context_for(list(FACTS)) is first
    for i in range(grounding._CONTEXT_CACHE_SIZE + 5):
        grounding._context_for([f"Fakt {i}."])
    assert len(grounding._CONTEXTS) == grounding._CONTEXT_CACHE_SIZE
