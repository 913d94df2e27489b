"""Feed the results of synchronous `/api/score` calls into the review loop off the request path.

The review loop embeds each input and writes memory, queue and category rows: several milliseconds per
call. A live scoring call should not wait for that, so the sync endpoint hands its records to this feed
and answers at once; a background task batches them into :func:`bqas.review.process.process_results`.
Consequence (documented): the live answer of `/api/score` carries no ``consistency_warning``; the queue
item does. Asynchronous jobs run the loop inline, before their results are stored.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from bqas.logs import get_logger
from bqas.review.process import process_results
from bqas.store.db import Store

log = get_logger(__name__)
Batch = tuple[str, list[dict[str, Any]], list[Mapping[str, Any]]]


class ReviewFeed:
    """A bounded in-process queue of (tenant, records, samples) drained by one background task."""

    def __init__(self, store: Store, *, max_pending: int = 10_000, batch: int = 200, linger: float = 0.25):
        self.store = store
        self.batch = batch
        # After the first call of a batch, wait this long for more before processing. Each batch costs a
        # transaction and a few fixed queries (categories, alerts, retention, reviewed cases): under load,
        # one- or two-record batches made that a tenth of a RAG request's CPU. A queue item appears at most
        # this much later; nothing waits for it on the request path.
        self.linger = linger
        self.dropped = 0
        self.failed = 0  # results the review loop could not process (logged with the error)
        self._queue: asyncio.Queue[Batch | None] = asyncio.Queue(maxsize=max_pending)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def put(self, tenant: str, records: list[dict[str, Any]], sample: Mapping[str, Any]) -> None:
        """Queue one call's records; when the feed is full they are dropped and counted (scoring goes on)."""
        try:
            self._queue.put_nowait((tenant, records, [sample] * len(records)))
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("review feed full: %d result batches not reviewed so far", self.dropped)

    async def close(self) -> None:
        """Process what is queued, then stop."""
        if self._task is None:
            return
        await self._queue.put(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            if self.linger > 0 and self._queue.qsize() + 1 < self.batch:
                await asyncio.sleep(self.linger)
            pending = [first]
            stop = False
            while len(pending) < self.batch and not self._queue.empty():
                nxt = self._queue.get_nowait()
                if nxt is None:
                    stop = True
                    break
                pending.append(nxt)
            by_tenant: dict[str, list[Batch]] = {}
            for call in pending:
                by_tenant.setdefault(call[0], []).append(call)
            for tenant, calls in by_tenant.items():
                recs = [r for _, records, _ in calls for r in records]
                smps = [s for _, _, samples in calls for s in samples]
                try:
                    await asyncio.to_thread(process_results, self.store, tenant, recs, samples=smps, source="api")
                except Exception:  # the review loop must never take the service down
                    log.exception("review loop failed for a batch of %d results of tenant %s", len(recs), tenant)
                    await self._one_by_one(calls)
            if stop:
                return

    async def _one_by_one(self, calls: list[Batch]) -> None:
        """After a failed batch, call by call: one bad call must not cost the others their review."""
        for tenant, records, samples in calls:
            try:
                await asyncio.to_thread(process_results, self.store, tenant, records, samples=samples, source="api")
            except Exception:
                self.failed += len(records)
                log.exception("review loop failed for %d results of tenant %s", len(records), tenant)
