"""An async OpenAI-compatible chat client for any ``base_url`` (OpenAI, vLLM, Ollama, llama.cpp server,
DeepSeek, Qwen …).

Structured output: ``json_schema`` response format where the server supports it, ``json_object`` plus
``schema`` for llama.cpp servers (they answer 500 to ``json_schema``), plain prompting otherwise. In
``auto`` mode the client starts with ``json_schema`` and steps down when the server rejects the response
format, remembering what worked. Retries use exponential backoff with jitter and honour ``Retry-After``
on 429/503; a semaphore caps concurrent requests; every call's tokens are counted.

The transport is aiohttp: at the concurrency a judge run needs (64-128 requests in flight) it costs
about 0.15 ms of CPU per request here, where httpx cost about 3 ms (see benchmarks/bench_engine.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bqas.llm.cache import CachedReply, ResponseCache, cache_key

MODES: tuple[str, ...] = ("json_schema", "json_object", "prompt")


def _json_dumps(value: Any) -> str:
    # orjson: request bodies carry the messages and the judge's schema on every call.
    return orjson.dumps(value).decode()


class LLMError(RuntimeError):
    """The LLM could not give an answer (after retries)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass
class LLMConfig:
    """Connection and behaviour of the LLM seam."""

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    concurrency: int = 16
    structured_output: str = "auto"
    cache_path: Path | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Completion:
    """One answer, with the calls and tokens it cost."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hit: bool = False
    mode: str = "prompt"
    finish_reason: str | None = None


@dataclass
class Usage:
    """Counters over the client's lifetime."""

    calls: int = 0
    errors: int = 0
    retries: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _format_rejected(status: int, body: str) -> bool:
    """Did the server reject the response format (not a transient failure)?"""
    if status in (400, 422):
        return True
    if status in (500, 501):
        lowered = body.lower()
        return any(w in lowered for w in ("response_format", "json_schema", "schema", "grammar"))
    return False


class LLMClient:
    """Chat completions with structured output, retries, concurrency limit, token counts and a cache."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.usage = Usage()
        self._mode: str | None = None if config.structured_output == "auto" else config.structured_output
        self._sem: asyncio.Semaphore | None = None
        self._http: aiohttp.ClientSession | None = None
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", **config.extra_headers}
        if config.api_key:
            self._headers["Authorization"] = f"Bearer {config.api_key}"
        self.cache = ResponseCache(config.cache_path) if config.cache_path else None

    def _session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        # Created on first use, inside the running event loop (aiohttp binds a session to its loop).
        if self._http is None or self._http.closed or self._sem is None:
            connector = aiohttp.TCPConnector(limit=max(1, self.config.concurrency))
            timeout = aiohttp.ClientTimeout(total=self.config.timeout, connect=min(10.0, self.config.timeout))
            self._http = aiohttp.ClientSession(
                connector=connector, timeout=timeout, headers=self._headers, json_serialize=_json_dumps
            )
            self._sem = asyncio.Semaphore(max(1, self.config.concurrency))
        return self._http, self._sem

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self.cache is not None:
            self.cache.close()

    @property
    def mode(self) -> str | None:
        """The structured-output mode in use (None until auto-detection has run)."""
        return self._mode

    def _payload(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None, name: str, mode: str
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens:
            payload["max_tokens"] = self.config.max_tokens
        if schema is not None and mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": False},
            }
        elif schema is not None and mode == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        return payload

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        use_cache: bool = True,
        accept: Callable[[str], bool] | None = None,
    ) -> Completion:
        """One chat completion. With a ``schema``, ask for structured output the way the server allows.

        ``accept`` decides whether the reply may be cached (the engine passes its validator), so a reply
        that failed validation is never replayed from the cache.
        """
        key: str | None = None
        if self.cache is not None:
            # The key hashes the messages and the schema: only worth computing when a cache is in use.
            params = {"temperature": self.config.temperature, "max_tokens": self.config.max_tokens, "schema": schema}
            key = cache_key(self.config.model, messages, params)
            if use_cache:
                hit = self.cache.get(key)
                if hit is not None:
                    self.usage.cache_hits += 1
                    return Completion(hit.text, hit.model, 0, 0, calls=0, cache_hit=True, mode=self._mode or "prompt")
        completion = await self._complete_uncached(messages, schema, schema_name)
        if self.cache is not None and key is not None and (accept is None or accept(completion.text)):
            self.cache.put(
                key,
                CachedReply(completion.text, completion.model, completion.prompt_tokens, completion.completion_tokens),
            )
        return completion

    async def _complete_uncached(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None, name: str
    ) -> Completion:
        modes = [self._mode] if self._mode else list(MODES)
        if schema is None:
            modes = ["prompt"]
        calls = 0
        last_error: LLMError | None = None
        for i, mode in enumerate(modes):
            try:
                completion = await self._post_with_retries(self._payload(messages, schema, name, mode))
            except _FormatRejected as exc:
                calls += exc.calls
                last_error = LLMError(f"server rejected response_format {mode}: {exc}", status=exc.status)
                if i + 1 < len(modes):
                    continue
                raise last_error from None
            if self._mode is None and schema is not None:
                self._mode = mode
            completion.calls += calls
            completion.mode = mode
            return completion
        raise last_error or LLMError("no structured-output mode left to try")

    async def _post_with_retries(self, payload: dict[str, Any]) -> Completion:
        http, sem = self._session()
        attempt = 0
        calls = 0
        while True:
            attempt += 1
            async with sem:
                calls += 1
                self.usage.calls += 1
                try:
                    async with http.post(self._url, json=payload) as response:
                        status = response.status
                        body = await response.text()
                        retry_header = response.headers.get("Retry-After")
                except (TimeoutError, aiohttp.ClientError) as exc:
                    self.usage.errors += 1
                    error = LLMError(f"{type(exc).__name__}: {exc or 'no answer'}")
                    wait = self._backoff(attempt)
                else:
                    if status == 200:
                        return self._completion(body, calls)
                    self.usage.errors += 1
                    if "response_format" in payload and _format_rejected(status, body):
                        raise _FormatRejected(status, body[:300], calls)
                    retry_after = parse_retry_after(retry_header)
                    error = LLMError(f"HTTP {status}: {body[:300]}", status=status, retry_after=retry_after)
                    if status not in (408, 409, 429, 500, 502, 503, 504):
                        raise error
                    if retry_after is not None and status in (429, 503):
                        if retry_after > self.config.max_retry_after:
                            raise error
                        wait = retry_after
                    else:
                        wait = self._backoff(attempt)
            if attempt > self.config.max_retries:
                raise error
            self.usage.retries += 1
            await asyncio.sleep(wait)

    def _backoff(self, attempt: int) -> float:
        base = min(self.config.backoff_max, self.config.backoff_base * (2 ** (attempt - 1)))
        return float(base * (0.5 + random.random() / 2))

    def _completion(self, text_body: str, calls: int) -> Completion:
        try:
            body = orjson.loads(text_body)
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (orjson.JSONDecodeError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"malformed chat completion from server: {exc}") from None
        usage = body.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        return Completion(
            text=text,
            model=str(body.get("model") or self.config.model),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            calls=calls,
            finish_reason=choice.get("finish_reason"),
        )


class _FormatRejected(Exception):
    def __init__(self, status: int, text: str, calls: int):
        super().__init__(f"HTTP {status}: {text}")
        self.status = status
        self.calls = calls
