"""The one module of BQAS that imports ``ragas`` (the optional extra ``bqas[ragas]``).

Importing ragas costs 4-6 s and about 200 MB, so nothing imports this module until a RAGAS metric is
used: ``bqas --help``, the offline judge and the judge engine never load it.

ragas sends usage analytics by a blocking HTTP request on every LLM call made through its
``llm_factory``. BQAS never lets a request leave the machine uninvited, so ``RAGAS_DO_NOT_TRACK`` is set
before ragas is imported, and ragas's cached reading of it is cleared in case ragas was imported
earlier by someone else.
"""

from __future__ import annotations

import os

# Must happen before the first ``import ragas`` anywhere in the process.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

import ragas
from ragas import _analytics
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import InstructorBaseRagasLLM
from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    FactualCorrectness,
    Faithfulness,
    NoiseSensitivity,
    SemanticSimilarity,
)
from ragas.metrics.collections.base import BaseMetric
from ragas.prompt.metrics.base_prompt import BasePrompt

_analytics.do_not_track.cache_clear()

RAGAS_VERSION: str = str(ragas.__version__)

__all__ = [
    "RAGAS_VERSION",
    "AnswerRelevancy",
    "BaseMetric",
    "BasePrompt",
    "BaseRagasEmbedding",
    "ContextPrecision",
    "ContextRecall",
    "FactualCorrectness",
    "Faithfulness",
    "InstructorBaseRagasLLM",
    "NoiseSensitivity",
    "SemanticSimilarity",
]
