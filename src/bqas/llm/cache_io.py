"""The LLM response cache as the event loop uses it: batched, and never on the loop itself.

Every judgment looks its reply up before asking the server and stores the reply afterwards. Done one at
a time in a thread, that was two thread hops, a hash and a commit per judgment: at 128 requests in flight
most of what the cache cost a run. Here:

- **lookups** whose key the cache's in-memory key filter does not hold (refreshed from the file at most
  a second ago) are misses, answered on the loop at once; the others are queued: one job in the default
  thread pool hashes the requests and answers all of them with one query (refreshing the filter when
  due), and the lookups that arrive while it runs go together in the next one (batches grow with the
  load, a lone lookup is answered at once);
- **writes** are kept in memory by :meth:`ResponseCache.add` (a lookup finds them there at once) and
  flushed in one transaction in a thread when due (every :data:`~bqas.llm.cache.FLUSH_EVERY` replies or
  :data:`~bqas.llm.cache.FLUSH_AFTER_S` seconds) and when the client closes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from bqas.llm.cache import CACHE_SCOPE, CachedReply, ResponseCache, cache_key


@dataclass(frozen=True)
class Lookup:
    """One request to look up: what its key hashes, and whether a cached reply may be used."""

    model: str
    messages: list[dict[str, str]]
    shape: dict[str, Any]
    scope: str | None
    use_hit: bool
    key: str | None = None  # already hashed on the loop


def lookup_batch(cache: ResponseCache, lookups: list[Lookup]) -> list[tuple[str, CachedReply | None]]:
    """(key, cached reply or None) for each lookup; runs in a worker thread (and refreshes the key filter
    when it is due, so that the next misses are answered on the loop)."""
    if not cache.filter_fresh():
        cache.refresh_known()
    keys = [q.key or cache_key(q.model, q.messages, q.shape, q.scope) for q in lookups]
    found = cache.get_many(k for k, q in zip(keys, lookups, strict=True) if q.use_hit)
    return [(k, found.get(k) if q.use_hit else None) for k, q in zip(keys, lookups, strict=True)]


class CacheIO:
    """Batched, off-the-loop access to one :class:`ResponseCache` from one event loop."""

    def __init__(self, cache: ResponseCache, loop: asyncio.AbstractEventLoop):
        self.cache = cache
        self.loop = loop
        self._waiting: list[tuple[Lookup, asyncio.Future[tuple[str, CachedReply | None]]]] = []
        self._running = False

    async def lookup(
        self, model: str, messages: list[dict[str, str]], shape: dict[str, Any], *, use_hit: bool
    ) -> tuple[str, CachedReply | None]:
        """The request's cache key and its cached reply (None on a miss, or when ``use_hit`` is false)."""
        # The scope is read here, in the caller's context (the service's tenant), not in the thread.
        scope = CACHE_SCOPE.get()
        key: str | None = None
        if self.cache.filter_fresh():
            # The key filter is fresh: a certain miss (most lookups of a new run) is answered here, without a
            # thread hop. Hashing costs tens of microseconds; the hop, on a busy loop, waited for the GIL
            # and added that wait to every request in flight (docs/benchmarks.md, bench_defaults_split.py).
            key = cache_key(model, messages, shape, scope)
            if not use_hit or self.cache.may_hold(key) is False:
                return key, None
        future: asyncio.Future[tuple[str, CachedReply | None]] = self.loop.create_future()
        self._waiting.append((Lookup(model, messages, shape, scope, use_hit, key), future))
        if not self._running:
            self._start()
        return await future

    def _start(self) -> None:
        batch, self._waiting = self._waiting, []
        self._running = True
        job = self.loop.run_in_executor(None, lookup_batch, self.cache, [q for q, _ in batch])
        job.add_done_callback(lambda done: self._answer(batch, done))

    def _answer(
        self,
        batch: list[tuple[Lookup, asyncio.Future[tuple[str, CachedReply | None]]]],
        job: asyncio.Future[list[tuple[str, CachedReply | None]]],
    ) -> None:
        self._running = False
        error = job.exception() if not job.cancelled() else asyncio.CancelledError()
        for n, (_, future) in enumerate(batch):
            if future.done():  # its caller was cancelled meanwhile
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(job.result()[n])
        if self._waiting:
            self._start()

    async def store(self, key: str, reply: CachedReply) -> None:
        """Keep a reply for the cache; write the kept ones in a thread when a flush is due."""
        if self.cache.add(key, reply):
            await asyncio.to_thread(self.cache.flush)

    async def flush(self) -> None:
        """Write every kept reply now (in a thread)."""
        await asyncio.to_thread(self.cache.flush)
