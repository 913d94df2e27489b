"""The sync endpoint's review feed: calls that arrive close together are reviewed in one batch (one
transaction and one round of fixed queries instead of one per call), and closing drains what is queued."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bqas.service import review_feed
from bqas.service.review_feed import ReviewFeed
from bqas.store.db import open_store


def _record(i: int) -> dict[str, Any]:
    return {"response_id": f"r{i}", "judge": "voice", "status": "scored", "verdict": "production_ready"}


async def _feed_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linger: float, gap: float) -> list[int]:
    batches: list[int] = []

    def spy(store: Any, tenant: str, records: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
        assert tenant == "t" and len(kw["samples"]) == len(records)
        batches.append(len(records))
        return records

    monkeypatch.setattr(review_feed, "process_results", spy)
    feed = ReviewFeed(open_store(f"sqlite:///{tmp_path / 's.sqlite'}"), linger=linger)
    feed.start()
    for i in range(6):
        feed.put("t", [_record(i)], {"user_input": f"u{i}", "response": "ok"})
        await asyncio.sleep(gap)
    await feed.close()
    return batches


async def test_calls_within_the_linger_are_reviewed_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await _feed_calls(tmp_path, monkeypatch, linger=2.0, gap=0.01) == [6]


async def test_without_a_linger_each_call_that_finds_the_feed_idle_is_its_own_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = await _feed_calls(tmp_path, monkeypatch, linger=0.0, gap=0.2)
    assert sum(batches) == 6 and len(batches) >= 3  # mostly [1] * 6; a loaded machine may pair two


async def test_close_reviews_what_is_queued_without_waiting_for_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lingers: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        if delay == 0.3:
            lingers.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(review_feed.asyncio, "sleep", sleep)
    assert await _feed_calls(tmp_path, monkeypatch, linger=0.3, gap=0.0) == [6]
    assert lingers == [0.3]  # one linger for the batch, not one per call
