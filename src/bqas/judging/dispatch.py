"""Where an engine's offline tier runs: worker threads or worker processes (``BQAS_OFFLINE_POOL``).

``auto`` (default) decides at the first offline judgment: when more judgments wait for the offline tier
at once than there are workers (a run with concurrency, a server under load) and there are at least two
workers, the tier runs in worker processes (:mod:`bqas.judging.procpool`), so that the event loop keeps
the GIL; otherwise, and for a one-sample run that should not pay for starting processes, in worker
threads. ``bqas serve`` asks for processes up front (:meth:`OfflineDispatch.prepare`). A process pool
that cannot start or breaks (a worker killed) is logged and the tier goes on in threads.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from bqas.judging.offline import OfflineJudge, TierOutput, offline_tier
from bqas.judging.workers import offline_workers, pool_mode, run_cpu
from bqas.logs import get_logger

if TYPE_CHECKING:
    from bqas.judging.procpool import OfflineProcessPool
    from bqas.judging.spec import JudgeSpec

log = get_logger(__name__)

# Seconds the first offline judgment waits for the others that start with it, to see the demand.
DEMAND_WINDOW = 0.02

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
    """Stop every worker process of the offline tier (tests; a process exits without it too)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown()


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
        self._waiting = 0

    async def prepare(self, *, expect_load: bool = False) -> float:
        """Decide threads or processes and load the models there; returns the seconds loading took.

        ``expect_load`` (``bqas serve``): choose processes in ``auto`` mode without waiting for demand.
        Cheap once done: the engine calls it before every offline judgment's clock starts."""
        if self.mode == "processes" and self._pool is not None and self._pool.ready:
            return 0.0
        if self.mode == "threads" and self.judge.loaded:
            return 0.0
        self._waiting += 1
        try:
            if self.mode is None:
                if self._decision is None or self._decision.done():
                    self._decision = asyncio.ensure_future(self._decide(expect_load))
                await asyncio.shield(self._decision)
        finally:
            self._waiting -= 1
        if self.mode == "processes" and self._pool is not None:
            try:
                return await self._pool.wait_ready()
            except Exception as exc:
                self._fall_back(f"the worker processes did not start: {exc!r}")
        return await run_cpu(self.judge.load)

    async def _decide(self, expect_load: bool) -> str:
        mode, why_not = pool_mode(), process_capable(self.judge)
        want = mode == "processes"
        if mode == "auto" and why_not is None and offline_workers() >= 2:
            if not expect_load:
                await asyncio.sleep(DEMAND_WINDOW)  # the judgments started with this one arrive meanwhile
            want = expect_load or self._waiting > offline_workers()
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
    ) -> TierOutput:
        """The offline tier of one judgment, off the event loop (models loaded before, see prepare)."""
        await self.prepare()
        pool = self._pool
        if self.mode == "processes" and pool is not None:
            from concurrent.futures.process import BrokenProcessPool  # multiprocessing: only when used

            try:
                return await pool.tier(spec, values, language, skip=skip)
            except BrokenProcessPool as exc:
                self._fall_back(f"a worker process died ({exc})")
                await run_cpu(self.judge.load)
        return await run_cpu(offline_tier, self.judge, spec, values, language, skip=skip)
