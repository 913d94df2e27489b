"""A generated RAG test item and its JSONL record (the seed's fields, usable by a scenario as it is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bqas.ragsynth.chunks import Passage

#: Why an item was dropped (counted per reason in the summary).
DROP_REASONS: dict[str, str] = {
    "wrong_language": "the question is not in the requested language",
    "near_copy": "the question copies its passage (lexical overlap at or above --max-overlap)",
    "answer_in_question": "the question already holds its answer",
    "ungrounded": "the reference answer is not supported by its available_facts (offline grounding)",
    "answerable": "an 'unanswerable' question that a passage of the documents may answer",
    "duplicate": "same text after normalisation as a kept question",
    "near_duplicate": "embedding too similar to a kept question",
    "bad_structure": "an LLM item that is not an object with kind, query, reference, supporting_sentences, "
    "chunk_ids (of the passages shown) and expected_concepts",
    "unsupported_quote": "an LLM item whose supporting sentences do not stand in its passages",
}


@dataclass
class RagItem:
    """One question with its ground truth."""

    kind: str
    language: str
    query: str
    reference: str
    passages: list[Passage]
    facts: list[str]
    concepts: list[str]
    answer: str = ""
    #: The source sentence(s): one item per sentence for the single-passage kinds.
    key: str = ""
    tags: list[str] = field(default_factory=list)
    cues: tuple[str, ...] = ()
    topic: str = ""
    #: Whether the item may be one of a multi-passage pair: its question names its subject without the
    #: section (a "Key: value" row needs the heading) and its pattern allows pairing.
    standalone: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def to_record(item: RagItem, index: int, source: str) -> dict[str, Any]:
    """The JSONL record: ``query``, ``reference``, ``reference_contexts`` (passage texts, as RAGAS reads them)
    with ``reference_context_sources`` (chunk id, source, page, heading, in the same order),
    ``available_facts``, ``expected_concepts``, ``language``, ``kind`` and ``expected`` where the kind fixes it."""
    record: dict[str, Any] = {
        "id": f"rag-{item.language}-{index:04d}",
        "kind": item.kind,
        "language": item.language,
        "query": item.query,
        "reference": item.reference,
        "reference_contexts": [p.text for p in item.passages],
        "reference_context_sources": [
            {"chunk_id": p.chunk_id, "source": p.source, "page": p.page, "heading": p.heading} for p in item.passages
        ],
        "available_facts": list(item.facts),
        "expected_concepts": list(item.concepts),
    }
    if item.kind == "unanswerable":
        record["expected"] = {"answerable": False, "response": item.reference}
    record.update(item.extra)
    record["tags"] = list(dict.fromkeys(["synthetic", "synth-rag", item.kind, *item.tags]))
    record["source"] = source
    return record
