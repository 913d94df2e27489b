"""Build RAGAS ``collections`` metrics by name, on BQAS's LLM and embedding seams, in a judge language."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bqas.llm.client import LLMClient
from bqas.ragas.adapters import SeamEmbedding, SeamLLM
from bqas.ragas.judge_prompts import LocalizationReport, localize_pipeline_prompts
from bqas.ragas.metrics import EMBEDDING_ONLY, METRICS


@dataclass
class MetricPipeline:
    """Metric instances by name, the per-metric LLM adapters (for accounting) and the localization report."""

    metrics: dict[str, Any]
    llms: dict[str, SeamLLM]
    embeddings: SeamEmbedding
    localization: LocalizationReport


def build_metric(name: str, llm: SeamLLM | None, embeddings: SeamEmbedding) -> Any:
    """One fresh ragas collections metric. Raises ``ValueError`` for an unknown name or a missing LLM."""
    from bqas.ragas import lib

    if name not in METRICS:
        raise ValueError(f"unknown RAGAS metric {name!r}; known: {', '.join(METRICS)}")
    if name == "semantic_similarity":
        return lib.SemanticSimilarity(embeddings=embeddings)
    if llm is None:
        raise ValueError(f"{name} needs an LLM")
    if name == "faithfulness":
        return lib.Faithfulness(llm=llm)
    if name == "answer_relevancy":
        return lib.AnswerRelevancy(llm=llm, embeddings=embeddings)
    if name == "context_recall":
        return lib.ContextRecall(llm=llm)
    if name == "context_precision":
        # ragas's ContextPrecision is the reference-based variant (ContextPrecisionWithReference).
        return lib.ContextPrecision(llm=llm)
    if name == "noise_sensitivity":
        return lib.NoiseSensitivity(llm=llm)
    return lib.FactualCorrectness(llm=llm)


def build_metric_pipeline(
    names: Sequence[str],
    *,
    client: LLMClient | None,
    judge_language: str = "en",
    embeddings: SeamEmbedding | None = None,
) -> MetricPipeline:
    """Fresh metrics for ``names`` (those needing an LLM are left out when ``client`` is None), localized.

    Every metric gets its own :class:`SeamLLM` over the shared ``client``: one cache and one concurrency
    limit, but calls and tokens counted per metric. With ``judge_language="zh"`` the prompts are switched
    to the committed Chinese cache (:func:`localize_pipeline_prompts`); ``en`` leaves them untouched.
    """
    emb = embeddings or SeamEmbedding()
    metrics: dict[str, Any] = {}
    llms: dict[str, SeamLLM] = {}
    for name in names:
        if name in metrics:
            continue
        llm = None
        if name not in EMBEDDING_ONLY:
            if client is None:
                continue
            llm = llms[name] = SeamLLM(client)
        metrics[name] = build_metric(name, llm, emb)
    report = localize_pipeline_prompts(metrics, judge_language)
    return MetricPipeline(metrics, llms, emb, report)
