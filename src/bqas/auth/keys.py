"""API keys → tenants. Keys live hashed in the store (``bqas keys create``) and, optionally, in a YAML
file (setting ``BQAS_API_KEYS_FILE``)::

    # tenant: key, or a list of keys; "sha256:<hex>" entries hold only the hash of a key
    acme: [bqas_…, "sha256:9f86d08…"]

A key in the file must be at least :data:`MIN_FILE_KEY_CHARS` characters with at least
:data:`MIN_DISTINCT_CHARS` different characters (``bqas keys create`` makes 48-character random keys);
tenant names follow :func:`bqas.tenants.check_tenant_name` (no reserved ``@`` names).

Lookups are cached in memory for ``ttl`` seconds, so a revoked key may work that long in a running server.
Once a key's freshness has run out, one request at a time asks the store about it; the others get the
cached tenant meanwhile, served stale. While the store is unavailable, a key this process verified within
the last ``stale_limit`` seconds keeps its tenant (:meth:`Authenticator.check` says it was served stale),
without waiting on a store already known to be down; once the store answers again (its probe finds it
back within a second or so) the key is looked up afresh, so a key revoked during the outage stops working
at its first request after that.
Pages and exports never show a key: they show its :func:`fingerprint`.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from bqas.auth.throttle import FailureThrottle
from bqas.store.db import Store
from bqas.store.service import hash_key, tenant_for_key
from bqas.tenants import check_tenant_name

MIN_FILE_KEY_CHARS = 24
MIN_DISTINCT_CHARS = 10
_HEX64 = re.compile(r"[0-9a-f]{64}")


def fingerprint(key: str) -> str:
    """A short, non-reversible name of a key for pages and exports (the first 8 hex of its SHA-256).

    ``bqas keys list`` shows the same fingerprint, so a reviewer can be matched to a key."""
    return "key:" + hash_key(key)[:8]


def _check_key(path: Path, line: int, tenant: str, key: str) -> str:
    """The hash of one file entry; ValueError naming file, line and tenant when it is too weak or malformed."""
    where = f"{path}:{line}: tenant {tenant!r}"
    if key.startswith("sha256:"):
        digest = key.removeprefix("sha256:").lower()
        if not _HEX64.fullmatch(digest):
            raise ValueError(f"{where}: a 'sha256:' entry needs 64 hex digits")
        return digest
    if len(key) < MIN_FILE_KEY_CHARS or len(set(key)) < MIN_DISTINCT_CHARS:
        raise ValueError(
            f"{where}: key too weak: use at least {MIN_FILE_KEY_CHARS} characters with at least "
            f"{MIN_DISTINCT_CHARS} different ones (`bqas keys create` makes strong keys)"
        )
    return hash_key(key)


def load_keys_file(path: Path) -> dict[str, str]:
    """key hash → tenant from a YAML file; ValueError naming the file, line and tenant on a bad entry."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise ValueError(f"{path}:{root.start_mark.line + 1}: expected a mapping of tenant to keys")
    hashes: dict[str, str] = {}
    for key_node, value_node in root.value:
        line = key_node.start_mark.line + 1
        tenant_raw: Any = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(tenant_raw, str):
            raise ValueError(f"{path}:{line}: expected a tenant name")
        try:
            tenant = check_tenant_name(tenant_raw)
        except ValueError as exc:
            raise ValueError(f"{path}:{line}: {exc}") from None
        entries = [value_node] if isinstance(value_node, yaml.ScalarNode) else None
        if isinstance(value_node, yaml.SequenceNode):
            entries = list(value_node.value)
        if not entries or not all(isinstance(n, yaml.ScalarNode) and n.value for n in entries):
            raise ValueError(f"{path}:{line}: tenant {tenant!r}: expected a key or a list of keys")
        for node in entries:
            hashes[_check_key(path, node.start_mark.line + 1, tenant, str(node.value))] = tenant
    return hashes


#: The longest a verified key is accepted past its freshness while the store is unavailable (seconds).
STALE_LIMIT_S = 900.0


class Authenticator:
    """Resolves an API key to its tenant (None for an unknown or revoked key)."""

    def __init__(
        self,
        store: Store,
        keys_file: Path | None = None,
        ttl: float = 30.0,
        throttle: FailureThrottle | None = None,
        stale_limit: float = STALE_LIMIT_S,
    ):
        self.store = store
        # One back-off per process for every way a key is presented (API headers, review login).
        self.throttle = throttle or FailureThrottle()
        self.file_hashes = load_keys_file(keys_file) if keys_file else {}
        self.ttl = ttl
        self.stale_limit = stale_limit
        # key -> (tenant, fresh until, verified at) in time.monotonic() seconds
        self._cache: dict[str, tuple[str | None, float, float]] = {}
        self._lock = threading.Lock()
        self._looking_up: set[str] = set()  # keys whose store lookup is in progress

    def add_key(self, key: str, tenant: str) -> None:
        """Accept ``key`` for ``tenant`` in this process only (e.g. the key of a running ``bqas review``)."""
        with self._lock:
            self.file_hashes[hash_key(key)] = tenant
            self._cache.pop(key, None)

    def cached(self, key: str) -> tuple[bool, str | None]:
        """(hit, tenant) from the in-memory cache, without touching the database."""
        entry = self._cache.get(key)
        if entry is not None and entry[1] > time.monotonic():
            return True, entry[0]
        return False, None

    def _stale(self, key: str) -> tuple[str, float] | None:
        """(tenant, seconds since verified) of a key verified within ``stale_limit``, else None."""
        entry = self._cache.get(key)
        if entry is None or entry[0] is None:
            return None
        age = time.monotonic() - entry[2]
        return (entry[0], age) if age <= self.stale_limit else None

    def _done_looking_up(self, key: str, mine: bool) -> None:
        if mine:
            with self._lock:
                self._looking_up.discard(key)

    def tenant(self, key: str) -> str | None:
        """The tenant of ``key`` (may query the store: call from a worker thread in async code)."""
        return self.check(key)[0]

    def check(self, key: str) -> tuple[str | None, float | None]:
        """(tenant, None) for a key looked up now or fresh in the cache; (tenant, seconds since it was
        verified) for a verified key served from the cache past its freshness (at most ``stale_limit``
        seconds old) because the store is unavailable, or is being asked about this key by another
        request right now. Raises the store's error for a key it cannot vouch for."""
        hit, tenant = self.cached(key)
        if hit:
            return tenant, None
        from_file = self.file_hashes.get(hash_key(key))
        mine = False
        if from_file is None:
            with self._lock:
                mine = key not in self._looking_up
                self._looking_up.add(key)
            # A verified key does not wait on the store when the store is known to be down (its own probe
            # finds it back) or while another request is already asking it about this key (a store that
            # froze but is not yet known to be down keeps that one request for up to its limits; the
            # others would pile up behind it and fill the replica's scoring slots).
            if self.store.down or not mine:
                stale = self._stale(key)
                if stale is not None:
                    self._done_looking_up(key, mine)
                    return stale
        try:
            tenant = from_file or tenant_for_key(self.store, key)
        except Exception as exc:
            from bqas.store.db import database_unavailable

            stale = self._stale(key) if database_unavailable(exc) else None
            if stale is None:
                raise
            return stale
        finally:
            self._done_looking_up(key, mine)
        # Unknown keys are remembered briefly too, so a flood of bad keys does not reach the database.
        ttl = self.ttl if tenant else min(self.ttl, 2.0)
        at = time.monotonic()
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (tenant, at + ttl, at)
        return tenant, None
