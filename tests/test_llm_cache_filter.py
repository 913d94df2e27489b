"""The LLM cache's key filter: certain misses are answered on the loop, hits and other processes' replies
are still found (the lookup's thread hop was most of what the cache cost a run)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bqas.llm import cache as cache_mod
from bqas.llm import cache_io
from bqas.llm.cache import CachedReply, ResponseCache, cache_key

SHAPE = {"temperature": 0.0, "max_tokens": None, "schema": None}


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Frage {i} {{braces}} \u0000 ünïcödé"}]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the lookups that go to a worker thread (lookup_batch calls, with their batch sizes)."""
    calls: list[int] = []
    real = cache_io.lookup_batch

    def counted(cache: ResponseCache, lookups: list[cache_io.Lookup]) -> list[tuple[str, CachedReply | None]]:
        calls.append(len(lookups))
        return real(cache, lookups)

    monkeypatch.setattr(cache_io, "lookup_batch", counted)
    return calls


async def test_misses_are_answered_without_a_thread_once_the_filter_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    cache = ResponseCache(tmp_path / "c.sqlite")
    io = cache_io.CacheIO(cache, asyncio.get_running_loop())
    _, hit0 = await io.lookup("m", _messages(0), SHAPE, use_hit=True)  # loads the filter in a thread
    assert hit0 is None and calls == [1] and cache.filter_fresh()
    results = await asyncio.gather(*(io.lookup("m", _messages(i), SHAPE, use_hit=True) for i in range(1, 50)))
    assert all(hit is None for _, hit in results)
    assert calls == [1]  # the 49 misses never left the loop
    assert [k for k, _ in results] == [cache_key("m", _messages(i), SHAPE, None) for i in range(1, 50)]
    cache.close()


async def test_a_reply_of_this_process_is_a_hit_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    cache = ResponseCache(tmp_path / "c.sqlite")
    io = cache_io.CacheIO(cache, asyncio.get_running_loop())
    key, _ = await io.lookup("m", _messages(1), SHAPE, use_hit=True)
    await io.store(key, CachedReply('{"a": 1}', "m", 3, 4))
    again, hit = await io.lookup("m", _messages(1), SHAPE, use_hit=True)
    assert again == key and hit is not None and hit.text == '{"a": 1}'
    assert len(calls) == 2  # the filter said "may hold": the hit was read in a thread
    cache.close()


async def test_another_process_reply_is_found_once_the_filter_is_refreshed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_mod, "KNOWN_FRESH_S", 60.0)  # no refresh by the clock on a slow machine
    path = tmp_path / "c.sqlite"
    ours = ResponseCache(path)
    io = cache_io.CacheIO(ours, asyncio.get_running_loop())
    await io.lookup("m", _messages(0), SHAPE, use_hit=True)  # filter loaded (empty file)
    theirs = ResponseCache(path)  # another process's connection to the same file
    key = cache_key("m", _messages(7), SHAPE, None)
    theirs.put(key, CachedReply("theirs", "m", 1, 1))
    # Within KNOWN_FRESH_S the filter may not know it yet: a miss, asked again (documented), never wrong data.
    _, early = await io.lookup("m", _messages(7), SHAPE, use_hit=True)
    assert early is None
    monkeypatch.setattr(cache_mod, "KNOWN_FRESH_S", 0.0)  # the filter is now stale: the file is asked
    _, hit = await io.lookup("m", _messages(7), SHAPE, use_hit=True)
    assert hit is not None and hit.text == "theirs"
    theirs.put(key, CachedReply("replaced", "m", 1, 1))  # INSERT OR REPLACE: a new rowid, read again
    _, replaced = await io.lookup("m", _messages(7), SHAPE, use_hit=True)
    assert replaced is not None and replaced.text == "replaced"
    ours.close()
    theirs.close()


async def test_use_hit_false_returns_the_key_and_no_reply(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    key = cache_key("m", _messages(3), SHAPE, None)
    cache.put(key, CachedReply("cached", "m", 1, 1))
    io = cache_io.CacheIO(cache, asyncio.get_running_loop())
    for _ in range(2):  # first through the thread (filter not loaded), then on the loop
        got, hit = await io.lookup("m", _messages(3), SHAPE, use_hit=False)
        assert got == key and hit is None
    _, hit = await io.lookup("m", _messages(3), SHAPE, use_hit=True)
    assert hit is not None and hit.text == "cached"
    cache.close()


def test_filter_prefix_collisions_only_cost_a_lookup(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    present = "ab" * 32
    cache.put(present, CachedReply("x", "m", 1, 1))
    cache.refresh_known()
    same_prefix = present[:16] + "0" * 48  # shares the 64-bit prefix: "may hold", then the file says no
    assert cache.may_hold(present) is True and cache.may_hold(same_prefix) is True
    assert cache.get(same_prefix) is None
    assert cache.may_hold("cd" * 32) is False
    cache.close()
