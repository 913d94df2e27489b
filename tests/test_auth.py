"""Tenancy and keys: reserved tenant names, key-file strength, literal revoke prefixes, fingerprints and
the back-off for failed keys (API headers and the review login), over real HTTP where a client sees it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bqas.auth.keys import Authenticator, fingerprint, load_keys_file
from bqas.auth.throttle import FailureThrottle
from bqas.cli.main import app as cli
from bqas.store.db import open_store
from bqas.store.service import create_api_key, list_api_keys, revoke_api_keys, tenant_for_key
from bqas.tenants import LOCAL_TENANT, check_tenant_name
from test_review_page import Site, login
from test_service_api import RAG, _auth, _start


def test_revoke_prefix_is_literal_and_needs_eight_characters(bqas_home: Path) -> None:
    store = open_store()
    keys = [create_api_key(store, "acme"), create_api_key(store, "beta")]
    # '%' and '_' are LIKE wildcards: unescaped, 'bqas_%%%' matched (and revoked) every key.
    assert revoke_api_keys(store, "bqas_%%%") == 0
    assert revoke_api_keys(store, "bqas____") == 0
    with pytest.raises(ValueError, match="at least 8 characters"):
        revoke_api_keys(store, "bqas_")
    assert all(tenant_for_key(store, k) for k in keys)
    result = CliRunner().invoke(cli, ["keys", "revoke", "bqas_%%%"])
    assert result.exit_code == 2 and "no active key" in result.output
    assert all(tenant_for_key(store, k) for k in keys)
    assert revoke_api_keys(store, keys[0][:12]) == 1
    assert tenant_for_key(store, keys[0]) is None and tenant_for_key(store, keys[1]) == "beta"


def test_reserved_and_malformed_tenant_names_get_no_key(bqas_home: Path) -> None:
    store = open_store()
    for name in (LOCAL_TENANT, "@anything", "a\nb", "x\u202ey", ""):
        with pytest.raises(ValueError, match="tenant"):
            create_api_key(store, name)
    result = CliRunner().invoke(cli, ["keys", "create", "@local"])
    assert result.exit_code == 2 and "reserved" in result.output
    assert check_tenant_name(" local ") == "local"  # plain names stay usable


def test_keys_file_refuses_weak_keys_and_reserved_tenants_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "keys.yaml"
    strong = "k7Hq2-xW9pLm4Zr8Tn3Vb6Yc"
    path.write_text(f"acme: [{strong}]\nbeta:\n  - x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"keys\.yaml:3: tenant 'beta': key too weak"):
        load_keys_file(path)
    path.write_text(f"acme: {strong}\n'@local': [{strong}x]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"keys\.yaml:2: tenant: names starting with '@' are reserved"):
        load_keys_file(path)
    path.write_text("acme: ['sha256:abc']\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"keys\.yaml:1: .*64 hex digits"):
        load_keys_file(path)
    path.write_text(f"acme: [{strong}, 'sha256:{'a' * 64}']\n", encoding="utf-8")
    assert set(load_keys_file(path).values()) == {"acme"}


def test_fingerprint_is_no_part_of_the_key_and_keys_list_shows_it(bqas_home: Path) -> None:
    store = open_store()
    key = create_api_key(store, "acme")
    fp = fingerprint(key)
    assert fp.startswith("key:") and len(fp) == 12 and key[5:13] not in fp
    assert list_api_keys(store)[0]["fingerprint"] == fp
    assert fp in CliRunner().invoke(cli, ["keys", "list"]).output


def test_throttle_backs_off_exponentially_and_forgets() -> None:
    now = [0.0]
    throttle = FailureThrottle(free=2, base=1.0, cap=8.0, clock=lambda: now[0])
    assert [throttle.failed("a"), throttle.failed("a")] == [None, None]
    assert throttle.wait("a") is None
    assert throttle.failed("a") == 1.0 and throttle.wait("a") == pytest.approx(1.0)
    assert throttle.wait("b") is None  # per client
    assert throttle.failed("a") == 2.0 and throttle.failed("a") == 4.0 and throttle.failed("a") == 8.0
    assert throttle.failed("a") == 8.0  # capped
    now[0] += 8.5
    assert throttle.wait("a") is None
    now[0] += 9.0  # longer than the cap since the last failure: forgotten
    assert throttle.failed("a") is None


def test_api_answers_429_after_repeated_wrong_keys(tmp_path: Path) -> None:
    for svc in _start(tmp_path, auth_failures_free=3, auth_backoff_seconds=60):
        codes = [
            httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(f"bqas_wrong-{i}")).status_code for i in range(5)
        ]
        assert codes == [401, 401, 401, 401, 429]
        blocked = httpx.post(f"{svc.url}/api/score", json=RAG, headers=_auth(svc.key_a))
        assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) >= 1


def test_review_login_backs_off_after_failed_logins(tmp_path: Path, bqas_home: Path) -> None:
    from fastapi import FastAPI

    from bqas.review.settings import ReviewSettings
    from bqas.review.web import review_router
    from bqas.service.testing import ServiceServer

    store = open_store()
    key = create_api_key(store, "acme")
    auth = Authenticator(store, throttle=FailureThrottle(free=2, base=60.0))
    app = FastAPI()
    app.include_router(review_router(store, auth, settings=ReviewSettings()))
    with ServiceServer(app) as server, httpx.Client(base_url=server.base_url) as client:
        site = Site(store, server.base_url, key, key)
        assert [login(client, f"bqas_guess-{i}").status_code for i in range(3)] == [401, 401, 401]
        blocked = login(client, site.acme_key)
        assert blocked.status_code == 429 and "Too many failed logins" in blocked.text
        assert int(blocked.headers["Retry-After"]) >= 1
