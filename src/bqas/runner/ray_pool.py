"""The judge actors of a run on Ray, and the loop that keeps them busy until every batch is judged.

What can go wrong on a cluster, and what happens then:

- An actor's process dies (killed, out of memory): its batches fail with an actor error. They go back to
  the queue for the other actors, a replacement actor is started, and the run goes on.
- A node is lost (its raylet killed, the machine gone): the same, once Ray has noticed (its health
  check, seconds). Ray would place a replacement only where a CPU is free; on a cluster that has none
  left it would wait for ever. A replacement that is not placed within ``placement_timeout`` seconds
  is given up, and the run goes on with the actors it has; each step is said on stderr.
- A batch that fails :data:`MAX_ATTEMPTS` times is split into single items; an item that fails
  :data:`MAX_ATTEMPTS` times on its own is stored as a ``judge_error`` record that names the cause. It
  counts against the run's ``max_judge_errors`` gate (default 0) and ``--resume`` judges it again.
- A node that freezes (its processes stopped, not gone) keeps Ray's view of it alive for a minute or
  more. An actor whose batch takes longer than the batch deadline (``ray.batch_timeout``; by default
  :data:`BATCH_TIMEOUT_FACTOR` × the slowest batch of the run so far, at least
  :data:`BATCH_TIMEOUT_FLOOR_S`) counts as lost at once: its batches go to the other actors (the one it
  was judging counts as a failed try) and a replacement is started.
- No actor left and none can be placed: :class:`ClusterLost`; the caller judges the rest locally.

Results are keyed by (run, sample, judge): a batch judged twice (its actor died after storing it) is
stored once.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bqas.judgment.work import WorkItem
from bqas.runner.execute import Result, judge_error_record, persist_batch
from bqas.runner.scenario import Scenario
from bqas.store.db import Store

MAX_ATTEMPTS = 3  # tries of a batch, then of each of its items alone, before an item is given up
IN_FLIGHT_PER_ACTOR = 2  # one judged, one waiting: no actor idles between batches
POLL_S = 1.0  # how often the loop looks at actors waiting for placement while batches are in flight
BATCH_TIMEOUT_FLOOR_S = 30.0  # the default batch deadline is never shorter than this
BATCH_TIMEOUT_FACTOR = 4.0  # ... and at least this many times the slowest batch judged so far

Notice = Callable[[str], None]


class ClusterLost(RuntimeError):
    """No judge actor is left on the cluster and no replacement could be placed; ``judged``: the work
    items judged on the cluster before that (stored)."""

    def __init__(self, message: str, judged: int = 0):
        super().__init__(message)
        self.judged = judged


@dataclass
class Slot:
    """One judge actor: starting (``ready`` is its first call's ref) or working."""

    handle: Any
    name: str
    ready: Any | None
    since: float
    where: str = "?"
    load: int = 0
    replacement: bool = False
    busy_since: float = 0.0  # when the batch it is judging now (its oldest in flight) became its first


class NotAnswering(TimeoutError):
    """An actor did not finish the batch it was judging within the batch deadline (a frozen node)."""


@dataclass
class Batch:
    items: list[WorkItem]
    alone: bool = False  # split out of a batch that kept failing
    attempts: int = 0
    error: str = ""


@dataclass
class ActorPool:
    """Judge actors made by ``make(name)``; ``ray`` is the ray module (untyped)."""

    ray: Any
    make: Callable[[str], Any]
    placement_timeout: float
    notice: Notice
    prefix: str = "judge"
    batch_timeout: float | None = None  # None: adaptive (BATCH_TIMEOUT_FACTOR × slowest, >= the floor)
    slots: list[Slot] = field(default_factory=list)
    made: int = 0
    lost: int = 0
    slowest: float = 0.0  # seconds of the slowest batch an actor finished in this run

    def deadline(self) -> float:
        """Seconds an actor may take for one batch before it counts as not answering."""
        if self.batch_timeout is not None:
            return self.batch_timeout
        return max(BATCH_TIMEOUT_FLOOR_S, BATCH_TIMEOUT_FACTOR * self.slowest)

    def start(self, count: int) -> None:
        for _ in range(count):
            self._spawn(replacement=False)

    def _spawn(self, *, replacement: bool) -> None:
        name = f"{self.prefix}-{self.made}"
        self.made += 1
        handle = self.make(name)
        self.slots.append(Slot(handle, name, handle.where.remote(), time.monotonic(), replacement=replacement))

    @property
    def working(self) -> list[Slot]:
        return [s for s in self.slots if s.ready is None]

    @property
    def starting(self) -> list[Slot]:
        return [s for s in self.slots if s.ready is not None]

    def wait_started(self) -> None:
        """Wait (at most ``placement_timeout``) until the first actors run; RuntimeError when one of them
        cannot start at all (its engine or store failed: a configuration error, not a lost node)."""
        deadline = time.monotonic() + self.placement_timeout
        while self.starting and time.monotonic() < deadline:
            refs = [s.ready for s in self.starting]
            timeout = max(0.1, min(POLL_S * 5, deadline - time.monotonic()))
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=timeout)
            for ref in ready:
                slot = next(s for s in self.slots if s.ready is ref)
                self.ray.get(ref)  # raises the constructor's error
                self._placed(slot)
        self.expire(force=True)
        if not self.working:
            raise ClusterLost(
                f"no judge actor was placed on the Ray cluster within {self.placement_timeout:g} s "
                "(each needs {'CPU': 1} free on a live node; ray.placement_timeout)"
            )

    def _placed(self, slot: Slot) -> None:
        where = self.ray.get(slot.ready)
        slot.ready = None
        slot.where = f"node {where[1][:12]} ({where[2]})"
        if slot.replacement:
            self.notice(f"replacement judge actor {slot.name} placed on {slot.where}; {len(self.working)} working")

    def on_ready(self, ref: Any) -> bool:
        """Handle a starting actor's first answer; False when ``ref`` is not one."""
        slot = next((s for s in self.starting if s.ready is ref), None)
        if slot is None:
            return False
        try:
            self._placed(slot)
        except Exception as exc:  # it could not start: no further replacement for it
            self.slots.remove(slot)
            self._kill(slot)
            self.notice(f"replacement judge actor {slot.name} did not start: {cause(exc)}")
        return True

    def expire(self, *, force: bool = False) -> None:
        """Give up actors that waited for placement longer than ``placement_timeout``."""
        now = time.monotonic()
        for slot in self.starting:
            if force or now - slot.since >= self.placement_timeout:
                self.slots.remove(slot)
                self._kill(slot)
                self.notice(
                    f"judge actor {slot.name} was not placed within {self.placement_timeout:g} s "
                    f"(Ray needs {{'CPU': 1}} free on a live node; ray.placement_timeout); going on with "
                    f"{len(self.working)} actor(s)"
                )

    def lose(self, slot: Slot, error: BaseException) -> None:
        """``slot``'s actor died or cannot be reached: drop it and start a replacement."""
        if slot not in self.slots:
            return
        self.slots.remove(slot)
        self.lost += 1
        self._kill(slot)
        self._spawn(replacement=True)
        self.notice(
            f"judge actor {slot.name} on {slot.where} was lost ({cause(error)}); its batches go to the other "
            f"actors; waiting up to {self.placement_timeout:g} s for Ray to place a replacement"
        )

    def not_answering(self) -> list[Slot]:
        """Working actors whose current batch has taken longer than the batch deadline."""
        limit, at = self.deadline(), time.monotonic()
        return [s for s in self.working if s.load > 0 and at - s.busy_since > limit]

    def _kill(self, slot: Slot) -> None:
        with contextlib.suppress(Exception):  # already gone with its node
            self.ray.kill(slot.handle, no_restart=True)

    def close(self) -> None:
        for slot in self.starting:
            waited = time.monotonic() - slot.since
            self.notice(
                f"the run needed no more actors: judge actor {slot.name} was not placed (waited {waited:.0f} s)"
            )
        for slot in list(self.slots):
            if slot.ready is None:
                with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                    self.ray.get(slot.handle.close.remote(), timeout=30)
            self._kill(slot)
        self.slots.clear()


def cause(error: BaseException) -> str:
    """The error an actor raised (Ray wraps it), as ``Type: message`` (one line, bounded)."""
    inner = getattr(error, "cause", None) or error
    text = " ".join(str(inner).split())
    return f"{type(inner).__name__}: {text[:300]}"


def actor_lost(error: BaseException) -> bool:
    """Whether ``error`` says the actor itself is gone (its process or node), not that judging raised."""
    from ray.exceptions import ActorUnavailableError, RayActorError

    return isinstance(error, RayActorError | ActorUnavailableError)


def _batches(items: Iterator[WorkItem], size: int) -> Iterator[Batch]:
    chunk: list[WorkItem] = []
    for work in items:
        chunk.append(work)
        if len(chunk) == size:
            yield Batch(chunk)
            chunk = []
    if chunk:
        yield Batch(chunk)


def _given_up(run_id: str, scenario: Scenario, work: WorkItem, reason: str) -> Result:
    language = work.item.data.get("language") or scenario.language
    text = f"judging failed {MAX_ATTEMPTS} times on the Ray cluster: {reason}"
    return (work.key, work.seq, judge_error_record(run_id, work, text[:2000], language))


def drive(
    pool: ActorPool,
    scenario: Scenario,
    store: Store,
    run_id: str,
    pending: Iterator[WorkItem],
    batch_size: int,
    advance: Callable[[int], None] | None,
) -> int:
    """Keep every working actor busy until all batches are judged; returns the work items judged.

    Raises :class:`ClusterLost` (after storing what was judged) when no actor is left; the items not yet
    judged are then still pending in the store."""
    ray = pool.ray
    source = _batches(pending, batch_size)
    queue: deque[Batch] = deque()  # batches to send again (their actor was lost, or they failed)
    in_flight: dict[Any, tuple[Batch, Slot]] = {}  # in submission order (an actor runs its calls in that order)
    judged = 0
    exhausted = False

    def failed(batch: Batch, reason: str) -> None:
        nonlocal judged
        batch.attempts += 1
        batch.error = reason
        if batch.attempts < MAX_ATTEMPTS:
            queue.append(batch)
        elif not batch.alone and len(batch.items) > 1:
            queue.extend(Batch([work], alone=True) for work in batch.items)  # find the item at fault
        else:
            persist_batch(store, run_id, [_given_up(run_id, scenario, batch.items[0], reason)])
            judged += 1
            if advance is not None:
                advance(1)

    def finished(slot: Slot) -> None:
        """``slot``'s oldest batch is done: the next one it holds is the one it judges now."""
        at = time.monotonic()
        pool.slowest = max(pool.slowest, at - slot.busy_since)
        slot.load -= 1
        slot.busy_since = at

    def lost(slot: Slot, exc: BaseException) -> None:
        # The actor is gone (or does not answer), and every batch it held with it. It ran them one at a
        # time in the order they were sent: only the first was being judged and counts as a failed try (a
        # sample that kills or hangs its worker is found that way); the others go back to the queue as
        # they are.
        mine = [r for r, (_, s) in in_flight.items() if s is slot]
        for n, r in enumerate(mine):
            b, _ = in_flight.pop(r)
            if n == 0:
                failed(b, cause(exc))
            else:
                queue.append(b)
        pool.lose(slot, exc)

    while True:
        working = pool.working
        while working and len(in_flight) < IN_FLIGHT_PER_ACTOR * len(working):
            if queue:
                batch = queue.popleft()
            elif not exhausted:
                nxt = next(source, None)
                if nxt is None:
                    exhausted = True
                    continue
                batch = nxt
            else:
                break
            slot = min(working, key=lambda s: s.load)
            in_flight[slot.handle.judge.remote(batch.items)] = (batch, slot)
            if slot.load == 0:
                slot.busy_since = time.monotonic()
            slot.load += 1
        if not in_flight and not queue and exhausted:
            return judged
        if not working and not pool.starting:
            raise ClusterLost(f"no judge actor is left on the Ray cluster ({pool.lost} lost)", judged)
        refs = list(in_flight) + [s.ready for s in pool.starting]
        ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S)
        pool.expire()
        for stuck in pool.not_answering():
            lost(stuck, NotAnswering(f"no answer to its batch within {pool.deadline():g} s (ray.batch_timeout)"))
        if not ready:
            continue
        ref = ready[0]
        if pool.on_ready(ref):
            continue
        if ref not in in_flight:  # a batch of an actor given up as not answering, answering late
            continue
        batch, slot = in_flight[ref]
        try:
            items, records = ray.get(ref)
        except Exception as exc:
            if not actor_lost(exc):  # judging raised: this batch failed
                del in_flight[ref]
                finished(slot)
                failed(batch, cause(exc))
                continue
            lost(slot, exc)
            continue
        del in_flight[ref]
        finished(slot)
        judged += items
        if advance is not None:
            advance(records)
