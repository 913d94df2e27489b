"""Sending a target's HTTP requests: aiohttp, a limit on requests in flight, timeouts, retries that honour
``Retry-After`` (the LLM client's :class:`~bqas.llm.retry.RetryPolicy`), and replies read no further than
``BQAS_TARGET_MAX_REPLY_BYTES``. A request that gets no usable answer raises :class:`TargetFailure`."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bqas.llm.retry import RetryPolicy, parse_retry_after
from bqas.targets.reply import TargetFailure, excerpt

# The wait between attempts (a name of its own, so that a test can see the waits without sleeping them).
_sleep = asyncio.sleep


@dataclass
class HTTPAnswer:
    """A 2xx answer: its status, body bytes, the answering attempt's time and how many attempts it took."""

    status: int
    body: bytes
    latency_ms: float
    attempts: int


class Transport:
    """One connection pool per run and target (created inside the running event loop)."""

    def __init__(self, *, timeout: float, retries: int, concurrency: int, max_reply_bytes: int):
        self.timeout = timeout
        self.retry = RetryPolicy(max_retries=retries)
        self.concurrency = concurrency
        self.max_reply_bytes = max_reply_bytes
        self._http: aiohttp.ClientSession | None = None
        self._limit: asyncio.Semaphore | None = None

    def _session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        if self._http is None or self._http.closed or self._limit is None:
            connector = aiohttp.TCPConnector(limit=max(1, self.concurrency))
            timeout = aiohttp.ClientTimeout(total=self.timeout, connect=min(10.0, self.timeout))
            self._http = aiohttp.ClientSession(connector=connector, timeout=timeout)
            self._limit = asyncio.Semaphore(self.concurrency)
        return self._http, self._limit

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def send(
        self, method: str, url: str, headers: dict[str, str], body: Any, *, replay_safe: bool = True
    ) -> HTTPAnswer:
        """One request (JSON body unless ``body`` is None), retried on timeouts, connection errors and
        transient statuses; the 2xx answer, or :class:`TargetFailure` naming status and first bytes.

        ``replay_safe=False`` (a turn of a conversation the assistant keeps): retried only where the
        request cannot have reached the assistant (refused connection, unknown host, connect timeout);
        after a timeout or an error status the assistant may have taken the turn already."""
        http, limit = self._session()
        data = None if body is None else orjson.dumps(body)
        sent_headers = {"Accept": "application/json", **headers}
        if data is not None:
            sent_headers.setdefault("Content-Type", "application/json")
        attempt = 0
        while True:
            attempt += 1
            status: int | None = None
            unsent = False  # the request cannot have reached the assistant
            raw = b""
            retry_after: float | None = None
            async with limit:
                started = time.perf_counter()
                try:
                    async with http.request(method, url, data=data, headers=sent_headers) as response:
                        status = response.status
                        raw = await self._read(response, attempt)
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                except TimeoutError as exc:
                    unsent = isinstance(exc, aiohttp.ConnectionTimeoutError)
                    failure = TargetFailure(
                        f"timed out: no answer within {self.timeout:g} s (attempt {attempt} of "
                        f"{self.retry.max_retries + 1}; target.timeout)",
                        attempts=attempt,
                    )
                except aiohttp.ClientError as exc:
                    unsent = isinstance(exc, aiohttp.ClientConnectorError)
                    failure = TargetFailure(f"{type(exc).__name__}: {exc or 'no answer'}", attempts=attempt)
                latency = round((time.perf_counter() - started) * 1000, 3)
            if status is not None and 200 <= status < 300:
                return HTTPAnswer(status, raw, latency, attempt)
            if status is not None:
                failure = TargetFailure(
                    f"HTTP {status}: {excerpt(raw)}", status=status, raw=raw, attempts=attempt, latency_ms=latency
                )
                wait = self.retry.wait_after_status(status, retry_after, attempt)
            else:
                wait = self.retry.backoff(attempt) if attempt <= self.retry.max_retries else None
            if wait is not None and not replay_safe and not unsent:
                wait = None
                failure.reason += " (not retried: the assistant may have taken this turn already; target.idempotent)"
            if wait is None:
                if attempt > 1:
                    failure.reason += f" (after {attempt} attempts)"
                    failure.args = (failure.reason,)
                raise failure
            await _sleep(wait)

    async def _read(self, response: aiohttp.ClientResponse, attempt: int) -> bytes:
        """The body, read no further than ``max_reply_bytes`` (a runaway reply is refused, not buffered)."""
        data = bytearray()
        async for chunk in response.content.iter_chunked(64 * 1024):
            data += chunk
            if len(data) > self.max_reply_bytes:
                raise TargetFailure(
                    f"the reply exceeds {self.max_reply_bytes} bytes (BQAS_TARGET_MAX_REPLY_BYTES); not read further",
                    status=response.status,
                    raw=bytes(data[:1024]),
                    attempts=attempt,
                )
        return bytes(data)
