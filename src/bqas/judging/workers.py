"""The worker pools of the offline tier: CPU-bound judging runs here, never on the event loop.

The offline judge (tokenising, embedding, rule checks) costs tens of milliseconds of CPU per RAG sample.
Run inline on the event loop it stalls every LLM request and every HTTP client waiting on that loop, so
the engine hands it to a pool sized to the cores (``BQAS_OFFLINE_WORKERS``, default: the number of
CPUs): worker threads (this module) or worker processes (:mod:`bqas.judging.procpool`), chosen by
``BQAS_OFFLINE_POOL`` (:func:`pool_mode`; :mod:`bqas.judging.dispatch` routes the calls). Threads share
the model, its caches and start at once; processes keep the GIL free for the event loop, which the
service needs. Other CPU-bound steps can use :func:`run_cpu` too.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

#: Environment variable with the number of worker threads of the offline tier.
WORKERS_ENV = "BQAS_OFFLINE_WORKERS"

#: Environment variable that chooses threads or processes for the offline tier (see :func:`pool_mode`).
POOL_ENV = "BQAS_OFFLINE_POOL"
POOL_MODES = ("auto", "threads", "processes")

#: Environment variable: the smallest number of judgments for which ``auto`` gives a run worker processes.
PROCESSES_FROM_ENV = "BQAS_OFFLINE_PROCESSES_FROM"
#: Its default, measured with benchmarks/runner/bench_pool_cutover.py (docs/benchmarks.md): below it, starting
#: the workers (a fork server, a model load in each) costs more than they save.
DEFAULT_PROCESSES_FROM = 200

P = ParamSpec("P")
T = TypeVar("T")

_EXECUTOR: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def offline_workers() -> int:
    """Worker threads of the offline tier: ``$BQAS_OFFLINE_WORKERS``, default the number of CPUs."""
    return _env_count(WORKERS_ENV, max(1, os.cpu_count() or 1), "threads")


def _env_count(name: str, default: int, what: str) -> int:
    """A whole number >= 1 from the environment variable ``name`` (``default`` when unset or blank)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}: expected a whole number of {what} >= 1, got {raw!r}")
    return value


def pool_mode() -> str:
    """``$BQAS_OFFLINE_POOL``: ``auto`` (default), ``threads`` or ``processes``.

    ``auto``: worker processes when there are at least two workers and either a server asks for them
    (``bqas serve``) or a run or ``bqas score`` will judge at least :func:`processes_from` samples; threads
    for everything else (the measured better choice for each, see :func:`wants_processes`);
    ``threads`` and ``processes`` force one kind."""
    raw = os.environ.get(POOL_ENV, "").strip().lower() or "auto"
    if raw not in POOL_MODES:
        raise ValueError(f"{POOL_ENV}: expected one of {', '.join(POOL_MODES)}, got {raw!r}")
    return raw


def processes_from() -> int:
    """``$BQAS_OFFLINE_PROCESSES_FROM``: the judgments a run needs for ``auto`` to choose worker processes
    (default :data:`DEFAULT_PROCESSES_FROM`)."""
    return _env_count(PROCESSES_FROM_ENV, DEFAULT_PROCESSES_FROM, "judgments")


def wants_processes(
    mode: str, workers: int, *, expect_load: bool = False, samples: int | None = None, threshold: int
) -> bool:
    """The pool rule: worker processes (True) or threads (False) for the offline tier.

    ``processes``/``threads`` decide alone. ``auto`` needs two workers or more (one gains nothing from
    processes: a Ray actor, ``BQAS_OFFLINE_WORKERS=1``) and then either sustained load announced up front
    (``expect_load``: ``bqas serve``) or a batch of at least ``threshold`` judgments (``samples``: a run,
    ``bqas score``). A single judgment or a small run stays in threads, which start at once: worker
    processes first start a fork server and load the model in each worker, and win that back only over
    many samples, where the GIL no longer serialises the tier's Python work with the event loop."""
    if mode != "auto":
        return mode == "processes"
    if workers < 2:
        return False
    return expect_load or (samples is not None and samples >= threshold)


def executor() -> ThreadPoolExecutor:
    """The process-wide worker pool (created on first use)."""
    global _EXECUTOR
    if _EXECUTOR is None:
        with _LOCK:
            if _EXECUTOR is None:
                _EXECUTOR = ThreadPoolExecutor(max_workers=offline_workers(), thread_name_prefix="bqas-offline")
    return _EXECUTOR


async def run_cpu(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in the worker pool and await its result (exceptions propagate)."""
    return await submit_cpu(fn, *args, **kwargs)


def submit_cpu(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
    """Hand ``fn(*args, **kwargs)`` to the worker pool now; await the returned future for its result.

    For work that can run while the caller does something else (the LLM request beside the safety gate).
    Must be called with an event loop running."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(executor(), functools.partial(fn, *args, **kwargs))
