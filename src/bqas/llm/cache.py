"""On-disk LLM response cache (SQLite, safe for several processes).

The key is a hash of the model, the messages and the parameters that shape the answer, so repeating a
judgment makes no call. Where :data:`CACHE_SCOPE` is set (the service sets it to the caller's tenant) the
scope is part of the key: a tenant never gets a cache hit for text that another tenant submitted, which
would tell it that the other tenant sent that text. CLI runs set no scope and share the cache. Only replies
the caller accepted (valid JSON for the judge) are stored, so a broken reply is never replayed.

Writes are batched: :meth:`ResponseCache.add` keeps a reply in memory (where :meth:`~ResponseCache.get`
finds it at once) and :meth:`~ResponseCache.flush` writes all kept replies in one transaction, due after
:data:`FLUSH_EVERY` replies or :data:`FLUSH_AFTER_S` seconds and on :meth:`~ResponseCache.close`. A commit
per reply was most of the cache's cost in a run; a process killed before the flush loses at most those
replies from the cache (they are asked again next time), never a result.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CachedReply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int


#: Replies kept in memory before they are written in one transaction, and the longest they wait.
FLUSH_EVERY = 64
FLUSH_AFTER_S = 1.0
# SQLite's limit on host parameters is 999 in old builds: lookups of many keys go in chunks below it.
_IN_CHUNK = 500
#: How old the in-memory key filter may be before a lookup asks the file again (and refreshes it): the
#: longest another process's fresh reply can go unseen here.
KNOWN_FRESH_S = 1.0


def _prefix(key: str) -> int:
    """The first 64 bits of a hex key: the key filter's entry (about 70 bytes each in a Python set)."""
    return int(key[:16], 16)


# Who the cached replies belong to (None: shared by everyone, as in CLI runs).
CACHE_SCOPE: ContextVar[str | None] = ContextVar("bqas_cache_scope", default=None)


_UNSET: Any = object()


def cache_key(model: str, messages: list[dict[str, str]], params: dict[str, Any], scope: str | None = _UNSET) -> str:
    """A stable key for one request within ``scope`` (default: the current :data:`CACHE_SCOPE`)."""
    parts: dict[str, Any] = {"model": model, "messages": messages, "params": params}
    if scope is _UNSET:
        scope = CACHE_SCOPE.get()
    if scope is not None:  # unscoped keys stay as they were, so existing caches keep their hits
        parts["scope"] = scope
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def redacted_reply(text: str) -> str:
    """The reply as it may be stored: unchanged unless redaction is on (bqas.privacy).

    A JSON reply is masked value by value and written again, so it stays valid JSON for a replay."""
    from bqas.privacy import redact, redact_text, redaction_enabled

    if not redaction_enabled():
        return text
    try:
        parsed = json.loads(text)
    except ValueError:
        return redact_text(text)
    return json.dumps(redact(parsed), ensure_ascii=False)


class ResponseCache:
    """A tiny key-value store of replies in one SQLite file, written in batches."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._pending: dict[str, CachedReply] = {}  # added, not yet written
        self._oldest = 0.0  # when the oldest pending reply was added (monotonic)
        self._flushing = False  # a flush is due or running: add() asks for no second one
        # Which keys the file (or this process's pending writes) may hold, as 64-bit key prefixes: lets a
        # lookup call a miss without SQLite. Loaded and refreshed from the file by refresh_known() (in a
        # worker thread); None until the first load.
        self._known: set[int] | None = None
        self._known_rowid = 0  # the largest rowid read into _known
        self._known_at = 0.0  # when _known was last refreshed (monotonic)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, text TEXT,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
        )
        self._conn.commit()

    def get(self, key: str) -> CachedReply | None:
        """The reply stored (or added) under ``key``, else None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedReply]:
        """The replies of those ``keys`` that are cached (one query per 500 keys)."""
        found: dict[str, CachedReply] = {}
        wanted = list(dict.fromkeys(keys))
        with self._lock:
            for key in wanted:
                if (kept := self._pending.get(key)) is not None:
                    # As a replay from the file would return it (masked when redaction is on).
                    found[key] = replace(kept, text=redacted_reply(kept.text))
            rest = [k for k in wanted if k not in found]
            for start in range(0, len(rest), _IN_CHUNK):
                chunk = rest[start : start + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, text, model, prompt_tokens, completion_tokens FROM replies WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for row in rows:
                    found[row[0]] = CachedReply(row[1], row[2], int(row[3]), int(row[4]))
        return found

    def refresh_known(self) -> None:
        """Read the keys written to the file since the last refresh (by any process) into the key filter.

        Incremental by rowid: ``INSERT OR REPLACE`` gives a replaced row a new rowid, so it is read again."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT rowid, key FROM replies WHERE rowid > ? ORDER BY rowid", (self._known_rowid,)
            ).fetchall()
            known = self._known if self._known is not None else set()
            known.update(_prefix(k) for _, k in rows)
            known.update(_prefix(k) for k in self._pending)
            if rows:
                self._known_rowid = int(rows[-1][0])
            self._known, self._known_at = known, time.monotonic()

    def may_hold(self, key: str) -> bool | None:
        """False when ``key`` is certainly not cached as of the last refresh; True when it may be; None when
        the filter is missing or older than :data:`KNOWN_FRESH_S` (ask the file, and refresh).

        Cheap and without I/O, for the event loop. A reply another process wrote in the last
        :data:`KNOWN_FRESH_S` seconds may be missed (asked again), never a reply of this process."""
        known = self._known
        if known is None or not self.filter_fresh():
            return None
        return _prefix(key) in known

    def filter_fresh(self) -> bool:
        """Whether the key filter is loaded and was refreshed at most :data:`KNOWN_FRESH_S` seconds ago."""
        return self._known is not None and time.monotonic() - self._known_at <= KNOWN_FRESH_S

    def add(self, key: str, reply: CachedReply) -> bool:
        """Keep a reply to be written with the next :meth:`flush`; True when the caller should flush now
        (:data:`FLUSH_EVERY` replies kept, or the oldest kept for :data:`FLUSH_AFTER_S`). Cheap: no I/O."""
        now = time.monotonic()
        with self._lock:
            if not self._pending:
                self._oldest = now
            self._pending[key] = reply
            if self._known is not None:
                self._known.add(_prefix(key))
            due = len(self._pending) >= FLUSH_EVERY or now - self._oldest >= FLUSH_AFTER_S
            if due and not self._flushing:
                self._flushing = True
                return True
        return False

    def flush(self) -> int:
        """Write the kept replies in one transaction; returns how many. With ``BQAS_REDACT_PII`` each text
        is masked first (a replay then sees the mask)."""
        with self._lock:
            batch, self._pending = self._pending, {}
            try:
                if batch:
                    created = time.time()
                    rows = [
                        (key, r.model, redacted_reply(r.text), r.prompt_tokens, r.completion_tokens, created)
                        for key, r in batch.items()
                    ]
                    self._conn.executemany("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)", rows)
                    self._conn.commit()
            except BaseException:
                # Not written: keep them (a later flush or close tries again), newer replies win.
                self._pending = {**batch, **self._pending}
                raise
            finally:
                self._flushing = False
        return len(batch)

    def put(self, key: str, reply: CachedReply) -> None:
        """Store a reply at once (:meth:`add` and :meth:`flush`)."""
        self.add(key, reply)
        self.flush()

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Write what is kept, then close the file."""
        self.flush()
        with self._lock:
            self._conn.close()
