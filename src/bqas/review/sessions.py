"""Review page login: an API key is exchanged once for a session cookie.

The cookie holds a random 256-bit session id; the store keeps only its SHA-256 (a stolen database
does not yield usable sessions), the tenant, the SHA-256 of the API key used, a per-session CSRF token
and the expiry. Every request re-checks that the key is still valid (not revoked), cached for 30 s.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import delete, select

from bqas.auth.keys import Authenticator, fingerprint
from bqas.review.tables import ReviewSession
from bqas.store.db import Store

COOKIE = "bqas_review"
PRE_COOKIE = "bqas_review_login"  # double-submit token of the login form (against login CSRF)


def cookie_name(request: HasURL, name: str = COOKIE, *, per_port: bool = False) -> str:
    """The cookie's name. Browsers share cookies between the ports of a host, so the one-process pages of
    `bqas view` and `bqas review` (each on its own port of 127.0.0.1, each with sessions of its own start
    link) would overwrite each other's session and log each other out under one name: with ``per_port``
    the name carries the port the browser asked. The service (`bqas serve`) keeps ``name``: its replicas
    share sessions behind one address."""
    port = request.url.port if per_port else None
    return f"{name}_{port}" if port else name


class _URL(Protocol):
    @property
    def port(self) -> int | None: ...


class HasURL(Protocol):
    """A request (Starlette's): only its URL's port is read."""

    @property
    def url(self) -> _URL: ...


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class SessionView:
    """A valid session: whose, and its CSRF token."""

    tenant: str
    csrf: str
    key_prefix: str  # the key's fingerprint (bqas.auth.keys.fingerprint), shown as the reviewer
    expires_at: float


class SessionManager:
    """Creates, resolves and ends review sessions on top of the service's :class:`Authenticator`."""

    def __init__(self, store: Store, auth: Authenticator, *, hours: float = 8.0, key_ttl: float = 30.0):
        self.store = store
        self.auth = auth
        self.lifetime = hours * 3600.0
        self.key_ttl = key_ttl
        self._valid: dict[str, tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def login(self, api_key: str) -> tuple[str, SessionView] | None:
        """(cookie value, session) for a valid key, None otherwise. Expired sessions are purged here."""
        api_key = api_key.strip()
        if not api_key or len(api_key) > 512:
            return None
        tenant = self.auth.tenant(api_key)
        if tenant is None:
            return None
        token = secrets.token_urlsafe(32)
        now = time.time()
        row = ReviewSession(
            token_hash=_hash(token),
            tenant=tenant,
            key_hash=_hash(api_key),
            key_prefix=fingerprint(api_key),  # never a part of the key itself
            csrf=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + self.lifetime,
        )
        with self.store.session.begin() as s:
            s.execute(delete(ReviewSession).where(ReviewSession.expires_at < now))
            s.add(row)
        return token, SessionView(row.tenant, row.csrf, row.key_prefix, row.expires_at)

    def resolve(self, token: str | None) -> SessionView | None:
        """The session of a cookie value, None when unknown, expired or its key was revoked."""
        if not token or len(token) > 200:
            return None
        with self.store.session() as s:
            row = s.scalars(select(ReviewSession).where(ReviewSession.token_hash == _hash(token))).first()
            if row is None or row.expires_at < time.time():
                return None
            view = SessionView(row.tenant, row.csrf, row.key_prefix, row.expires_at)
            key_hash = row.key_hash
        return view if self._key_valid(key_hash, view.tenant) else None

    def _key_valid(self, key_hash: str, tenant: str) -> bool:
        hit = self._valid.get(key_hash)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        from bqas.store.service import ApiKey

        valid = self.auth.file_hashes.get(key_hash) == tenant
        if not valid:
            with self.store.session() as s:
                owner = s.scalar(select(ApiKey.tenant).where(ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None)))
            valid = owner == tenant
        with self._lock:
            if len(self._valid) > 10_000:
                self._valid.clear()
            self._valid[key_hash] = (valid, time.monotonic() + self.key_ttl)
        return valid

    def logout(self, token: str | None) -> None:
        """End the session of a cookie value (nothing when unknown)."""
        if token:
            with self.store.session.begin() as s:
                s.execute(delete(ReviewSession).where(ReviewSession.token_hash == _hash(token)))


def same_token(expected: str, given: str | None) -> bool:
    """Constant-time comparison of CSRF tokens."""
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode())
