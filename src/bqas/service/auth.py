"""API keys → tenants. Keys live hashed in the store (``bqas keys create``) and, optionally, in a YAML
file (setting ``BQAS_API_KEYS_FILE``)::

    # tenant: key, or a list of keys; "sha256:<hex>" entries hold only the hash of a key
    acme: [bqas_…, "sha256:9f86d08…"]

Lookups are cached in memory for ``ttl`` seconds, so a revoked key may work that long in a running server.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import yaml

from bqas.store.db import Store
from bqas.store.service import hash_key, tenant_for_key


def load_keys_file(path: Path) -> dict[str, str]:
    """key hash → tenant from a YAML file; ValueError naming the file and tenant on a bad entry."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of tenant to keys")
    hashes: dict[str, str] = {}
    for tenant, keys in data.items():
        entries = [keys] if isinstance(keys, str) else keys
        if not isinstance(entries, list) or not all(isinstance(k, str) and k for k in entries):
            raise ValueError(f"{path}: tenant {tenant!r}: expected a key or a list of keys")
        for key in entries:
            digest = key.removeprefix("sha256:").lower() if key.startswith("sha256:") else hash_key(key)
            hashes[digest] = str(tenant)
    return hashes


class Authenticator:
    """Resolves an API key to its tenant (None for an unknown or revoked key)."""

    def __init__(self, store: Store, keys_file: Path | None = None, ttl: float = 30.0):
        self.store = store
        self.file_hashes = load_keys_file(keys_file) if keys_file else {}
        self.ttl = ttl
        self._cache: dict[str, tuple[str | None, float]] = {}
        self._lock = threading.Lock()

    def cached(self, key: str) -> tuple[bool, str | None]:
        """(hit, tenant) from the in-memory cache, without touching the database."""
        entry = self._cache.get(key)
        if entry is not None and entry[1] > time.monotonic():
            return True, entry[0]
        return False, None

    def tenant(self, key: str) -> str | None:
        """The tenant of ``key`` (may query the store: call from a worker thread in async code)."""
        hit, tenant = self.cached(key)
        if hit:
            return tenant
        tenant = self.file_hashes.get(hash_key(key)) or tenant_for_key(self.store, key)
        # Unknown keys are remembered briefly too, so a flood of bad keys does not reach the database.
        ttl = self.ttl if tenant else min(self.ttl, 2.0)
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (tenant, time.monotonic() + ttl)
        return tenant
