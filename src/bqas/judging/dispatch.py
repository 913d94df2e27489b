"""Where an engine's offline tier runs: worker threads or worker processes (``BQAS_OFFLINE_POOL``).

``auto`` (default), when there are at least two workers: worker processes (:mod:`bqas.judging.procpool`)
for ``bqas serve``, which asks for them up front (:meth:`OfflineDispatch.prepare` with ``expect_load``),
and for a run or ``bqas score`` that announces at least ``BQAS_OFFLINE_PROCESSES_FROM`` judgments
(:meth:`OfflineDispatch.plan`); worker threads for everything else (one sample, a small run, the Python
API). The rule is :func:`bqas.judging.workers.wants_processes`; the figures behind it are in
docs/benchmarks.md (on a quiet 2-core machine ``--backend auto`` over 1,000 RAG samples took 18.8 s in
processes and 28.0 s in threads; the service's event loop parses HTTP for every request and gains from
keeping its GIL). A process pool that cannot start or breaks (a worker killed) is logged and the tier
goes on in threads.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from bqas.judging.offline import OfflineJudge, TierOutput, timed_offline_tier
from bqas.judging.workers import offline_workers, pool_mode, processes_from, run_cpu, wants_processes
from bqas.logs import get_logger

if TYPE_CHECKING:
    from bqas.judging.procpool import OfflineProcessPool
    from bqas.judgment.spec import JudgeSpec

log = get_logger(__name__)

_POOLS: dict[Any, OfflineProcessPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(judge: OfflineJudge) -> OfflineProcessPool:
    """The process pool for ``judge``'s embedder and the current ``BQAS_*`` settings (one per process,
    shared by engines; a changed setting gets its own pool, so no worker judges with stale settings)."""
    from bqas.judging.procpool import OfflineProcessPool, bqas_environment

    env = bqas_environment()
    key = (judge.embedder_factory, tuple(sorted(env.items())))
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool.broken:
            pool = _POOLS[key] = OfflineProcessPool(offline_workers(), judge.embedder_factory, env)
        return pool


def shutdown_pools() -> None:
    """Stop every worker process of the offline tier and wait until they have exited (``bqas serve`` at
    shutdown, the end of a run, tests)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=True)


def process_capable(judge: OfflineJudge) -> str | None:
    """Why ``judge`` cannot run in worker processes, or None when it can.

    A subclass may hold state or behaviour a worker would not have, and the embedder factory has to
    reach the workers by pickling."""
    if type(judge) is not OfflineJudge:
        return f"custom offline judge {type(judge).__name__}"
    try:
        pickle.dumps(judge.embedder_factory)
    except Exception as exc:
        return f"embedder factory cannot be sent to a worker process ({exc})"
    return None


class OfflineDispatch:
    """Routes one engine's offline-tier calls to worker threads or worker processes."""

    def __init__(self, judge: OfflineJudge) -> None:
        self.judge = judge
        self.mode: str | None = None  # "threads" or "processes" once decided
        self._pool: OfflineProcessPool | None = None
        self._decision: asyncio.Future[str] | None = None

    def plan(self, samples: int) -> str:
        """Decide threads or processes for a batch of ``samples`` judgments (a run, ``bqas score``) before
        the first one; worker processes, when chosen, start loading now. Returns the mode (kept once
        decided)."""
        if self.mode is None:
            self._choose(expect_load=False, samples=samples)
        assert self.mode is not None
        return self.mode

    async def prepare(self, *, expect_load: bool = False) -> float:
        """Decide threads or processes and load the models there; returns the seconds loading took.

        ``expect_load`` (``bqas serve``): processes in ``auto`` mode. Cheap once done: the engine calls it
        before every offline judgment's clock starts."""
        if self.mode == "processes" and self._pool is not None and self._pool.ready:
            return 0.0
        if self.mode == "threads" and self.judge.loaded:
            return 0.0
        if self.mode is None:
            if self._decision is None or self._decision.done():
                self._decision = asyncio.ensure_future(self._decide(expect_load))
            await asyncio.shield(self._decision)
        if self.mode == "processes" and self._pool is not None:
            try:
                return await self._pool.wait_ready()
            except Exception as exc:
                self._fall_back(f"the worker processes did not start: {exc!r}")
        return await run_cpu(self.judge.load)

    async def _decide(self, expect_load: bool) -> str:
        return self._choose(expect_load=expect_load, samples=None)

    def _choose(self, *, expect_load: bool, samples: int | None) -> str:
        mode, workers = pool_mode(), offline_workers()
        threshold = processes_from() if samples is not None else 0
        want = wants_processes(mode, workers, expect_load=expect_load, samples=samples, threshold=threshold)
        why_not = process_capable(self.judge) if want else None
        if want and why_not is not None:
            log.warning("offline tier: %s; using worker threads", why_not)
            want = False
        if want:
            try:
                self._pool = shared_pool(self.judge)
            except Exception as exc:  # no processes on this platform, pickling, resources
                log.warning("offline tier: worker processes could not start (%r); using worker threads", exc)
                want = False
        self.mode = "processes" if want else "threads"
        why = "a server" if expect_load else f"{samples} judgments" if samples is not None else "one at a time"
        log.info("offline tier: worker %s (BQAS_OFFLINE_POOL=%s, %d workers, %s)", self.mode, mode, workers, why)
        return self.mode

    def _fall_back(self, why: str) -> None:
        log.warning("offline tier: %s; going on in worker threads", why)
        if self._pool is not None:
            self._pool.broken = why
            self._pool.shutdown()
        self._pool = None
        self.mode = "threads"

    async def tier(
        self,
        spec: JudgeSpec,
        values: Mapping[str, Any],
        language: str,
        *,
        skip: Collection[str] = (),
    ) -> tuple[TierOutput, float]:
        """The offline tier of one judgment, off the event loop (models loaded before, see prepare), and the
        seconds the worker spent on it (the rest of the wait was the queue for a worker)."""
        await self.prepare()
        pool = self._pool
        if self.mode == "processes" and pool is not None:
            from concurrent.futures.process import BrokenProcessPool  # multiprocessing: only when used

            try:
                return await pool.tier(spec, values, language, skip=skip)
            except BrokenProcessPool as exc:
                self._fall_back(f"a worker process died ({exc})")
                await run_cpu(self.judge.load)
        return await run_cpu(timed_offline_tier, self.judge, spec, values, language, skip=skip)
