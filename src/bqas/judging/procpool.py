"""Worker processes for the offline tier: each loads the judges' methods and the embedding model once.

Why processes: the offline tier is mostly Python (tokenising, rules, features) between numpy calls, so
worker *threads* hold the GIL most of the time. The event loop in the same process then waits for the
GIL after every socket call (each waits up to the switch interval), and every LLM request and HTTP
client it serves slows down with it. In worker processes the offline work runs on the other cores and
the loop keeps its own GIL; a call costs one pickled round trip (the judge spec is pickled once per
spec, and each worker unpickles it once), a fraction of a millisecond against the milliseconds of work.

The start method is ``forkserver`` where it exists (Linux): the parent has threads (the event loop's
helpers, SQLite writers), and forking such a process can deadlock; ``spawn`` elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.logs import get_logger

if TYPE_CHECKING:
    from bqas.judging.offline import OfflineJudge, TierOutput
    from bqas.judgment.spec import JudgeSpec
    from bqas.offline.embeddings import Embedder

log = get_logger(__name__)

EmbedderFactory = Callable[[], "Embedder"] | None

# --- in the worker process -------------------------------------------------------------------------

_JUDGE: OfflineJudge | None = None
_SPECS: dict[str, JudgeSpec] = {}
_PROBE_BARRIER: Any = None


def bqas_environment() -> dict[str, str]:
    """The ``BQAS_*`` settings of this process: the workers get exactly these (embedder, thresholds).

    Passed explicitly because a forkserver's children inherit the environment the fork server started
    with, not the parent's current one."""
    return {k: v for k, v in os.environ.items() if k.startswith("BQAS_")}


def _watch_owner(owner: int, every: float) -> None:
    """End this worker when the process that owns the pool is gone.

    A worker's parent is the fork server, not the owner, and the pool's queues keep both pipe ends open in
    the worker, so nothing else tells it: measured, every `bqas serve` stopped with SIGTERM left its fork
    server and both workers (models loaded) behind."""
    while True:
        time.sleep(every)
        if not process_alive(owner):
            os._exit(0)


def process_alive(pid: int) -> bool:
    """Is ``pid`` a running process? A zombie (dead, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # the pid now belongs to another user's process: the owner is gone
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # no /proc (macOS): the signal check above is all there is
        return True
    return state not in ("Z", "X")


def _init_worker(factory: EmbedderFactory, env: dict[str, str], barrier: Any, probe_barrier: Any, owner: int) -> None:
    """Initializer of each worker: take the parent's settings, load the methods and the model, then wait
    for the other workers.

    The barrier makes the pool ready only when every worker is: otherwise the first worker to finish
    would take all the start-up probes, and a later call could land on a worker still loading."""
    global _JUDGE, _PROBE_BARRIER
    _PROBE_BARRIER = probe_barrier
    # Ctrl-C goes to the whole process group: the parent shuts the pool down, the workers must not print
    # a traceback each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_owner, args=(owner, 1.0), name="bqas-owner-watch", daemon=True).start()
    for name in [k for k in os.environ if k.startswith("BQAS_") and k not in env]:
        del os.environ[name]
    os.environ.update(env)
    from bqas.judging.offline import OfflineJudge
    from bqas.privacy import install

    install()  # this worker's log records are masked like its parent's when BQAS_REDACT_PII is on

    _JUDGE = OfflineJudge(embedder_factory=factory)
    _JUDGE.load()
    from bqas.offline.warm import warm_rules

    warm_rules()  # the rules' compiled parts too, so that the first requests this worker takes do not wait
    # A broken barrier (another worker died while loading) does not stop this worker from working.
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait(timeout=600)


def _worker_ready() -> tuple[int, float]:
    """(pid, seconds the model load took) of the worker that runs this.

    The start-up probes wait for each other, so each runs in a different worker: one per worker."""
    assert _JUDGE is not None
    _PROBE_BARRIER.wait(timeout=600)
    return os.getpid(), _JUDGE.load_seconds


def _worker_tier(
    key: str,
    spec_bytes: bytes,
    values: Mapping[str, Any],
    language: str,
    skip: Collection[str],
    only: Collection[str] | None,
) -> tuple[TierOutput, float]:
    import time

    from bqas.judging.offline import offline_tier

    assert _JUDGE is not None
    started = time.perf_counter()
    spec = _SPECS.get(key)
    if spec is None:
        spec = _SPECS[key] = pickle.loads(spec_bytes)  # our own bytes, from the parent
    out = offline_tier(_JUDGE, spec, values, language, skip=skip, only=only)
    return out, time.perf_counter() - started


# --- in the parent -----------------------------------------------------------------------------------


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class OfflineProcessPool:
    """``workers`` processes that each hold a loaded offline judge (built with ``factory``)."""

    def __init__(self, workers: int, factory: EmbedderFactory = None, env: dict[str, str] | None = None) -> None:
        self.workers = workers
        ctx = _context()
        barriers = (ctx.Barrier(workers), ctx.Barrier(workers))
        env = bqas_environment() if env is None else env
        self._executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(factory, env, *barriers, os.getpid()),
        )
        # One probe per worker: submitting them spawns all workers now (they start in parallel).
        self._probes: list[Future[tuple[int, float]]] = [self._executor.submit(_worker_ready) for _ in range(workers)]
        self._specs: dict[int, tuple[JudgeSpec, str, bytes]] = {}
        self._lock = threading.Lock()
        self.broken: str | None = None

    def pids(self) -> list[int]:
        """The process ids of the loaded workers (after :meth:`wait_ready`)."""
        return sorted({p.result()[0] for p in self._probes if p.done() and p.exception() is None})

    @property
    def ready(self) -> bool:
        """All workers have loaded their models."""
        return all(p.done() and p.exception() is None for p in self._probes)

    async def wait_ready(self) -> float:
        """Wait until every worker is loaded; returns the longest model load. Raises when a worker failed."""
        results = await asyncio.gather(*(asyncio.wrap_future(p) for p in self._probes))
        return max((seconds for _, seconds in results), default=0.0)

    def _spec_payload(self, spec: JudgeSpec) -> tuple[str, bytes]:
        entry = self._specs.get(id(spec))
        if entry is None or entry[0] is not spec:
            with self._lock:
                data = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
                entry = (spec, hashlib.blake2b(data, digest_size=16).hexdigest(), data)
                self._specs[id(spec)] = entry  # the spec is kept alive here, so its id is not reused
        return entry[1], entry[2]

    async def tier(
        self,
        spec: JudgeSpec,
        values: Mapping[str, Any],
        language: str,
        *,
        skip: Collection[str] = (),
        only: Collection[str] | None = None,
    ) -> tuple[TierOutput, float]:
        """The offline tier of one judgment, computed in a worker process, and the seconds the worker spent
        on it (not the time it waited for a free worker)."""
        key, data = self._spec_payload(spec)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor,
            _worker_tier,
            key,
            data,
            dict(values),
            language,
            tuple(skip),
            None if only is None else tuple(only),
        )

    def shutdown(self, *, wait: bool = False) -> None:
        """Stop the workers (pending calls are cancelled); ``wait``: until they have exited."""
        self._executor.shutdown(wait=wait, cancel_futures=True)
