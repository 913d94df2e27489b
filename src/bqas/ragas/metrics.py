"""The RAGAS metrics BQAS offers and the sample fields each one needs (no ragas import)."""

from __future__ import annotations

#: Metric name -> the ragas sample fields its ``ascore`` takes (ragas names).
METRIC_FIELDS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("user_input", "response", "retrieved_contexts"),
    "answer_relevancy": ("user_input", "response"),
    "context_recall": ("user_input", "retrieved_contexts", "reference"),
    "context_precision": ("user_input", "reference", "retrieved_contexts"),
    "noise_sensitivity": ("user_input", "response", "reference", "retrieved_contexts"),
    "factual_correctness": ("response", "reference"),
    "semantic_similarity": ("reference", "response"),
}

METRICS: tuple[str, ...] = tuple(METRIC_FIELDS)

#: Metrics scored by embeddings alone (no LLM, no judge prompt).
EMBEDDING_ONLY: frozenset[str] = frozenset({"semantic_similarity"})

#: Metrics that call the LLM.
LLM_METRICS: tuple[str, ...] = tuple(m for m in METRICS if m not in EMBEDDING_ONLY)

#: Accepted aliases of sample fields -> ragas names.
FIELD_ALIASES: dict[str, str] = {
    "question": "user_input",
    "answer": "response",
    "contexts": "retrieved_contexts",
    "ground_truth": "reference",
}
