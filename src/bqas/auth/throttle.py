"""Back-off for clients that send wrong API keys (the service's endpoints and the review login).

Each client (its peer address) may fail ``free`` times; after that it must wait ``base`` seconds,
doubling with every further failure up to ``cap``, before its next attempt is even looked at. A client
is forgotten ``cap`` seconds after its last failure. A success does not reset the count: otherwise a
holder of one valid key could interleave it with guesses at the keys of other tenants. State lives in
the memory of one process and is bounded (the oldest clients are forgotten first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Client:
    failures: int
    last_failure: float
    blocked_until: float


class FailureThrottle:
    """Per-client exponential back-off after repeated authentication failures (``base`` 0: off)."""

    def __init__(
        self,
        *,
        free: int = 5,
        base: float = 1.0,
        cap: float = 300.0,
        max_clients: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.free = free
        self.base = base
        self.cap = cap
        self.max_clients = max_clients
        self.clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, client: str) -> float | None:
        """Seconds ``client`` must still wait before its next attempt; None when it may try now."""
        entry = self._clients.get(client)  # a plain dict read: the common case (no failures) takes no lock
        if entry is None:
            return None
        left = entry.blocked_until - self.clock()
        return left if left > 0 else None

    def failed(self, client: str) -> float | None:
        """Record a failure; returns the back-off now imposed (None while the client is within ``free``)."""
        if self.base <= 0:
            return None
        now = self.clock()
        with self._lock:
            entry = self._clients.pop(client, None)
            if entry is None or now - entry.last_failure > self.cap:
                entry = _Client(0, now, 0.0)
            entry.failures += 1
            entry.last_failure = now
            delay: float | None = None
            if entry.failures > self.free:
                delay = min(self.cap, self.base * 2 ** min(entry.failures - self.free - 1, 30))
                entry.blocked_until = now + delay
            self._clients[client] = entry
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
        return delay
