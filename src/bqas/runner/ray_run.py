"""``bqas run --ray``: judge a scenario's samples on a Ray cluster, with the guarantees of a local run.

The driver (this process) streams the pending work items in batches to a pool of judge actors. Each
actor builds its judge engine once (embedding model included), judges a batch with its share of the
run's concurrency (so the global LLM limit holds across actors) and writes the batch's results to the
shared SQL store itself, through the same :func:`persist_batch` a local run uses: keys are (run, sample,
judge) as ever, so ``--resume`` redoes only what is missing and nothing is stored twice. The driver
holds at most two batches per actor in flight, so its memory stays flat in the number of samples.

Failures (:mod:`bqas.runner.ray_pool`): a lost actor (its process or its node) is replaced and its
batches go to the other actors; a replacement that Ray cannot place within ``placement_timeout`` is
given up; an item that keeps failing becomes a ``judge_error`` record (a gate, default 0; ``--resume``
judges it again); with no actor left the rest is judged in this process. A head that stops answering
ends the run as interrupted with its own exit code (:mod:`bqas.runner.ray_head`). Nothing waits forever.

Ray is imported here only: without ``--ray`` (or a scenario ``ray:`` key) it is never loaded.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bqas.judgment.work import WorkItem
from bqas.runner.execute import Result, RunFailed, judge_work, pending_items, persist_batch
from bqas.runner.loop import new_event_loop, progress_bar
from bqas.runner.ray_pool import ActorPool, ClusterLost, cause, drive
from bqas.runner.request import RunRequest, engine_for, llm_overrides, memory_examples
from bqas.runner.scenario import Scenario, ScenarioError
from bqas.settings import Settings
from bqas.store.db import Store

NAMESPACE = "bqas"


@dataclass(frozen=True)
class RayPlan:
    """Where and how wide a run goes: the cluster address, the number of actors, the batch size."""

    address: str
    workers: int | None
    batch_size: int
    placement_timeout: float = 60.0
    batch_timeout: float | None = None


def ray_plan(request: RunRequest, scenario: Scenario) -> RayPlan:
    """The command line's ``--ray``/``--ray-workers`` over the scenario's ``ray:`` section."""
    section = scenario.ray
    return RayPlan(
        address=request.ray or (section.address if section else "auto"),
        workers=request.ray_workers or (section.workers if section else None),
        batch_size=section.batch_size if section else 32,
        placement_timeout=request.ray_placement_timeout or (section.placement_timeout if section else 60.0),
        batch_timeout=section.batch_timeout if section else None,
    )


def check_cluster(request: RunRequest, scenario: Scenario) -> None:
    """Before a run is created: Ray is installed and the cluster it joins answers (in bounded time)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise ScenarioError("--ray: Ray is not installed; install it with `pip install 'bqas[ray]'`")
    from bqas.runner.ray_address import check_address

    source = "--ray" if request.ray else f"{scenario.path or 'scenario'}: ray.address"
    check_address(ray_plan(request, scenario).address, source)


def _connect(plan: RayPlan) -> bool:
    """Join (or start) the cluster; True when this call started it (and must shut it down)."""
    try:
        import ray
    except ImportError:
        raise ScenarioError("--ray: Ray is not installed; install it with `pip install 'bqas[ray]'`") from None
    if ray.is_initialized():  # an embedding program (or a test) already connected
        return False
    # Ray warns on every start of a local cluster that token authentication is on by default (it is what
    # docs/ray.md describes): said once per run that is noise in every log, so that one logger is quieted.
    import logging

    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    options: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False, "include_dashboard": False}
    if plan.address == "local":
        ray.init(num_cpus=plan.workers or os.cpu_count() or 1, **options)
    elif plan.address == "auto":
        # RAY_ADDRESS, else a cluster started on this host with `ray start`, else a fresh local one. Ray
        # joins the cluster its ray_current_cluster file names even when that cluster is long gone (and
        # retries it for minutes): a record that does not answer within seconds is passed over.
        from bqas.runner.ray_address import named_address, stale_recorded_cluster

        stale = None if named_address("auto") else stale_recorded_cluster()
        if stale is not None:
            notice(f"--ray auto: {stale}; starting a local Ray cluster instead")
            ray.init(address="local", **options)
        else:
            ray.init(**options)
    else:
        try:
            ray.init(address=plan.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ScenarioError(f"--ray {plan.address}: cannot join that Ray cluster: {exc}") from None
    return True


def notice(message: str) -> None:
    """A line for the operator on stderr (above the progress bar, which redirects stderr while it runs)."""
    from bqas.textsafe import printable

    print(f"bqas: {printable(message)}", file=sys.stderr, flush=True)


def sqlite_problem(database_url: str, driver_ip: str, node_ips: list[str]) -> str | None:
    """Why the store cannot serve the cluster's workers, or None: SQLite is one file on this machine."""
    if not database_url.startswith("sqlite"):
        return None
    if database_url in ("sqlite://", "sqlite:///:memory:"):
        return "--ray: an in-memory SQLite store is not shared with the Ray workers; use a file or PostgreSQL"
    remote = sorted({ip for ip in node_ips if ip != driver_ip})
    if remote:
        return (
            f"--ray: the store is SQLite ({database_url}), a file on this machine, but the cluster has workers "
            f"on {', '.join(remote)}; set BQAS_DATABASE_URL to a PostgreSQL database every node reaches"
        )
    return None


def _ray() -> Any:
    """The ray module, untyped (its API is only partly annotated)."""
    import ray

    return ray


def _check_store(database_url: str) -> None:
    ray = _ray()
    driver_ip = ray.util.get_node_ip_address()
    nodes = [n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")]
    problem = sqlite_problem(database_url, driver_ip, nodes)
    if problem:
        raise ScenarioError(problem)


class JudgeWorker:
    """One judge actor: engine and store opened once, then batch after batch (``judge``)."""

    def __init__(
        self,
        request: RunRequest,
        scenario: Scenario,
        settings: Settings,
        stored: dict[str, Any] | None,
        database_url: str,
        run_id: str,
        concurrency: int,
        review_tenant: str | None,
        memory_examples_k: int | None,
    ) -> None:
        from bqas.judging.workers import WORKERS_ENV
        from bqas.privacy import install
        from bqas.store.db import database_limits, open_store

        install()  # this actor writes to the store: with BQAS_REDACT_PII on it masks PII (bqas.redaction)

        # One CPU per actor (num_cpus=1): one offline worker thread, not one per core of the node.
        os.environ[WORKERS_ENV] = "1"

        self.scenario = scenario
        self.run_id = run_id
        self.review_tenant = review_tenant
        self.concurrency = concurrency
        # One event loop for the actor's life (the LLM client's connections belong to it), in a thread of
        # its own: Ray may call actor methods from a thread that already runs a loop.
        self.loop = new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="bqas-judge-loop", daemon=True).start()
        self.engine = engine_for(scenario, request, settings, stored)
        # The driver's limits of the store's waits (BQAS_DB_*), not the node's environment: above all the
        # idle-in-transaction bound, which frees the rows of an actor frozen mid-write for its replacement.
        self.store = open_store(database_url, limits=database_limits(settings))
        if review_tenant is not None and memory_examples_k and self.engine.llm is not None:
            self.engine.options.examples = memory_examples(self.store, review_tenant, memory_examples_k)

    def pid(self) -> int:
        """This actor's process id (tests kill it)."""
        return os.getpid()

    def where(self) -> tuple[int, str, str]:
        """(process id, node id, node address): the first call, answered once the actor runs."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id(), _ray().util.get_node_ip_address()

    def judge(self, batch: list[WorkItem]) -> tuple[int, int]:
        """Judge a batch and store its results; returns (work items, records) done."""
        results = asyncio.run_coroutine_threadsafe(self._judge(batch), self.loop).result()
        persist_batch(self.store, self.run_id, results, self.review_tenant)
        return len(batch), len(results)

    async def _judge(self, batch: list[WorkItem]) -> list[Result]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(work: WorkItem) -> list[Result]:
            async with gate:
                return await judge_work(self.engine, self.scenario, self.run_id, work)

        done = await asyncio.gather(*(one(w) for w in batch))
        return [r for results in done for r in results]

    def close(self) -> None:
        """Close the LLM client (its connections) before the actor goes."""
        if self.engine.llm is not None:
            asyncio.run_coroutine_threadsafe(self.engine.llm.aclose(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)


def run_on_ray(
    request: RunRequest,
    scenario: Scenario,
    settings: Settings,
    store: Store,
    run_id: str,
    done: set[str],
    total: int,
    concurrency: int,
    review_tenant: str | None,
    done_repeats: Mapping[int, set[str]] | None = None,
) -> int:
    """Judge the run's pending items on Ray; returns how many work items were judged in this call."""
    plan = ray_plan(request, scenario)
    joining = "starting a local Ray cluster" if plan.address == "local" else f"connecting to Ray ({plan.address})"
    with request.step(joining):
        started = _connect(plan)
    try:
        ray = _ray()
        database_url = str(store.engine.url.render_as_string(hide_password=False))
        _check_store(database_url)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = max(1, min(plan.workers or cpus, concurrency))
        if workers > cpus:
            raise ScenarioError(f"--ray-workers {workers}: the cluster has {cpus} CPU(s), one per judge actor")
        share = concurrency // workers  # the global limit holds: workers × share <= concurrency
        stored = store.get_run(run_id).config if request.resume else None  # type: ignore[union-attr]
        # The actors get what they cannot look up on another machine: the API key, the settings.
        portable = replace(request, on_start=None, on_step=None, overrides=llm_overrides(scenario, request))
        from bqas.review.settings import get_review_settings

        review = get_review_settings()
        memory_k = review.memory_examples_k if review.memory_examples else None
        # Ray does not restart the actors itself: a lost one is replaced by the pool, which bounds how
        # long a replacement may wait for a CPU (Ray would wait for ever on a cluster without one).
        actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(JudgeWorker)
        token = secrets.token_hex(3)  # a resumed run's actors never clash with a dead driver's

        def make(name: str) -> Any:
            return actor.options(name=name).remote(
                portable, scenario, settings, stored, database_url, run_id, share, review_tenant, memory_k
            )

        pool = ActorPool(
            ray,
            make,
            plan.placement_timeout,
            notice,
            prefix=f"judge-{run_id}-{token}",
            batch_timeout=plan.batch_timeout,
        )
        # Our own check of the head: without it a lost head kept the driver silent for a minute, then
        # Ray's core ended it with exit 1 (a missed gate's code) and the run stayed "running".
        from bqas.runner.ray_head import watch_head

        watch = watch_head(store, run_id, settings.ray_head_timeout)
        try:
            with request.step(f"starting {workers} judge actor(s) on the Ray cluster"):
                pool.start(workers)
                try:  # an actor that cannot even start (engine or store) fails the run now, not item by item
                    pool.wait_started()
                except ClusterLost:
                    raise
                except Exception as exc:
                    raise RunFailed(f"the judge actors did not start on the Ray cluster: {cause(exc)}") from exc
            pending = pending_items(scenario, done, done_repeats)  # --repeats: repeats 2..N follow each item
            with request.step(f"judging {total} samples on {workers} Ray actor(s)", bar=request.progress):
                if request.progress:
                    finished = len(done) + sum(len(keys) for keys in (done_repeats or {}).values())
                    with progress_bar(scenario.name, total, finished) as advance:
                        return drive(pool, scenario, store, run_id, pending, plan.batch_size, advance)
                return drive(pool, scenario, store, run_id, pending, plan.batch_size, None)
        finally:
            pool.close()
            if watch is not None:
                watch.stop()
    finally:
        if started:
            _ray().shutdown()
