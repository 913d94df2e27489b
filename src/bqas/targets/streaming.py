"""Streamed replies: a request whose answer comes as Server-Sent Events (``text/event-stream``) or as
newline-delimited JSON, read event by event with the time each one arrived (time to first token).

The request goes through the target's :class:`~bqas.targets.transport.Transport` (its connection pool,
limit on requests in flight and retry policy). A failure before the stream starts (refused connection,
error status, timeout) is retried as :meth:`Transport.send` retries it; once events have arrived, the
assistant has taken the turn, and a cut stream or a timeout is a target error with what was read.
A server that answers a streaming request with one JSON document is read as one (the caller sees
``streamed`` false and parses ``body``); an event stream is read as one whatever its label says (some
Dify apps stream when asked to block).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import aiohttp
import orjson

from bqas.llm.retry import parse_retry_after
from bqas.targets.reply import TargetFailure, excerpt
from bqas.targets.transport import Transport

StreamFormat = Literal["sse", "ndjson"]


@dataclass
class StreamEvent:
    """One event: milliseconds since the request was sent, the SSE event name (None: none given, or
    NDJSON), and its data as text."""

    at_ms: float
    name: str | None
    data: str


@dataclass
class StreamedAnswer:
    """A 2xx answer read to its end: every event (none for a plain JSON body), the bytes read, the
    answering attempt's time and how many attempts it took."""

    status: int
    body: bytes
    latency_ms: float
    attempts: int
    events: list[StreamEvent] = field(default_factory=list)
    streamed: bool = True  # False: the server answered with one JSON body instead of a stream


class EventParser:
    """Incremental SSE (WHATWG event-stream) or NDJSON parser: feed bytes, collect events."""

    def __init__(self, fmt: StreamFormat):
        self.fmt = fmt
        self._buffer = b""
        self._data: list[str] = []
        self._name: str | None = None
        self.events: list[StreamEvent] = []

    def feed(self, chunk: bytes, at_ms: float) -> None:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._line(line.rstrip(b"\r").decode("utf-8", errors="replace"), at_ms)

    def close(self, at_ms: float) -> None:
        """The stream ended: a last line without its newline still counts (an SSE event needs its blank line)."""
        if self._buffer:
            self._line(self._buffer.rstrip(b"\r").decode("utf-8", errors="replace"), at_ms)
            self._buffer = b""
        if self.fmt == "sse" and self._data:
            self._dispatch(at_ms)

    def _line(self, line: str, at_ms: float) -> None:
        if self.fmt == "ndjson":
            if line.strip():
                self.events.append(StreamEvent(at_ms, None, line))
            return
        if not line:
            self._dispatch(at_ms)
            return
        if line.startswith(":"):
            return  # a comment (keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._name = value

    def _dispatch(self, at_ms: float) -> None:
        if self._data:
            self.events.append(StreamEvent(at_ms, self._name, "\n".join(self._data)))
        self._data, self._name = [], None


def event_json(event: StreamEvent) -> object:
    """An event's data as JSON; a malformed one raises :class:`TargetFailure` quoting it."""
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError:
        raise TargetFailure(f"a stream event is not JSON: {excerpt(event.data)}") from None


async def send_streaming(
    transport: Transport,
    method: str,
    url: str,
    headers: dict[str, str],
    body: object,
    *,
    fmt: StreamFormat,
    replay_safe: bool = True,
) -> StreamedAnswer:
    """One streamed request, read to its end (see the module's description for retries and failures)."""
    from bqas.targets import transport as transport_module

    http, limit = transport._session()
    data = None if body is None else orjson.dumps(body)
    accept = "text/event-stream" if fmt == "sse" else "application/x-ndjson"
    sent_headers = {"Accept": f"{accept}, application/json", **headers}
    if data is not None:
        sent_headers.setdefault("Content-Type", "application/json")
    for name, value in sent_headers.items():
        if transport_module._UNSENDABLE.search(name) or transport_module._UNSENDABLE.search(value):
            raise TargetFailure(f"header {name}: holds a line break or control character; not sent")
    attempt = 0
    while True:
        attempt += 1
        status: int | None = None
        unsent = False
        raw = b""
        retry_after: float | None = None
        failure: TargetFailure | None = None
        async with limit:
            started = time.perf_counter()
            try:
                # Redirects are not followed: a secret header must not reach another origin, and a stream
                # answered elsewhere would be scored as this target's.
                async with http.request(
                    method, url, data=data, headers=sent_headers, allow_redirects=False
                ) as response:
                    status = response.status
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                    if 200 <= status < 300:
                        return await _read_stream(transport, response, fmt, started, attempt)
                    raw = transport.scrub(await _read_body(transport, response, attempt))
                    if 300 <= status < 400:
                        where = excerpt(transport.scrub(response.headers.get("Location", "no Location").encode()), 500)
                        raise TargetFailure(
                            f"HTTP {status}: the target redirects to {where}; redirects are not followed for "
                            "streamed replies (point the target at the final address)",
                            status=status,
                            raw=raw,
                            attempts=attempt,
                        )
            except (TimeoutError, aiohttp.ClientError) as exc:
                failure, unsent = transport.no_answer(exc, attempt)
            except (ValueError, UnicodeError) as exc:  # a request aiohttp refuses to build: not retried
                raise TargetFailure(f"the request cannot be sent: {type(exc).__name__}: {exc}") from None
            latency = round((time.perf_counter() - started) * 1000, 3)
        if status is not None and 200 <= status < 300 and failure is None:
            return StreamedAnswer(status, raw, latency, attempt, streamed=False)
        answered = failure is None  # an answer with an error status (else no answer: timeout, connection)
        if failure is None:
            failure = TargetFailure(
                f"HTTP {status or 0}: {excerpt(raw)}", status=status, raw=raw, attempts=attempt, latency_ms=latency
            )
        wait = transport.wait_or_raise(
            failure, (status or 0) if answered else None, retry_after, attempt, replay_safe=replay_safe or unsent
        )
        await transport_module._sleep(wait)


async def _read_body(transport: Transport, response: aiohttp.ClientResponse, attempt: int) -> bytes:
    """A plain body, read no further than the transport's ``max_reply_bytes``."""
    data = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        data += chunk
        if len(data) > transport.max_reply_bytes:
            raise TargetFailure(
                f"the reply exceeds {transport.max_reply_bytes} bytes (BQAS_TARGET_MAX_REPLY_BYTES); not read further",
                status=response.status,
                raw=bytes(data[:1024]),
                attempts=attempt,
            )
    return bytes(data)


async def _read_stream(
    transport: Transport, response: aiohttp.ClientResponse, fmt: StreamFormat, started: float, attempt: int
) -> StreamedAnswer:
    """Read a stream to its end; a cut or timed-out stream raises with what was read (not retried)."""
    parser = EventParser(fmt)
    raw = bytearray()

    def now() -> float:
        return round((time.perf_counter() - started) * 1000, 3)

    def failed(reason: str) -> TargetFailure:
        scrubbed = transport.scrub(bytes(raw))
        return TargetFailure(reason, status=response.status, raw=scrubbed, attempts=attempt, latency_ms=now())

    try:
        async for chunk in response.content.iter_any():
            raw += chunk
            if len(raw) > transport.max_reply_bytes:
                raise failed(
                    f"the reply exceeds {transport.max_reply_bytes} bytes (BQAS_TARGET_MAX_REPLY_BYTES); not read further"
                )
            parser.feed(chunk, now())
    except TimeoutError:
        raise failed(
            f"timed out mid-stream after {len(parser.events)} events (target.timeout {transport.timeout:g} s)"
        ) from None
    except aiohttp.ClientError as exc:
        raise failed(f"the stream was cut after {len(parser.events)} events: {type(exc).__name__}: {exc}") from None
    parser.close(now())
    # Whole secrets replaced before anything stores, cuts or quotes the body (the events' text is mapped
    # into fields that the client scrubs again).
    body = await transport._scrubbed(bytes(raw))
    if response.content_type in ("application/json", "text/json") and _one_document(body, parser, fmt):
        return StreamedAnswer(response.status, body, now(), attempt, streamed=False)
    return StreamedAnswer(response.status, body, now(), attempt, parser.events)


def _one_document(body: bytes, parser: EventParser, fmt: StreamFormat) -> bool:
    """Whether a reply labelled JSON is one JSON document rather than a stream labelled so (SSE ``data:``
    lines, or several NDJSON lines)."""
    if fmt == "sse":
        return not parser.events
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return True
