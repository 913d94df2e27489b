"""Backpressure: a bounded number of synchronous scoring requests in progress per process (503 beyond).

Past its capacity a server that accepts everything answers every request later and later: the requests
queue for the offline tier's workers or the LLM's connection slots, and the latency of all of them grows
without bound. With this limit a replica takes at most ``max_in_flight`` synchronous scoring requests at
once; one more is answered at once with 503, ``Retry-After`` and ``"error": "overloaded"``, so that the
client (or the load balancer) can go elsewhere or come back, instead of waiting seconds for an answer that
may come too late to use. Only the routes that judge in the request are bounded: async submissions only
write a job (their backpressure is the job queue), and health, metrics and the review pages must keep
answering while the scoring routes are full.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from prometheus_client import Gauge

from bqas.service.asgi import ASGIApp, Receive, Scope, Send

OVERLOADED = "overloaded"
# The routes that judge inside the request (the rest answer from the store or queue a job).
SCORING_PATHS: frozenset[str] = frozenset({"/api/score"})


def default_max_in_flight(offline_workers: int, llm_slots: int) -> int:
    """Four requests per offline worker, plus two per LLM connection slot where an LLM is configured.

    Offline judging takes about 30 ms of CPU for a RAG request with contexts, so four waiting per worker
    keep the queue near a tenth of a second on a machine that has its cores; an LLM call takes seconds, so
    its slots are filled and as many requests again may wait for them. By Little's law a server at half
    its capacity holds far fewer requests than this (30 requests/s at 50 ms each keep 1.5 in progress)."""
    return max(8, 4 * offline_workers) + 2 * llm_slots


class InFlightLimit:
    """Answer 503 (``Retry-After``) when ``max_in_flight`` requests to ``paths`` are already in progress.

    The count lives in this process (one event loop: no lock needed); ``gauge`` shows it on ``/metrics``."""

    def __init__(
        self,
        app: ASGIApp,
        max_in_flight: int,
        gauge: Gauge,
        retry_after: int = 1,
        paths: Collection[str] = SCORING_PATHS,
    ):
        self.app = app
        self.max_in_flight = max_in_flight
        self.gauge = gauge
        self.retry_after = retry_after
        self.paths = frozenset(paths)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            await self._reject(send)
            return
        self.in_flight += 1
        self.gauge.inc()
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.gauge.dec()

    async def _reject(self, send: Send) -> None:
        body = json.dumps(
            {
                "detail": f"this replica is judging {self.max_in_flight} requests already "
                f"(setting BQAS_MAX_IN_FLIGHT); retry in {self.retry_after} s or send to another replica",
                "error": OVERLOADED,
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.retry_after).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
