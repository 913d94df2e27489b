"""The per-server in-flight limit (bqas.llm.servers.InFlight): a free slot is taken without the condition's
lock (less of the runner's CPU per request), and the limit holds under contention, shrinking and
cancellation."""

from __future__ import annotations

import asyncio

import pytest

from bqas.llm.servers import InFlight


async def test_a_free_slot_is_taken_without_the_lock() -> None:
    limit = InFlight(4)
    acquired: list[int] = []
    real = limit._cond.acquire  # the condition's lock (an instance attribute: asyncio binds it there)

    async def counting() -> bool:
        acquired.append(1)
        return await real()

    limit._cond.acquire = counting  # type: ignore[method-assign]
    for _ in range(10):
        async with limit:
            assert limit.active == 1
    assert acquired == [] and limit.active == 0
    limit.limit = 0  # no free slot: the request waits on the condition (and the spy sees its lock)
    waiter = asyncio.create_task(limit.__aenter__())
    await asyncio.sleep(0)
    assert acquired == [1] and not waiter.done()
    limit.limit = 1
    async with limit._cond:
        limit._cond.notify_all()
    await asyncio.wait_for(waiter, timeout=5)
    assert limit.active == 1


async def _hold(limit: InFlight, peak: list[int], seconds: float) -> None:
    async with limit:
        peak.append(limit.active)
        await asyncio.sleep(seconds)


async def test_never_more_than_the_limit_and_every_waiter_gets_its_turn() -> None:
    limit = InFlight(3)
    peak: list[int] = []
    await asyncio.wait_for(asyncio.gather(*(_hold(limit, peak, 0.005) for _ in range(40))), timeout=10)
    assert len(peak) == 40 and max(peak) == 3
    assert limit.active == 0 and limit._waiting == 0


async def test_a_halved_limit_holds_for_the_waiters() -> None:
    limit = InFlight(4)
    peak: list[int] = []
    first = [asyncio.create_task(_hold(limit, peak, 0.05)) for _ in range(4)]
    await asyncio.sleep(0)
    limit.timed_out()  # 4 -> 2 while four are in flight
    later: list[int] = []
    rest = [asyncio.create_task(_hold(limit, later, 0.01)) for _ in range(6)]
    await asyncio.wait_for(asyncio.gather(*first, *rest), timeout=10)
    assert max(peak) == 4 and len(later) == 6 and max(later) <= 2


async def test_a_cancelled_waiter_leaves_no_count_behind() -> None:
    limit = InFlight(1)
    holder = asyncio.Event()

    async def hold() -> None:
        async with limit:
            await holder.wait()

    owner = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0)
    assert limit._waiting == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limit._waiting == 0
    holder.set()
    await owner
    assert limit.active == 0
    async with limit:  # the slot is free again, taken at once
        assert limit.active == 1
