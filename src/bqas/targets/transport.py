"""Sending a target's HTTP requests: aiohttp, a limit on requests in flight, timeouts, retries that honour
``Retry-After`` (the LLM client's :class:`~bqas.llm.retry.RetryPolicy`), and replies read no further than
``BQAS_TARGET_MAX_REPLY_BYTES``. A request that gets no usable answer raises :class:`TargetFailure`.

Redirects are not followed by default: the assistant under test is somebody else's server, and a redirect
would send the request (with its secret headers) wherever the reply points and have its answer scored as
the target's. A 3xx is a target error naming where it pointed. With ``redirects="same-origin"`` a redirect
to the same scheme, host and port is followed (at most :data:`MAX_REDIRECTS` in a row); one to any other
origin is still a target error, so no header ever reaches another origin."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bqas.llm.retry import RetryPolicy, parse_retry_after
from bqas.targets.reply import TargetFailure, excerpt

# What a header may not hold (aiohttp refuses it, and it could end the header and start another).
_UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

# Bodies larger than this are scrubbed in a worker thread.
_OFF_LOOP_BYTES = 256 * 1024

# Redirects followed in a row within one attempt (with redirects="same-origin").
MAX_REDIRECTS = 5

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

    def __init__(
        self, *, timeout: float, retries: int, concurrency: int, max_reply_bytes: int, redirects: str = "none"
    ):
        self.timeout = timeout
        self.redirects = redirects
        self.retry = RetryPolicy(max_retries=retries)
        self.concurrency = concurrency
        self.max_reply_bytes = max_reply_bytes
        self._http: aiohttp.ClientSession | None = None
        self._limit: asyncio.Semaphore | None = None
        # Applied to a reply's whole body as soon as it is read, before any of it is cut, parsed or quoted
        # (the client's secrets): every body this transport hands on is scrubbed.
        self.scrub: Callable[[bytes], bytes] = lambda raw: raw

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
        for name, value in sent_headers.items():
            if _UNSENDABLE.search(name) or _UNSENDABLE.search(value):
                raise TargetFailure(f"header {name}: holds a line break or control character; not sent")
        attempt = 0
        hops = 0
        while True:
            attempt += 1
            status: int | None = None
            unsent = False  # the request cannot have reached the assistant
            raw = b""
            retry_after: float | None = None
            location: str | None = None
            async with limit:
                started = time.perf_counter()
                try:
                    async with http.request(
                        method, url, data=data, headers=sent_headers, allow_redirects=False
                    ) as response:
                        # The body is read before the status counts: a 2xx whose body never arrives (or
                        # breaks off) is a timeout or a connection error, retried like one.
                        raw = await self._scrubbed(await self._read(response, attempt))
                        status = response.status
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                        location = response.headers.get("Location")
                except (TimeoutError, aiohttp.ClientError) as exc:
                    failure, unsent = self.no_answer(exc, attempt)
                except (ValueError, UnicodeError) as exc:  # a request aiohttp refuses to build: not retried
                    raise TargetFailure(f"the request cannot be sent: {type(exc).__name__}: {exc}") from None
                latency = round((time.perf_counter() - started) * 1000, 3)
            if status is not None and 200 <= status < 300:
                return HTTPAnswer(status, raw, latency, attempt)
            if status is not None and 300 <= status < 400:
                following = _same_origin(url, location) if self.redirects == "same-origin" else None
                if following is not None and hops < MAX_REDIRECTS:
                    hops += 1
                    attempt -= 1  # a redirect followed is part of the same attempt
                    url = following
                    if status == 303 or (status in (301, 302) and method == "POST"):
                        method, data = "GET", None  # what clients do with these (307 and 308 keep the body)
                        sent_headers.pop("Content-Type", None)
                    continue
                where = excerpt(self.scrub((location or "no Location header").encode()), 500)
                if following is not None:
                    why = f"more than {MAX_REDIRECTS} redirects in a row"
                elif self.redirects == "same-origin":
                    why = "another origin; not followed"
                else:
                    why = "redirects are not followed (point the target at the final address, or set "
                    why += "redirects: same-origin)"
                raise TargetFailure(
                    f"HTTP {status}: the target redirects to {where}; {why}",
                    status=status,
                    raw=raw,
                    attempts=attempt,
                    latency_ms=latency,
                )
            if status is not None:
                failure = TargetFailure(
                    f"HTTP {status}: {excerpt(raw)}",
                    status=status,
                    raw=raw,
                    attempts=attempt,
                    latency_ms=latency,
                )
            await _sleep(self.wait_or_raise(failure, status, retry_after, attempt, replay_safe=replay_safe or unsent))

    def no_answer(self, exc: TimeoutError | aiohttp.ClientError, attempt: int) -> tuple[TargetFailure, bool]:
        """The failure of an attempt that got no answer, and whether its request cannot have reached the
        assistant (a refused connection, an unknown host, a connect timeout: safe to send again)."""
        if isinstance(exc, TimeoutError):
            reason = (
                f"timed out: no answer within {self.timeout:g} s (attempt {attempt} of "
                f"{self.retry.max_retries + 1}; target.timeout)"
            )
            return TargetFailure(reason, attempts=attempt), isinstance(exc, aiohttp.ConnectionTimeoutError)
        unsent = isinstance(exc, aiohttp.ClientConnectorError)
        return TargetFailure(f"{type(exc).__name__}: {exc or 'no answer'}", attempts=attempt), unsent

    def wait_or_raise(
        self, failure: TargetFailure, status: int | None, retry_after: float | None, attempt: int, *, replay_safe: bool
    ) -> float:
        """Seconds to wait before the next attempt after ``failure``, or ``failure`` raised (with how many
        attempts it took) when the policy gives up or the request must not be sent again.

        ``status`` is the answer's error status (None: no answer, a timeout or a connection error);
        ``replay_safe`` is False for a turn the assistant may already have taken (see :meth:`send`)."""
        if status is not None:
            wait = self.retry.wait_after_status(status, retry_after, attempt)
        else:
            wait = self.retry.backoff(attempt) if attempt <= self.retry.max_retries else None
        if wait is not None and not replay_safe:
            wait = None
            failure.reason += " (not retried: the assistant may have taken this turn already; target.idempotent)"
        if wait is None:
            if attempt > 1:
                failure.reason += f" (after {attempt} attempts)"
            failure.args = (failure.reason,)
            raise failure
        return wait

    async def _scrubbed(self, raw: bytes) -> bytes:
        # A few MB take tens of milliseconds to search: in a worker thread, not on the event loop.
        return await asyncio.to_thread(self.scrub, raw) if len(raw) > _OFF_LOOP_BYTES else self.scrub(raw)

    async def _read(self, response: aiohttp.ClientResponse, attempt: int) -> bytes:
        """The body, read no further than ``max_reply_bytes`` (a runaway reply is refused, not buffered)."""
        data = bytearray()
        async for chunk in response.content.iter_chunked(64 * 1024):
            data += chunk
            if len(data) > self.max_reply_bytes:
                raise TargetFailure(
                    f"the reply exceeds {self.max_reply_bytes} bytes (BQAS_TARGET_MAX_REPLY_BYTES); not read further",
                    status=response.status,
                    # Whole secrets replaced before the cut (the first 64 KiB hold any that the cut meets).
                    raw=self.scrub(bytes(data[: 64 * 1024]))[:1024],
                    attempts=attempt,
                )
        return bytes(data)


def _same_origin(url: str, location: str | None) -> str | None:
    """``location`` resolved against ``url`` when it has the same scheme, host and port; else None."""
    from yarl import URL

    if not location:
        return None
    try:
        base = URL(url)
        resolved = base.join(URL(location))
    except ValueError:
        return None
    if (resolved.scheme, resolved.host, resolved.port) != (base.scheme, base.host, base.port):
        return None
    return str(resolved)
