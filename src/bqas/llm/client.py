"""An async OpenAI-compatible chat client for any ``base_url`` (OpenAI, vLLM, Ollama, llama.cpp server,
DeepSeek, Qwen …).

Structured output: ``json_schema`` response format where the server supports it, ``json_object`` plus
``schema`` for llama.cpp servers (they answer 500 to ``json_schema``), plain prompting otherwise. In
``auto`` mode the client starts with ``json_schema`` and steps down when the server rejects the response
format, remembering what worked. Retries use exponential backoff with jitter and honour ``Retry-After``
on 429/503; a limit per server caps the requests in flight (halved after a timeout); every request
and its tokens are counted.

The transport is aiohttp: at the concurrency a judge run needs (64-128 requests in flight) it costs
about 0.15 ms of CPU per request here, where httpx cost about 3 ms (see benchmarks/llm/bench_engine.py).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bqas.judgment.timing import add_wait
from bqas.llm.cache import CachedReply, ResponseCache
from bqas.llm.cache_io import CacheIO
from bqas.llm.logprobs import TokenLogprob, parse_logprobs, tokens_in_span
from bqas.llm.retry import RETRY_STATUSES, RetryPolicy, parse_retry_after
from bqas.llm.servers import InFlight, in_flight_for, traits_for
from bqas.private_folder import private_folder

MODES: tuple[str, ...] = ("json_schema", "json_object", "prompt")


def _json_dumps(value: Any) -> str:
    # orjson: request bodies carry the messages and the judge's schema on every call.
    return orjson.dumps(value).decode()


class LLMError(RuntimeError):
    """The LLM could not give an answer (after retries).

    ``calls`` counts every request sent for it (timed-out and failed ones included) and the tokens are
    what the server reported for them, so a caller can account for an answer that never came.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        calls: int = 0,
        timed_out: bool = False,
    ):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.calls = calls
        self.timed_out = timed_out
        self.prompt_tokens = 0
        self.completion_tokens = 0


class ReplyTooLarge(LLMError):
    """The server's answer was larger than ``LLMConfig.max_reply_bytes``: not read further, not cached."""


class PromptTooLong(LLMError):
    """The server refused the prompt as longer than the model's context: the same request would fail again
    (no retry), and no other response format would help."""


# How servers word a prompt over the context: llama.cpp ("exceeds the available context size",
# exceed_context_size_error), OpenAI and vLLM ("maximum context length", context_length_exceeded).
_CONTEXT_WORDS = ("exceed_context_size", "context size", "context length", "context_length_exceeded")


def _context_exceeded(status: int, body: str) -> bool:
    if status not in (400, 413, 422):
        return False
    lowered = body.lower()
    return any(w in lowered for w in _CONTEXT_WORDS)


def _error_message(body: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's start."""
    try:
        message = orjson.loads(body)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError, IndexError):
        return body[:300]
    return str(message)[:300]


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
    # The most bytes of one HTTP answer that are read (and so stored and cached); env BQAS_LLM_MAX_REPLY_BYTES.
    max_reply_bytes: int = 2 * 1024 * 1024
    # The embedded engine serving base_url (bqas.llm.local: model file, threads, start-up time), if any.
    engine: dict[str, Any] | None = None


@dataclass
class Completion:
    """One answer, with the calls and tokens it cost.

    ``logprobs`` holds the reply's tokens with their log-probabilities, top alternatives and character
    offsets when they were asked for (``top_logprobs=k``) and the server gave them; otherwise ``None``.
    """

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hit: bool = False
    mode: str = "prompt"
    finish_reason: str | None = None
    logprobs: list[TokenLogprob] | None = None

    def tokens(self, start: int, end: int) -> list[TokenLogprob]:
        """The tokens covering ``text[start:end]`` (empty without aligned log-probabilities)."""
        return tokens_in_span(self.logprobs or [], start, end)


@dataclass
class Usage:
    """Counters over the client's lifetime."""

    calls: int = 0
    errors: int = 0
    retries: int = 0
    timeouts: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _names_format(body: str) -> bool:
    lowered = body.lower()
    return any(w in lowered for w in ("response_format", "json_schema", "schema", "grammar"))


def _format_rejected(status: int, body: str) -> bool:
    """Did the server reject the response format (not a transient failure)?"""
    if status in (400, 422):
        return True
    if status in (500, 501):
        return _names_format(body)
    return False


def _names(status: int, body: str, param: str) -> bool:
    """Did a 4xx/5xx answer reject the request parameter ``param`` (``logprobs``, ``n``)?"""
    if status not in (400, 422, 500, 501):
        return False
    return re.search(rf"(?<![\w-]){param}(?![\w-])", body.lower()) is not None


def request_payload(
    model: str,
    messages: list[dict[str, str]],
    schema: dict[str, Any] | None,
    name: str,
    mode: str,
    params: dict[str, Any],
) -> dict[str, Any]:
    """The chat-completions request body (also rebuilt by the viewer's sample page from what a run stored)."""
    payload: dict[str, Any] = {"model": model, "messages": messages, **params}
    if schema is not None and mode == "json_schema":
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": False},
        }
    elif schema is not None and mode == "json_object":
        payload["response_format"] = {"type": "json_object", "schema": schema}
    return payload


class LLMClient:
    """Chat completions with structured output, retries, concurrency limit, token counts and a cache."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.usage = Usage()
        self.server = traits_for(config.base_url)
        self._limit: InFlight | None = None
        self._http: aiohttp.ClientSession | None = None
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", **config.extra_headers}
        from bqas.llm.local import engine_key  # the embedded engine takes only requests with its key

        api_key = config.api_key or engine_key(config.base_url)
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.cache: ResponseCache | None = None
        if config.cache_path is not None and private_folder(config.cache_path.parent, "LLM cache", "BQAS_HOME"):
            self.cache = ResponseCache(config.cache_path)
        self._cache_io: CacheIO | None = None

    def _session(self) -> tuple[aiohttp.ClientSession, InFlight]:
        # Created on first use, inside the running event loop (aiohttp binds a session to its loop).
        if self._http is None or self._http.closed or self._limit is None:
            connector = aiohttp.TCPConnector(limit=max(1, self.config.concurrency))
            timeout = aiohttp.ClientTimeout(total=self.config.timeout, connect=min(10.0, self.config.timeout))
            self._http = aiohttp.ClientSession(
                connector=connector, timeout=timeout, headers=self._headers, json_serialize=_json_dumps
            )
            # One limit per server, shared by every client of it (the service has one per backend).
            self._limit = in_flight_for(self.config.base_url, asyncio.get_running_loop(), self.config.concurrency)
        return self._http, self._limit

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self.cache is not None:
            await asyncio.to_thread(self.cache.close)  # writes the replies still kept in memory
            self._cache_io = None

    @property
    def mode(self) -> str | None:
        """The structured-output mode in use (None until auto-detection has run)."""
        if self.config.structured_output != "auto":
            return self.config.structured_output
        return self.server.mode

    def _modes(self, schema: dict[str, Any] | None) -> list[str]:
        if schema is None:
            return ["prompt"]
        if self.mode is not None:
            return [self.mode]
        # Formats this server rejected stay rejected, even when the next format's request timed out.
        return [m for m in MODES if m not in self.server.rejected_modes] or ["prompt"]

    def _payload(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        name: str,
        mode: str,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        return request_payload(self.config.model, messages, schema, name, mode, params)

    def _params(self, temperature: float | None, max_tokens: int | None, top_logprobs: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": self.config.temperature if temperature is None else temperature,
        }
        # The configured limit (BQAS_LLM_MAX_TOKENS, the user's explicit choice) wins over the caller's
        # default (a judge's max_tokens from judge.yaml or the policy file).
        limit = self.config.max_tokens or max_tokens
        if limit:
            params["max_tokens"] = limit
        if top_logprobs is not None and self.server.logprobs is not False:
            params["logprobs"] = True
            params["top_logprobs"] = max(0, min(20, top_logprobs))
        return params

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        use_cache: bool = True,
        accept: Callable[[str], bool] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_logprobs: int | None = None,
        cache_first: bool = False,
    ) -> Completion:
        """One chat completion. With a ``schema``, ask for structured output the way the server allows.

        ``accept`` decides whether the reply may be cached (the engine passes its validator), so a reply
        that failed validation is never replayed from the cache. ``max_tokens`` is the caller's limit on
        the reply (a judge's ``max_tokens``); a configured ``max_tokens`` (``BQAS_LLM_MAX_TOKENS``) wins
        over it. ``temperature`` overrides the configuration for this call. ``top_logprobs=k`` asks for
        token log-probabilities with ``k`` alternatives each (0-20); a server that refuses them is remembered and asked without, and
        the completion then has ``logprobs=None``. Such a call skips the cache lookup (a cached reply has
        no log-probabilities) but still stores its reply, unless ``cache_first``: then a cached reply is
        used as it is (without log-probabilities) and only a miss asks the server for them.
        """
        params = self._params(temperature, max_tokens, top_logprobs)
        key: str | None = None
        if self.cache is not None:
            # The key hashes the messages and the schema: only worth computing when a cache is in use.
            shape = {"temperature": params["temperature"], "max_tokens": params.get("max_tokens"), "schema": schema}
            lookup = use_cache and (top_logprobs is None or cache_first)
            # Hashing and SQLite I/O in a thread, off the event loop, batched with concurrent lookups.
            key, hit = await self._cache_for_loop().lookup(self.config.model, messages, shape, use_hit=lookup)
            if hit is not None:
                self.usage.cache_hits += 1
                return Completion(hit.text, hit.model, 0, 0, calls=0, cache_hit=True, mode=self.mode or "prompt")
        completion = (await self._complete_uncached(messages, schema, schema_name, params))[0]
        if self.cache is not None and key is not None and (accept is None or accept(completion.text)):
            reply = CachedReply(
                completion.text, completion.model, completion.prompt_tokens, completion.completion_tokens
            )
            await self._cache_for_loop().store(key, reply)  # kept, written with the next batch
        return completion

    def _cache_for_loop(self) -> CacheIO:
        """The cache's batched access for the running event loop (created on first use, like the session)."""
        assert self.cache is not None
        loop = asyncio.get_running_loop()
        if self._cache_io is None or self._cache_io.loop is not loop:
            self._cache_io = CacheIO(self.cache, loop)
        return self._cache_io

    async def sample(
        self,
        messages: list[dict[str, str]],
        k: int,
        *,
        temperature: float = 0.7,
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
        top_logprobs: int | None = None,
    ) -> list[Completion]:
        """``k`` independent replies at ``temperature`` (> 0), for agreement-based confidence. Never cached.

        One request with ``n=k`` where the server honours ``n``; otherwise (it ignores or refuses ``n``,
        remembered per server) the missing replies come from separate requests. The calls and tokens of
        a request are counted on its first completion, so summing over the list gives the cost.
        """
        if k < 1:
            raise ValueError("k must be at least 1")
        if temperature <= 0:
            raise ValueError("sampling needs a temperature above 0")
        params = self._params(temperature, max_tokens, top_logprobs)
        replies: list[Completion] = []
        refused_calls = 0
        if k > 1 and self.server.n is not False:
            try:
                replies = await self._complete_uncached(messages, schema, schema_name, {**params, "n": k})
            except _ParamRejected as exc:
                self.server.n = False
                refused_calls = exc.calls
            else:
                self.server.n = len(replies) >= k
        while len(replies) < k:
            replies.extend(await self._complete_uncached(messages, schema, schema_name, params))
        replies[0].calls += refused_calls
        return replies[:k]

    async def _complete_uncached(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None, name: str, params: dict[str, Any]
    ) -> list[Completion]:
        calls = 0
        tried: set[str] = set()
        while True:
            modes = [m for m in self._modes(schema) if m not in tried] or ["prompt"]
            mode = modes[0]
            try:
                replies = await self._post_with_retries(self._payload(messages, schema, name, mode, params))
            except _FormatRejected as exc:
                calls += exc.calls
                if self.config.structured_output != "auto" or len(modes) == 1:
                    message = f"server rejected response_format {mode}: {exc}"
                    raise LLMError(message, status=exc.status, calls=calls) from None
                # Remembered for the server when the answer names the format (llama.cpp's 500), or once a
                # later format works; a bare 400 may concern this request only (its size, its content).
                if exc.names_format:
                    self.server.rejected_modes.add(mode)
                tried.add(mode)
                continue
            except _ParamRejected as exc:
                calls += exc.calls
                if exc.param == "logprobs":
                    # Asked again without: a judgment without log-probabilities beats no judgment.
                    self.server.logprobs = False
                    params = {k: v for k, v in params.items() if k not in ("logprobs", "top_logprobs")}
                    continue
                exc.calls = calls
                raise
            except LLMError as exc:
                exc.calls += calls
                raise
            if schema is not None and self.config.structured_output == "auto" and self.server.mode is None:
                self.server.mode = mode
                self.server.rejected_modes.update(tried)
            if "logprobs" in params and replies[0].logprobs is not None:
                self.server.logprobs = True
            replies[0].calls += calls
            for reply in replies:
                reply.mode = mode
            return replies

    async def _post_with_retries(self, payload: dict[str, Any]) -> list[Completion]:
        http, limit = self._session()
        attempt = 0
        calls = 0
        while True:
            attempt += 1
            timed_out = False
            asked = time.perf_counter()
            async with limit:
                add_wait(time.perf_counter() - asked)  # waiting for a connection slot is queue time
                calls += 1
                self.usage.calls += 1
                try:
                    # Leaving this block on a timeout closes the connection, which is how a server
                    # (llama.cpp, vLLM) learns to stop generating for a request nobody waits for.
                    # The body as bytes (orjson), the session's Content-Type: application/json header.
                    async with http.post(self._url, data=orjson.dumps(payload)) as response:
                        status = response.status
                        body = await _read_text(response, self.config.max_reply_bytes, calls)
                        retry_header = response.headers.get("Retry-After")
                except TimeoutError:
                    self.usage.errors += 1
                    self.usage.timeouts += 1
                    limit.timed_out()
                    timed_out = True
                    error = LLMError(self._timeout_message(attempt), calls=calls, timed_out=True)
                    wait = self._backoff(attempt)
                except aiohttp.ClientError as exc:
                    self.usage.errors += 1
                    error = LLMError(f"{type(exc).__name__}: {exc or 'no answer'} ({self._url})", calls=calls)
                    wait = self._backoff(attempt)
                else:
                    if status == 200:
                        limit.answered()
                        return self._completions(body, calls)
                    self.usage.errors += 1
                    if _context_exceeded(status, body):
                        # llama.cpp answers 400 for it: not a rejected response format, nor worth a retry.
                        raise PromptTooLong(
                            f"the prompt does not fit the model's context: {_error_message(body)}",
                            status=status,
                            calls=calls,
                        )
                    for param in ("logprobs", "n"):
                        if param in payload and _names(status, body, param):
                            raise _ParamRejected(param, status, body[:300], calls)
                    if "response_format" in payload and _format_rejected(status, body):
                        raise _FormatRejected(status, body[:300], calls)
                    retry_after = parse_retry_after(retry_header)
                    error = LLMError(
                        f"HTTP {status}: {excerpt(body)}", status=status, retry_after=retry_after, calls=calls
                    )
                    if status not in RETRY_STATUSES:
                        raise error
                    after = self._retry.wait_after_status(status, retry_after, 0)  # 0: the count is checked below
                    if after is None:
                        raise error
                    wait = after
            if attempt > self.config.max_retries:
                raise error
            self.usage.retries += 1
            # A timed-out request may still be running on a server that does not notice the closed
            # connection: wait at least one timeout's worth of backoff before sending it again.
            pause = max(wait, min(self.config.timeout, self.config.backoff_max)) if timed_out else wait
            await asyncio.sleep(pause)
            add_wait(pause)

    def _timeout_message(self, attempt: int) -> str:
        c = self.config
        return (
            f"timed out: no answer from {self._url} within {c.timeout:g} s (attempt {attempt} of {c.max_retries + 1}). "
            f"A slow or busy server: raise BQAS_LLM_TIMEOUT (now {c.timeout:g}), lower BQAS_LLM_CONCURRENCY "
            f"(now {c.concurrency}) or BQAS_LLM_MAX_TOKENS"
        )

    def _backoff(self, attempt: int) -> float:
        return self._retry.backoff(attempt)

    @property
    def _retry(self) -> RetryPolicy:
        c = self.config
        return RetryPolicy(c.max_retries, c.backoff_base, c.backoff_max, c.max_retry_after)

    def _completions(self, text_body: str, calls: int) -> list[Completion]:
        try:
            body = _loads_body(text_body)
            choices = body["choices"]
            texts = [choice["message"].get("content") or "" for choice in choices]
            if not texts or not all(isinstance(t, str) for t in texts):
                raise ValueError("no text choice")
        except (orjson.JSONDecodeError, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            message = f"malformed chat completion from server: {exc}; the answer began: {excerpt(text_body, 200)!r}"
            raise LLMError(message, calls=calls) from None
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
        self.usage.prompt_tokens += prompt_tokens
        self.usage.completion_tokens += completion_tokens
        model = str(body.get("model") or self.config.model)
        out: list[Completion] = []
        for i, (choice, text) in enumerate(zip(choices, texts, strict=True)):
            out.append(
                Completion(
                    text=text,
                    model=model,
                    prompt_tokens=prompt_tokens if i == 0 else 0,
                    completion_tokens=completion_tokens if i == 0 else 0,
                    calls=calls if i == 0 else 0,
                    finish_reason=choice.get("finish_reason"),
                    logprobs=parse_logprobs(choice.get("logprobs"), text),
                )
            )
        return out


async def _read_text(response: aiohttp.ClientResponse, limit: int, calls: int) -> str:
    """The answer's text, read no further than ``limit`` bytes (a runaway reply is refused, not buffered)."""
    data = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        data += chunk
        if len(data) > limit:
            raise ReplyTooLarge(
                f"the server's answer exceeds {limit} bytes (BQAS_LLM_MAX_REPLY_BYTES); not read further",
                calls=calls,
            )
    # UTF-8 whatever the Content-Type says: JSON has no other encoding, a proxy's error page comes as
    # text/html without a charset, and a named charset may be one Python lacks. Bytes that are not UTF-8
    # become U+FFFD (replies are repaired, inputs rejected: bqas.untrusted).
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def excerpt(body: str, limit: int = 300) -> str:
    """The first characters of an answer on one line (an HTML error page's line breaks collapsed)."""
    flat = " ".join(body[: limit * 4].split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _loads_body(text: str) -> Any:
    """The chat-completion JSON. orjson refuses lone surrogate escapes (``"\\ud800"``); Python's json
    keeps them, and bqas.untrusted replaces them with U+FFFD."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        import json

        from bqas.untrusted import UntrustedValueError, repair_value

        try:
            return repair_value(json.loads(text))[0]
        except (RecursionError, UntrustedValueError):
            raise ValueError("nested too deeply") from None


def _count(value: Any) -> int:
    """A token count from the server's ``usage`` (anything but a non-negative integer counts 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0
    return int(min(value, 2**31))


class _FormatRejected(Exception):
    def __init__(self, status: int, text: str, calls: int):
        super().__init__(f"HTTP {status}: {text}")
        self.status = status
        self.calls = calls
        self.names_format = _names_format(text)


class _ParamRejected(LLMError):
    """The server refused an optional parameter (``logprobs``, ``n``)."""

    def __init__(self, param: str, status: int, text: str, calls: int):
        super().__init__(f"server rejected {param}: HTTP {status}: {text}", status=status, calls=calls)
        self.param = param
