"""The one LLM seam: an OpenAI-compatible chat client with structured output, retries, a concurrency
limit, token accounting and an on-disk response cache. Judges, RAGAS, synthesis and intent
classification all call it."""

from bqas.llm.client import Completion, LLMClient, LLMConfig, LLMError
from bqas.llm.logprobs import TokenLogprob

__all__ = ["Completion", "LLMClient", "LLMConfig", "LLMError", "TokenLogprob"]
