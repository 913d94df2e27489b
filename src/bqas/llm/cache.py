"""On-disk LLM response cache (SQLite, safe for several processes).

The key is a hash of the model, the messages and the parameters that shape the answer, so repeating a
judgment makes no call. Where :data:`CACHE_SCOPE` is set (the service sets it to the caller's tenant) the
scope is part of the key: a tenant never gets a cache hit for text that another tenant submitted, which
would tell it that the other tenant sent that text. CLI runs set no scope and share the cache. Only replies the caller accepted (valid JSON for the judge) are stored, so a
broken reply is never replayed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CachedReply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int


# Who the cached replies belong to (None: shared by everyone, as in CLI runs).
CACHE_SCOPE: ContextVar[str | None] = ContextVar("bqas_cache_scope", default=None)


def cache_key(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """A stable key for one request (within the current :data:`CACHE_SCOPE`)."""
    parts: dict[str, Any] = {"model": model, "messages": messages, "params": params}
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
    """A tiny key-value store of replies in one SQLite file."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, text TEXT,"
            " prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
        )
        self._conn.commit()

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text, model, prompt_tokens, completion_tokens FROM replies WHERE key = ?", (key,)
            ).fetchone()
        return CachedReply(row[0], row[1], int(row[2]), int(row[3])) if row else None

    def put(self, key: str, reply: CachedReply) -> None:
        """Store a reply; with ``BQAS_REDACT_PII`` its text is masked first (a replay then sees the mask)."""
        text = redacted_reply(reply.text)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)",
                (key, reply.model, text, reply.prompt_tokens, reply.completion_tokens, time.time()),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
