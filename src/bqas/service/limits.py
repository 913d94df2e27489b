"""Request limits: body size (413) as ASGI middleware, and a token bucket per tenant (429).

The token buckets live in the memory of one process: with N ``bqas serve`` processes a tenant may send up
to N times the configured rate. A shared limit would need the database or a proxy in front.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass

from bqas.service.asgi import ASGIApp, Message, Receive, Scope, Send


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    """A receive callable that returns ``messages`` first, then defers to ``then`` (for disconnects)."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive


class BodySizeLimit:
    """Answer 413 when ``Content-Length`` (or the streamed body) exceeds ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.max_bytes
                except ValueError:
                    too_large = False
                if too_large:
                    await self._reject(send)
                    return
                # The server delivers no more than Content-Length bytes: nothing more to check.
                await self.app(scope, receive, send)
                return
        # No Content-Length (chunked upload): read the body here, up to the limit, then replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay([{"type": "http.request", "body": b"".join(chunks)}], receive), send)

    async def _reject(self, send: Send) -> None:
        body = json.dumps(
            {"detail": f"request body larger than {self.max_bytes} bytes (setting BQAS_MAX_BODY_BYTES)"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """Token bucket per key: ``rate`` tokens per second, at most ``burst``. ``rate`` 0 means no limit."""

    def __init__(self, rate: float, burst: int):
        self.rate = rate
        self.burst = max(1, burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float | None:
        """Take one token; None when allowed, else the seconds until a token is available."""
        if self.rate <= 0:
            return None
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / self.rate


def retry_after_header(seconds: float) -> str:
    """Whole seconds for ``Retry-After`` (at least 1)."""
    return str(max(1, math.ceil(seconds)))
