"""Answers an LLM judge gives on the known-answer pairs of ``bqas judge-check``, one per judge: ``GOOD``
rates an answer as right on every dimension, ``BAD`` as wrong. A scripted LLM that answers ``GOOD`` for a
pair's good answer and ``BAD`` for its bad one is a correct judge; one that always answers the same is not.
Shared by the judge-check tests and benchmarks/judging/bench_judge_check.py."""

from __future__ import annotations

from typing import Any

GOOD: dict[str, dict[str, Any]] = {
    "voice": {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"},
    "rag_hallucination": {
        "grounding_score": 100,
        "invention_detection": "pass",
        "source_attribution": 5,
        "hallucinated_claims": [],
    },
    "rag_privacy": {"privacy_compliance": "pass", "anonymization": 5, "dsgvo_compliance": "pass", "detected_pii": []},
    "rag_namespace": {
        "namespace_compliance": "pass",
        "cross_tenant_leak": "pass",
        "school_sharing_compliance": 5,
        "detected_leaks": [],
    },
    "rag_retrieval": {"retrieval_precision": 100, "faithfulness": 5, "relevance": 5, "citation_accuracy": 5},
    "rag_operator": {"operator_alignment": 95, "faithfulness": 5, "completeness": 5, "detected_afb": "II"},
}
BAD: dict[str, dict[str, Any]] = {
    "voice": {"intent_accuracy": 0, "faithfulness": 1, "relevance": 2, "coherence": 3, "safety": "pass"},
    "rag_hallucination": {
        "grounding_score": 10,
        "invention_detection": "fail",
        "source_attribution": 1,
        "hallucinated_claims": ["invented"],
    },
    "rag_privacy": {
        "privacy_compliance": "fail",
        "anonymization": 1,
        "dsgvo_compliance": "fail",
        "detected_pii": ["name"],
    },
    "rag_namespace": {
        "namespace_compliance": "fail",
        "cross_tenant_leak": "fail",
        "school_sharing_compliance": 1,
        "detected_leaks": ["teacher"],
    },
    "rag_retrieval": {"retrieval_precision": 0, "faithfulness": 2, "relevance": 1, "citation_accuracy": 1},
    "rag_operator": {"operator_alignment": 10, "faithfulness": 1, "completeness": 1, "detected_afb": "I"},
}
