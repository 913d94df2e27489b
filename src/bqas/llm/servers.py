"""What the client learned about each server, kept for the life of the process.

Every client for the same ``base_url`` (the service builds one per backend, a run one per engine) shares
one record, so a negotiation is paid once per server: the structured-output format that worked (or the
formats it rejected, remembered even when the next try timed out), whether it refuses token
log-probabilities, whether it honours ``n`` (several samples in one request), and the limit on
requests in flight to it.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field


class InFlight:
    """At most ``limit`` requests in flight to one server, from all clients in one event loop.

    After a timeout the limit halves (down to one): a server that cannot keep up gets fewer requests,
    not more retries on top of the abandoned ones. It grows back by one after ``limit`` answers in a row.
    """

    def __init__(self, limit: int):
        self.max = max(1, limit)
        self.limit = self.max
        self.active = 0
        self._ok = 0
        self._cond = asyncio.Condition()
        self._waiting = 0  # requests waiting for a slot (in or on the way to the condition)

    async def __aenter__(self) -> None:
        if not self._waiting and self.active < self.limit:
            # A free slot and nobody waiting: taken without the condition's lock (one event loop, no await
            # between the check and the count), which costs a few microseconds per request.
            self.active += 1
            return
        self._waiting += 1
        try:
            async with self._cond:
                await self._cond.wait_for(lambda: self.active < self.limit)
                self.active += 1
        finally:
            self._waiting -= 1

    async def __aexit__(self, *exc: object) -> None:
        self.active -= 1
        if self._waiting:
            async with self._cond:
                self._cond.notify_all()

    def timed_out(self) -> None:
        self.limit = max(1, self.limit // 2)
        self._ok = 0

    def answered(self) -> None:
        self._ok += 1
        if self.limit < self.max and self._ok >= self.limit:
            self.limit += 1
            self._ok = 0


@dataclass
class ServerTraits:
    """One server's negotiated capabilities; ``None`` means not known yet."""

    mode: str | None = None
    rejected_modes: set[str] = field(default_factory=set)
    logprobs: bool | None = None
    n: bool | None = None
    # The in-flight limit and the event loop it belongs to (asyncio primitives are bound to one loop).
    in_flight: tuple[asyncio.AbstractEventLoop, InFlight] | None = None


_lock = threading.Lock()
_traits: dict[str, ServerTraits] = {}


def _key(base_url: str) -> str:
    return base_url.rstrip("/").lower()


def traits_for(base_url: str) -> ServerTraits:
    """The shared record of the server at ``base_url``."""
    with _lock:
        return _traits.setdefault(_key(base_url), ServerTraits())


def forget_servers() -> None:
    """Forget every server (tests start each scripted server on a fresh port; a reused port is a new server)."""
    with _lock:
        _traits.clear()


def in_flight_for(base_url: str, loop: asyncio.AbstractEventLoop, limit: int) -> InFlight:
    """The in-flight limit of the server at ``base_url`` in ``loop``; clients asking for less lower it."""
    traits = traits_for(base_url)
    with _lock:
        if traits.in_flight is None or traits.in_flight[0] is not loop:
            traits.in_flight = (loop, InFlight(limit))
        shared = traits.in_flight[1]
        if limit < shared.max:
            shared.max = max(1, limit)
            shared.limit = min(shared.limit, shared.max)
        return shared
