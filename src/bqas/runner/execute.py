"""Grade every sample of a scenario with bounded concurrency, writing each result to the store as soon as
it is done. Memory stays flat: samples are streamed in, results streamed out.

A run is resumable: each (sample, judge) has a key that is unique per run, finished keys are skipped on
``--resume``, and the store ignores a second insert of the same key. With ``--repeats N`` the key grows a
repeat index (1..N): each repeat is stored, and resumed, on its own.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from bqas.judging.engine import InvalidSample, JudgeEngine
from bqas.judgment.record import EXCHANGE_KEY
from bqas.judgment.work import DatasetItem, WorkItem
from bqas.runner.dataset import iter_dataset
from bqas.runner.gc_tuning import fewer_collections
from bqas.runner.scenario import Scenario
from bqas.store.db import JUDGE_ERROR, Store

if TYPE_CHECKING:
    from bqas.targets.stage import TargetStage

ProgressHook = Callable[[int], None]


class RunFailed(RuntimeError):
    """The run cannot go on (the results writer died): the run is marked ``failed`` with this reason."""


RAGAS = "ragas"  # the pseudo-judge of a scenario's RAGAS `metrics:`


def new_run_id() -> str:
    """A sortable, unique run id such as ``r-20261129-231755-3fa2``."""
    return f"r-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _judges_for(item: DatasetItem, scenario: Scenario) -> tuple[list[str], str | None]:
    wanted = item.data.get("judge")
    if wanted is None:
        return list(scenario.judges), None
    names = [wanted] if isinstance(wanted, str) else wanted
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return [], "field judge: expected a judge name or a list of names"
    unknown = [n for n in names if n not in scenario.judges and not (n == RAGAS and scenario.metrics)]
    if unknown:
        return [], f"field judge: {unknown} not among the scenario's judges {scenario.judges}"
    return names, None


def repeat_count(work: WorkItem, scenario: Scenario) -> int:
    """How often a work item is judged: the scenario's repeats, once for a bad sample or RAGAS metrics."""
    return 1 if work.error or work.judge in (None, RAGAS) else scenario.repeats


def _items(scenario: Scenario) -> Iterator[DatasetItem]:
    """The dataset's samples, a conversation's turns (``turns:``) as items of their own."""
    from bqas.targets.conversation import turn_items

    for item in iter_dataset(scenario):
        turns = turn_items(item) if not item.error and "turns" in item.data else None
        if turns is None:
            yield item
        else:
            yield from turns


def work_items(scenario: Scenario) -> Iterator[WorkItem]:
    """(sample, judge) pairs in dataset order with stable keys and sequence numbers."""
    seen: set[str] = set()
    seq = 0
    for item in _items(scenario):
        if item.error:
            yield WorkItem(f"{item.sample_id}::", seq, None, item, item.error)
            seq += 1
            continue
        judges, error = _judges_for(item, scenario)
        if error:
            yield WorkItem(f"{item.sample_id}::", seq, None, item, f"line {item.line}: {error}")
            seq += 1
            continue
        if scenario.metrics and item.data.get("judge") in (None, RAGAS):
            judges = [*(j for j in judges if j != RAGAS), RAGAS]
        for judge in judges:
            key = f"{item.sample_id}::{judge}"
            if key in seen:
                dup = f"{key}@{item.line}"
                yield WorkItem(dup, seq, judge, item, f"line {item.line}: duplicate sample id {item.sample_id!r}")
            else:
                seen.add(key)
                yield WorkItem(key, seq, judge, item)
            seq += 1


def _sample_meta(item: DatasetItem) -> dict[str, Any]:
    data = item.data
    tags = data.get("tags")
    return {
        "sample_id": item.sample_id,
        "line": item.line,
        "tags": tags if isinstance(tags, list) else [],
        "intent": data.get("expected_intent") or data.get("intent"),
        "expected": data.get("expected") if isinstance(data.get("expected"), dict) else None,
    }


def invalid_record(
    run_id: str, work: WorkItem, message: str, language: str | None, inputs: dict[str, Any]
) -> dict[str, Any]:
    """The record of a sample that could not be judged because the sample itself is bad."""
    record: dict[str, Any] = {
        "run_id": run_id,
        "response_id": work.item.sample_id,
        "judge": work.judge,
        "language": language,
        "status": "invalid",
        "verdict": None,
        "composite_score": None,
        "dimensions": {},
        "escalation": None,
        "errors": [message],
        "inputs": inputs,
        **_sample_meta(work.item),
    }
    if work.target is not None:
        record["target"] = work.target
    return record


def target_error_record(run_id: str, work: WorkItem, reason: str, language: str | None) -> dict[str, Any]:
    """The record of a sample the assistant under test gave no usable answer for (``target_error``); its
    inputs are the sample's fields as the dataset gives them (what the assistant was asked)."""
    record = invalid_record(run_id, work, reason, language, dict(work.item.data))
    record["status"] = "target_error"
    record["target_error"] = reason
    return record


def judge_error_record(run_id: str, work: WorkItem, reason: str, language: str | None) -> dict[str, Any]:
    """The record of a sample whose judging failed for a reason outside the sample (a lost Ray node, a
    worker process that died every time): ``judge_error``. It counts against ``max_judge_errors`` and is
    not "done": ``--resume`` judges it again, and any later result of the sample replaces it."""
    record = invalid_record(run_id, work, reason, language, {})
    record["status"] = JUDGE_ERROR
    return record


def ragas_record(run_id: str, work: WorkItem, rec: dict[str, Any], language: str | None) -> dict[str, Any]:
    """A RAGAS metric result as a BQAS result record (judge ``ragas``, one dimension: the metric)."""
    metric = str(rec["metric"])
    measured = rec.get("value") is not None
    embedding_only = rec.get("prompt_language") is None and not rec.get("llm_calls")
    return {
        "run_id": run_id,
        "response_id": work.item.sample_id,
        "judge": RAGAS,
        "metric": metric,
        "language": language,
        "judge_language": rec.get("judge_language"),
        "prompt_language": rec.get("prompt_language"),
        metric: rec.get("value"),
        "status": "scored" if rec.get("status") == "scored" else "unscored",
        "verdict": None,
        "composite_score": None,
        "dimensions": {
            metric: {
                "value": rec.get("value"),
                "backend": "offline" if embedding_only and measured else "llm",
                "model": rec.get("model"),
                "method": f"ragas:{metric}",
                "measured": measured,
                "note": rec.get("unscored_reason"),
            }
        },
        "escalation": None,
        "unscored_reason": rec.get("unscored_reason"),
        "latency_ms": rec.get("latency_ms", 0.0),
        "llm_calls": rec.get("llm_calls", 0),
        "prompt_tokens": rec.get("prompt_tokens", 0),
        "completion_tokens": rec.get("completion_tokens", 0),
        "errors": rec.get("errors", []),
        **_sample_meta(work.item),
    }


async def judge_ragas(
    engine: JudgeEngine, scenario: Scenario, run_id: str, work: WorkItem
) -> list[tuple[str, dict[str, Any]]]:
    """All of the scenario's RAGAS metrics for one sample: (key suffix, record) per metric."""
    from bqas.ragas.api import score_sample

    language = work.item.data.get("language") or scenario.language
    records = await score_sample(
        work.item.data, scenario.metrics, llm=engine.llm, judge_language=scenario.judge_language or "en"
    )
    return [(f":{r['metric']}", ragas_record(run_id, work, r, language)) for r in records]


async def judge_one(
    engine: JudgeEngine, scenario: Scenario, run_id: str, work: WorkItem, repeat: int = 1
) -> dict[str, Any]:
    """Judge one work item; a bad sample becomes an ``invalid`` record naming line and field.

    Repeats 2..N skip the LLM cache: a cached reply would make them copies of repeat 1."""
    data = work.item.data
    language = data.get("language") or scenario.language
    if work.error or work.judge is None:
        return invalid_record(run_id, work, work.error or "no judge", language, {})
    spec = engine.registry.get(work.judge)
    inputs = {k: data.get(k) for k in spec.inputs if k in data}
    try:
        result = await engine.evaluate(
            work.judge, data, response_id=work.item.sample_id, language=language, fresh=repeat > 1
        )
    except InvalidSample as exc:
        return invalid_record(run_id, work, f"line {work.item.line}: field {exc}", language, inputs)
    except ValueError as exc:
        return invalid_record(run_id, work, f"line {work.item.line}: {exc}", language, inputs)
    record = result.to_record()
    record["run_id"] = run_id
    record["inputs"] = inputs
    record.update(_sample_meta(work.item))
    if work.target is not None:
        record["target"] = work.target
    if result.exchange is not None:  # stored in its own column (Store.add_results), not in the record
        record[EXCHANGE_KEY] = result.exchange
    if scenario.repeats > 1:
        record["repeat"] = repeat
    return record


Result = tuple[str, int, dict[str, Any]]  # (result key, sequence number, record) as the store takes them


def pending_items(
    scenario: Scenario, skip: Container[str], done_repeats: Mapping[int, Container[str]] | None = None
) -> Iterator[WorkItem]:
    """The work items of a scenario that are not done yet (``skip``: the stored keys on ``--resume``).

    With ``repeats`` > 1, each is followed by its repeats 2..N not in ``done_repeats[r]``."""
    done_repeats = done_repeats or {}
    for work in work_items(scenario):
        ragas_done = work.judge == RAGAS and all(f"{work.key}:{m}" in skip for m in scenario.metrics)
        if work.key not in skip and not ragas_done:
            yield work
        for repeat in range(2, repeat_count(work, scenario) + 1):
            if work.key not in done_repeats.get(repeat, ()):
                yield replace(work, repeat=repeat)


async def judge_work(engine: JudgeEngine, scenario: Scenario, run_id: str, work: WorkItem) -> list[Result]:
    """The result(s) of one work item: one record per judge, one per metric for the RAGAS pseudo-judge."""
    if work.judge == RAGAS and not work.error:
        return [(work.key + suffix, work.seq, rec) for suffix, rec in await judge_ragas(engine, scenario, run_id, work)]
    return [(work.key, work.seq, await judge_one(engine, scenario, run_id, work, work.repeat))]


@dataclass(frozen=True)
class TargetReplies:
    """Replies of the assistant under test to store (sample id, turn, reply), queued with the results."""

    rows: list[tuple[str, int, dict[str, Any]]]
    stored: asyncio.Event | None = None  # set once the rows are in the store


def persist_batch(
    store: Store,
    run_id: str,
    batch: list[Result],
    review_tenant: str | None = None,
    replies: list[tuple[str, int, dict[str, Any]]] | None = None,
    *,
    retrying: bool = False,
) -> None:
    """Write a batch of results (through the review loop first when ``review_tenant`` is set); the target
    replies they use first, so that a killed run never holds a result whose reply is lost.

    ``retrying``: the target was asked again for target errors (``--retry-target-errors``), so a new reply
    replaces the stored one of its turn and a new result the stored ``target_error`` of its key."""
    if replies:
        store.add_target_replies(run_id, replies, replace=retrying)
    if not batch:
        return
    if review_tenant is not None:
        # The review loop first: it may add a consistency warning and an escalation to a record.
        from bqas.review.process import process_results

        amended = process_results(store, review_tenant, [rec for _, _, rec in batch], source=run_id)
        batch = [(key, seq, rec) for (key, seq, _), rec in zip(batch, amended, strict=True)]
    store.add_results(run_id, batch, replace_target_errors=retrying)


async def execute_run(
    engine: JudgeEngine,
    scenario: Scenario,
    store: Store,
    run_id: str,
    *,
    concurrency: int,
    skip: set[str] | None = None,
    on_progress: ProgressHook | None = None,
    flush_every: int = 200,
    review_tenant: str | None = None,
    done_repeats: Mapping[int, Container[str]] | None = None,
    targets: TargetStage | None = None,
) -> int:
    """Judge all work items not in ``skip``; returns how many were judged in this call.

    With ``targets``, each sample that lacks its answer is first sent to the assistant under test (up to
    the target's concurrency at once, while earlier samples are judged); its replies are stored with the
    results, and a sample the target gave no usable answer for becomes a ``target_error`` result.

    With the scenario's ``repeats`` > 1, each judged work item is judged again as repeats 2..N, except
    those whose key is in ``done_repeats[r]``. Invalid samples and RAGAS metrics are judged once.

    With ``review_tenant``, each batch goes through the review loop (memory, consistency check, review
    queue, categories, alerts) as that tenant before it is stored."""
    if concurrency < 1:  # a queue of maxsize <= 0 is unbounded and no worker would judge anything
        raise ValueError(f"concurrency: expected at least 1, got {concurrency}")
    skip = skip or set()
    done_repeats = done_repeats or {}
    queue: asyncio.Queue[WorkItem | None] = asyncio.Queue(maxsize=concurrency * 2)
    # Bounded: when the store falls behind, workers wait instead of piling results up in memory.
    results: asyncio.Queue[Result | TargetReplies | None] = asyncio.Queue(maxsize=flush_every * 2)
    judged = 0
    retrying = targets is not None and targets.retry is not None

    async def produce() -> None:
        if targets is None:
            for work in pending_items(scenario, skip, done_repeats):
                await queue.put(work)
        else:
            await produce_answered(targets)
        for _ in range(concurrency):
            await queue.put(None)

    async def produce_answered(stage: TargetStage) -> None:
        from bqas.targets.stage import group_by_sample

        # At most the target's concurrency of samples in the stage at once (each one's calls in turn).
        slots = asyncio.Semaphore(stage.concurrency)

        async def keep(rows: list[tuple[str, int, dict[str, Any]]]) -> None:
            stored = asyncio.Event()
            await results.put(TargetReplies(rows, stored))
            await stored.wait()

        async def answer(group: list[WorkItem]) -> None:
            nonlocal judged
            try:
                from bqas.targets.preflight import unjudgeable
                from bqas.targets.stage import Answered

                doomed = unjudgeable(engine, stage.target, group)
                if doomed:  # no call whose answer could not be judged
                    answered = Answered([], [(work, reason, False) for work, reason in doomed], [])
                else:
                    answered = await stage.answer(group, keep)
                if answered.replies:
                    await results.put(TargetReplies(answered.replies))
                for work, reason, is_target_error in answered.failed:
                    language = work.item.data.get("language") or scenario.language
                    if is_target_error:
                        record = target_error_record(run_id, work, reason, language)
                    else:
                        record = invalid_record(run_id, work, reason, language, {})
                    if scenario.repeats > 1:
                        record["repeat"] = work.repeat
                    await results.put((work.key, work.seq, record))
                    judged += 1
                for work in answered.judge:
                    await queue.put(work)
            finally:
                slots.release()

        async with asyncio.TaskGroup() as group_tasks:
            for group in group_by_sample(pending_items(scenario, skip, done_repeats)):
                await slots.acquire()
                group_tasks.create_task(answer(group))

    async def worker() -> None:
        nonlocal judged
        while (work := await queue.get()) is not None:
            for result in await judge_work(engine, scenario, run_id, work):
                await results.put(result)
            judged += 1

    async def writer() -> None:
        done = False
        while not done:
            first = await results.get()
            if first is None:
                break
            batch: list[Result] = []
            replies: list[tuple[str, int, dict[str, Any]]] = []
            acks: list[asyncio.Event] = []
            nxt: Result | TargetReplies | None = first
            while True:
                if isinstance(nxt, TargetReplies):
                    replies += nxt.rows
                    if nxt.stored is not None:
                        acks.append(nxt.stored)
                elif nxt is not None:
                    batch.append(nxt)
                if results.empty() or len(batch) >= flush_every:
                    break
                nxt = results.get_nowait()
                if nxt is None:
                    done = True
                    break
            # Written in a thread so that the event loop keeps judging while the store commits. A cancelled
            # run (Ctrl-C) still waits for the batch being written: it is stored whole or not at all.
            writing = asyncio.ensure_future(
                asyncio.to_thread(
                    partial(persist_batch, store, run_id, batch, review_tenant, replies, retrying=retrying)
                )
            )
            try:
                await asyncio.shield(writing)
            except asyncio.CancelledError:
                await writing
                for ack in acks:
                    ack.set()
                raise
            for ack in acks:
                ack.set()
            if on_progress is not None and batch:
                on_progress(len(batch))

    async def judge_all() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(produce())
            for _ in range(concurrency):
                group.create_task(worker())
        await results.put(None)

    # One task group: when the writer dies, the workers blocked on the bounded results queue are
    # cancelled instead of waiting forever; when a worker dies, the writer is cancelled. Either way the
    # run fails loudly with the first error.
    try:
        # Fewer cyclic-GC passes while judging (bqas.runner.gc_tuning): the same results, less CPU per sample.
        with fewer_collections():
            async with asyncio.TaskGroup() as group:
                group.create_task(writer())
                group.create_task(judge_all())
    except ExceptionGroup as failure:
        first = _first_error(failure)
        raise RunFailed(f"{type(first).__name__}: {first}") from first
    except asyncio.CancelledError:
        # Stopped (Ctrl-C, SIGTERM): what was judged but not yet written is stored, so a resume does not
        # judge it (or ask the assistant) again.
        _store_what_finished(store, run_id, results, review_tenant)
        raise
    return judged


def _store_what_finished(
    store: Store,
    run_id: str,
    results: asyncio.Queue[Result | TargetReplies | None],
    review_tenant: str | None,
) -> None:
    batch: list[Result] = []
    replies: list[tuple[str, int, dict[str, Any]]] = []
    while not results.empty():
        item = results.get_nowait()
        if isinstance(item, TargetReplies):
            replies += item.rows
        elif item is not None:
            batch.append(item)
    if batch or replies:
        persist_batch(store, run_id, batch, review_tenant, replies)


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first leaf exception of a (nested) exception group."""
    first = group.exceptions[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first
