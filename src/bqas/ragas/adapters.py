"""RAGAS's LLM and embedding interfaces over BQAS's own seams.

:class:`SeamLLM` is the ``InstructorBaseRagasLLM`` a ``ragas.metrics.collections`` metric talks to. Every
call goes through :class:`bqas.llm.client.LLMClient` (structured output, retries, concurrency limit,
on-disk cache, token counts); the reply is validated with the metric's pydantic response model. Each
adapter keeps its own counters, so one adapter per metric gives per-metric accounting while all of them
share one client (one cache, one concurrency limit).

:class:`SeamEmbedding` is the ``BaseRagasEmbedding`` over ``bqas.offline.embeddings`` (no network).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bqas.judging.parse import extract_json
from bqas.llm.client import LLMClient, LLMError
from bqas.offline.embeddings import Embedder, default_embedder
from bqas.ragas.lib import BaseRagasEmbedding, InstructorBaseRagasLLM

M = TypeVar("M", bound=BaseModel)

_CORRECTION = (
    "Your previous reply was not valid for the required JSON schema: {error}\n"
    "Answer again with only the JSON object, nothing else."
)


@dataclass
class CallStats:
    """What one adapter's calls cost."""

    requests: int = 0  # agenerate() calls made by the metric
    llm_calls: int = 0  # HTTP requests that reached the server (retries included; cache hits excluded)
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: list[str] = field(default_factory=list)


def parse_model(text: str, response_model: type[M]) -> tuple[M | None, str | None]:
    """Validate a reply against ``response_model``: (instance, None) or (None, reason)."""
    value, _repairs, error = extract_json(text, top="object")
    if error is not None:
        return None, error
    try:
        return response_model.model_validate(value), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        return None, f"{where}: {first['msg']}"


class SeamLLM(InstructorBaseRagasLLM):
    """A ragas collections LLM that calls BQAS's :class:`LLMClient`.

    The prompt string a metric renders becomes one user message, exactly as ragas's own
    ``InstructorLLM`` sends it (no system prompt), so what reaches the server is ragas's text verbatim.
    A reply that does not validate gets one corrective retry; invalid replies are never cached.

        llm = SeamLLM(LLMClient(LLMConfig(base_url="http://127.0.0.1:8000/v1", model="qwen2.5")))
        metric = Faithfulness(llm=llm)
    """

    def __init__(self, client: LLMClient, *, corrective_retries: int = 1) -> None:
        self.client = client
        self.corrective_retries = corrective_retries
        self.stats = CallStats()

    @property
    def model(self) -> str:
        return self.client.config.model

    async def agenerate(self, prompt: str, response_model: type[M]) -> M:
        """Ask the LLM for ``response_model`` as JSON; raise ``ValueError`` when no valid reply comes."""
        self.stats.requests += 1
        schema = response_model.model_json_schema()
        messages = [{"role": "user", "content": prompt}]
        error: str | None = None
        for attempt in range(self.corrective_retries + 1):
            if attempt:
                self.stats.errors.append(f"{response_model.__name__}: invalid reply ({error}); asked again")
            try:
                completion = await self.client.complete(
                    messages,
                    schema=schema,
                    schema_name=response_model.__name__,
                    accept=lambda text: parse_model(text, response_model)[0] is not None,
                )
            except LLMError as exc:
                # The requests were sent (and retried) though none answered: they count.
                self.stats.llm_calls += exc.calls
                self.stats.prompt_tokens += exc.prompt_tokens
                self.stats.completion_tokens += exc.completion_tokens
                raise
            self.stats.llm_calls += completion.calls
            self.stats.cache_hits += int(completion.cache_hit)
            self.stats.prompt_tokens += completion.prompt_tokens
            self.stats.completion_tokens += completion.completion_tokens
            parsed, error = parse_model(completion.text, response_model)
            if parsed is not None:
                return parsed
            messages = [
                *messages[:1],
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": _CORRECTION.format(error=error)},
            ]
        raise ValueError(f"{response_model.__name__}: no valid reply from the LLM: {error}")

    def generate(self, prompt: str, response_model: type[M]) -> M:
        """Synchronous form, for callers outside an event loop (collections metrics use ``agenerate``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(prompt, response_model))
        raise RuntimeError("SeamLLM.generate() called inside a running event loop; await agenerate() instead")


class SeamEmbedding(BaseRagasEmbedding):
    """A ragas embedding over a BQAS :class:`Embedder` (default: ``default_embedder()``, loaded on first use)."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        super().__init__(cache=None)
        self._embedder = embedder
        self.seconds = 0.0

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @property
    def name(self) -> str:
        return str(self.embedder.name)

    def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        start = time.perf_counter()
        vectors = self.embedder.embed(list(texts))
        self.seconds += time.perf_counter() - start
        return [[float(x) for x in row] for row in vectors]

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        return self.embed_texts([text])[0]

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        # The model runs in a worker thread so that a first-time model load does not stall the event loop.
        return (await asyncio.to_thread(self.embed_texts, [text]))[0]

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_texts, list(texts))
