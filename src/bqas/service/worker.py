"""Job workers: claim a job, score its missing turns, store each turn as soon as it is scored, finish.

Each claimed job has a lease that a heartbeat renews every third of ``job_lease_seconds``. A worker that
dies (SIGKILL, power loss) stops renewing; once the lease has run out another worker, or the same server
after a restart, claims the job again and scores only the turns not yet stored. A worker that finds its
lease gone (it stalled and the job was reclaimed) stops working on the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from bqas.logs import get_logger
from bqas.privacy import enable_redaction, redact, redaction_enabled
from bqas.review.process import process_results
from bqas.runner.lease import worker_name
from bqas.service.config import ServiceSettings
from bqas.service.jobs import job_calls
from bqas.service.metrics import ServiceMetrics
from bqas.service.scoring import LLMUnavailable, RequestProblem, ScoreCall, Scorer, aggregate, bind_tenant
from bqas.store.db import Store, database_unavailable
from bqas.store.service import (
    JobView,
    add_item,
    claim_job,
    done_seqs,
    finish_job,
    job_items,
    purge_idempotency_keys,
    renew_lease,
)

log = get_logger("bqas.service.worker")
PURGE_EVERY_S = 600.0  # expired idempotency keys are deleted by an idle worker at most this often


class LeaseLost(RuntimeError):
    """Another worker holds the job now."""


class JobFailed(RuntimeError):
    """The job cannot be completed; the message is the reason stored with it."""


def review_source(job: JobView, seq: int) -> str:
    """The review loop's source of one turn: the job id, plus the turn for sessions.

    Queue and memory rows are unique per (tenant, source, response id, judge): turns of one session that
    carry the same ``response_id`` must not collapse into one row (the later turn was lost)."""
    return f"{job.id}#turn-{seq}" if job.kind == "session" else job.id


class JobWorker:
    """Processes up to ``worker_concurrency`` jobs at once in the running event loop."""

    def __init__(
        self,
        store: Store,
        scorer: Scorer,
        service: ServiceSettings,
        *,
        metrics: ServiceMetrics | None = None,
        name: str | None = None,
        review: bool = False,
    ):
        self.review = review  # run the review loop (queue, memory, alerts) on each turn's results
        if service.redact_pii:
            enable_redaction(True)  # process-wide: the store, the LLM cache and the logs mask PII
        self.store = store
        self.scorer = scorer
        self.service = service
        self.metrics = metrics
        self.name = name or worker_name()
        self._wake = asyncio.Event()
        self.processed: list[str] = []  # job ids this worker finished (for tests and logs)
        self._active: set[str] = set()  # job ids being processed now: never claimed a second time here

    def wake(self) -> None:
        """Look for work now (called after a submission in the same process)."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and process jobs until ``stop`` is set."""
        slots = asyncio.Semaphore(self.service.worker_concurrency)
        tasks: set[asyncio.Task[None]] = set()
        purged = 0.0
        try:
            while not stop.is_set():
                await slots.acquire()
                job = await self._claim()
                if job is None:
                    if time.monotonic() - purged > PURGE_EVERY_S:  # idle: forget expired idempotency keys
                        purged = time.monotonic()
                        await self._purge()
                    slots.release()
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), self.service.job_poll_seconds)
                    continue
                self._active.add(job.id)  # before the next claim; _guarded lets go of it
                task = asyncio.create_task(self._guarded(job, slots))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def run_until_idle(self) -> int:
        """Process jobs until none is claimable; returns how many were processed."""
        count = 0
        while True:
            job = await self._claim()
            if job is None:
                return count
            await self.process(job)
            count += 1

    async def _claim(self) -> JobView | None:
        try:
            return await asyncio.to_thread(
                claim_job, self.store, self.name, self.service.job_lease_seconds, tuple(self._active)
            )
        except Exception as exc:  # a database hiccup must not kill the loop; try again at the next poll
            if database_unavailable(exc):  # an outage: one line per poll, not a traceback
                log.warning("claiming a job: the database is unavailable (%s)", type(exc).__name__)
            else:
                log.exception("claiming a job failed")
            return None

    async def _purge(self) -> None:
        try:
            await asyncio.to_thread(purge_idempotency_keys, self.store)
        except Exception:  # a database hiccup: the next idle moment tries again
            log.exception("purging expired idempotency keys failed")

    async def _guarded(self, job: JobView, slots: asyncio.Semaphore) -> None:
        try:
            await self.process(job)
        except Exception:
            log.exception("job %s crashed", job.id)
        finally:
            self._active.discard(job.id)
            slots.release()

    async def process(self, job: JobView) -> None:
        """Score the job's missing turns with a heartbeat on the lease, then mark it done or failed."""
        lost = asyncio.Event()
        heartbeat = asyncio.create_task(self._heartbeat(job.id, lost))
        try:
            work = asyncio.create_task(self._score_missing(job))
            lost_wait = asyncio.create_task(lost.wait())
            done, _ = await asyncio.wait({work, lost_wait}, return_when=asyncio.FIRST_COMPLETED)
            if work not in done:
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
                raise LeaseLost(job.id)
            lost_wait.cancel()
            work.result()
            await self._finish(job, "done")
        except LeaseLost:
            log.warning("job %s: lease lost to another worker; leaving it", job.id)
        except JobFailed as exc:
            await self._finish(job, "failed", str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if database_unavailable(exc):
                # Not the job's fault: it stays claimed until its lease runs out, then any worker (this one
                # too) claims it again and scores only the turns not stored yet.
                log.warning("job %s: the database is unavailable (%s); left to be claimed again", job.id, exc)
                return
            log.exception("job %s failed", job.id)
            await self._finish(job, "failed", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)

    async def _heartbeat(self, job_id: str, lost: asyncio.Event) -> None:
        interval = self.service.job_lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            try:
                held = await asyncio.to_thread(
                    renew_lease, self.store, job_id, self.name, self.service.job_lease_seconds
                )
            except Exception as exc:
                if database_unavailable(exc):  # the lease runs out unless the database is back in time
                    log.warning("renewing the lease of job %s: the database is unavailable", job_id)
                else:
                    log.exception("renewing the lease of job %s failed", job_id)
                continue
            if not held:
                lost.set()
                return

    async def _score_missing(self, job: JobView) -> None:
        calls = job_calls(job)
        finished = await asyncio.to_thread(done_seqs, self.store, job.id)
        turns = asyncio.Semaphore(self.service.turn_concurrency)

        async def one(seq: int, call: ScoreCall) -> None:
            bind_tenant(self.store, job.tenant)  # this task's context: the job's tenant
            async with turns:
                records = await self._score_with_retries(seq, call, len(calls))
                if self.review:
                    records = await asyncio.to_thread(
                        process_results,
                        self.store,
                        job.tenant,
                        records,
                        samples=[call.fields] * len(records),
                        source=review_source(job, seq),
                    )
                # The item's column masks PII on its way in when redaction is on (bqas.privacy).
                item: dict[str, Any] = {"turn": seq, "response_id": call.response_id, "results": records}
                await asyncio.to_thread(add_item, self.store, job.id, seq, item, self.name)

        pending = [asyncio.create_task(one(seq, call)) for seq, call in enumerate(calls) if seq not in finished]
        try:
            await asyncio.gather(*pending)
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _score_with_retries(self, seq: int, call: ScoreCall, total: int) -> list[dict[str, Any]]:
        where = f"turn {seq + 1} of {total}: " if total > 1 else ""
        delay = self.service.job_retry_delay
        for attempt in range(self.service.job_retries + 1):
            try:
                return await self.scorer.score(call)
            except LLMUnavailable as exc:
                if attempt == self.service.job_retries:
                    raise JobFailed(
                        f"{where}{exc.reason} (after {attempt + 1} attempts; setting BQAS_JOB_RETRIES)"
                    ) from None
                log.warning("job turn %d: %s; retry in %.1fs", seq, exc.reason, delay)
                await asyncio.sleep(delay)
                delay *= 2
            except RequestProblem as exc:
                raise JobFailed(f"{where}{'.'.join(map(str, exc.loc))}: {exc.message}") from None
        raise AssertionError("unreachable")

    async def _finish(self, job: JobView, status: str, error: str | None = None) -> None:
        summary: dict[str, Any] | None = None
        if status == "done" and job.kind == "session":
            items = await asyncio.to_thread(job_items, self.store, job.id)
            summary = aggregate([item["results"] for item in items])
        request: dict[str, Any] | None = None
        if redaction_enabled():
            # The request is kept unmasked only while it may still be needed to score; scrub it now
            # (dict keys too). The error column masks itself.
            request = redact(job.request)
        finished = await asyncio.to_thread(
            finish_job, self.store, job.id, self.name, status=status, error=error, aggregate=summary, request=request
        )
        if finished:
            self.processed.append(job.id)
            if self.metrics is not None:
                self.metrics.jobs.labels(status).inc()
