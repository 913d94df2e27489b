"""A verified key past its freshness does not wait on the store when the cache can answer.

Before, every request whose key's freshness had run out asked the store: while the store was known to be
down, one such request at a time was let through to try it, so a steady stream of score calls during a
frozen database had one in every few wait out the connect timeout; and in the seconds before the store
was known to be down, every request with that key waited on it, until the waiting requests filled the
replica's scoring slots and the next ones were refused 503 "overloaded"
(benchmarks/service/drill_score_outage.py, a freeze that starts just before the key's freshness ends).
Now the store's probe finds it back, and one request at a time per key asks the store while the others
get the cached tenant; the key is looked up afresh once the store answers."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from bqas.auth import keys as keys_module
from bqas.auth.keys import Authenticator
from bqas.store.bounds import StoreDown


class _Store:
    """What the authenticator needs of a store: whether it is known to be down."""

    def __init__(self) -> None:
        self.down = False


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> tuple[_Store, list[str], dict[str, str | None]]:
    """(store, every key looked up in the store, the store's key table)."""
    store = _Store()
    seen: list[str] = []
    table: dict[str, str | None] = {}

    def tenant_for_key(_store: Any, key: str) -> str | None:
        seen.append(key)
        if store.down:
            raise StoreDown("the database is unavailable (OperationalError: frozen)")
        return table.get(key)

    monkeypatch.setattr(keys_module, "tenant_for_key", tenant_for_key)
    return store, seen, table


def test_a_verified_key_is_served_stale_without_asking_a_store_known_to_be_down(
    lookups: tuple[_Store, list[str], dict[str, str | None]],
) -> None:
    store, seen, table = lookups
    table["bqas_verified"] = "acme"
    auth = Authenticator(store, ttl=0.0)  # type: ignore[arg-type]  # every lookup after the first is stale
    assert auth.check("bqas_verified") == ("acme", None)
    assert seen == ["bqas_verified"]

    store.down = True
    for _ in range(3):
        tenant, age = auth.check("bqas_verified")
        assert tenant == "acme" and age is not None and age >= 0
    assert seen == ["bqas_verified"]  # the store was not asked again while it was known to be down

    # A key never verified cannot be vouched for: the store's error goes to the caller (503).
    with pytest.raises(StoreDown):
        auth.check("bqas_unknown")

    # Back, and revoked meanwhile: looked up afresh and refused.
    store.down = False
    table["bqas_verified"] = None
    assert auth.check("bqas_verified") == (None, None)
    assert seen[-1] == "bqas_verified"


def test_past_the_stale_limit_the_key_is_not_served_from_the_cache(
    lookups: tuple[_Store, list[str], dict[str, str | None]],
) -> None:
    store, _seen, table = lookups
    table["bqas_old"] = "acme"
    auth = Authenticator(store, ttl=0.0, stale_limit=0.0)  # type: ignore[arg-type]
    assert auth.check("bqas_old") == ("acme", None)
    store.down = True
    with pytest.raises(StoreDown):
        auth.check("bqas_old")


def test_while_one_request_asks_the_store_about_a_key_the_others_get_the_cached_tenant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _Store()  # not (yet) known to be down: the store has just frozen
    seen: list[str] = []
    first_asks, release = threading.Event(), threading.Event()

    def tenant_for_key(_store: Any, key: str) -> str | None:
        seen.append(key)
        if len(seen) == 2:  # the lookup after the first one waits, as on a frozen store
            first_asks.set()
            assert release.wait(60), "the test never released the lookup"
        return "acme"

    monkeypatch.setattr(keys_module, "tenant_for_key", tenant_for_key)
    auth = Authenticator(store, ttl=0.0)  # type: ignore[arg-type]
    assert auth.check("bqas_verified") == ("acme", None)
    waiting: list[tuple[str | None, float | None]] = []
    asker = threading.Thread(target=lambda: waiting.append(auth.check("bqas_verified")))
    asker.start()
    try:
        assert first_asks.wait(60)
        answers = [auth.check("bqas_verified") for _ in range(3)]
    finally:
        release.set()
        asker.join(60)
    assert seen == ["bqas_verified", "bqas_verified"]  # the others did not ask the store too
    assert all(tenant == "acme" and age is not None for tenant, age in answers), answers
    assert waiting == [("acme", None)]  # the one that asked got the store's fresh answer
    # Nobody is asking now: the next lookup asks the store again.
    assert auth.check("bqas_verified") == ("acme", None)
    assert len(seen) == 3
