"""The review page over real HTTP (uvicorn on 127.0.0.1): login, cookie and CSRF, tenant isolation,
escaping, filters and saving a review."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from bqas.auth.keys import Authenticator, fingerprint
from bqas.judgment.spec import default_registry
from bqas.review import ReviewSettings, enqueue_escalations, process_results
from bqas.review.queue import ItemFilter, get_item, list_items
from bqas.review.sessions import SessionManager
from bqas.review.tables import ReviewSession
from bqas.review.web import review_router
from bqas.service.testing import ServiceServer
from bqas.store.db import Store, open_store
from bqas.store.service import create_api_key, revoke_api_keys
from test_review_support import voice_record


@dataclass
class Site:
    store: Store
    url: str
    acme_key: str
    beta_key: str


def build_site(store: Store) -> tuple[FastAPI, str, str]:
    """An app with the review router, two tenants with keys and a few escalated items."""
    acme_key = create_api_key(store, "acme")
    beta_key = create_api_key(store, "beta")
    process_results(  # also flags their error categories (listed on the queue page)
        store,
        "acme",
        [
            voice_record("a1", composite=80.0, reasons=["borderline composite 80 in 75-85"]),
            voice_record(
                "a2",
                composite=40.0,
                verdict="failed",
                safety="fail",
                safety_note="email 'x@y.de'",
                reasons=["gate safety failed"],
            ),
            voice_record(
                "a3",
                composite=None,
                verdict="unscored",
                status="unscored",
                unscored_reason="LLM unavailable: timeout",
                reasons=["unscored"],
                language="en",
            ),
        ],
        settings=ReviewSettings(),
        registry=default_registry(),
    )
    enqueue_escalations(store, "beta", [voice_record("beta-only-sample", reasons=["borderline composite 79 in 75-85"])])
    app = FastAPI()
    app.include_router(
        review_router(store, Authenticator(store), settings=ReviewSettings(), registry=default_registry())
    )
    return app, acme_key, beta_key


@pytest.fixture
def site(bqas_home: Path) -> Iterator[Site]:
    store = open_store()
    app, acme, beta = build_site(store)
    with ServiceServer(app) as server:
        yield Site(store, server.base_url, acme, beta)


def login(client: httpx.Client, key: str) -> httpx.Response:
    page = client.get("/review/login")
    token = re.search(r'name="login_token" value="([^"]+)"', page.text)
    assert token is not None
    return client.post("/review/login", data={"api_key": key, "login_token": token.group(1)})


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match is not None
    return match.group(1)


def test_login_cookie_and_session_are_safe(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        assert client.get("/review/queue").headers["location"] == "/review/login"
        # The login form needs its double-submit token (no login CSRF).
        assert client.post("/review/login", data={"api_key": site.acme_key}).status_code == 403
        bad = login(client, "bqas_not-a-key")
        assert bad.status_code == 401 and "Unknown or revoked API key" in bad.text
        ok = login(client, site.acme_key)
        assert ok.status_code == 303 and ok.headers["location"] == "/review/queue"
        cookie = next(c for c in ok.headers.get_list("set-cookie") if c.startswith("bqas_review="))
        assert (
            "HttpOnly" in cookie
            and "SameSite=strict" in cookie.replace("Strict", "strict")
            and "Path=/review" in cookie
        )
        value = client.cookies.get("bqas_review")
        assert value and site.acme_key not in cookie
        with site.store.session() as s:
            rows = s.query(ReviewSession).all()
        assert len(rows) == 1 and rows[0].token_hash == hashlib.sha256(value.encode()).hexdigest()
        assert rows[0].tenant == "acme"
        queue = client.get("/review/queue")
        assert queue.status_code == 200
        assert "default-src 'none'" in queue.headers["content-security-policy"]
        assert queue.headers["cache-control"] == "no-store"
        js = client.get("/review/static/review.js")
        assert (
            js.status_code == 200 and "keydown" in js.text and js.headers["content-type"].startswith("text/javascript")
        )
        # Logging out needs the CSRF token and ends the session.
        assert client.post("/review/logout", data={}).status_code == 403
        assert client.post("/review/logout", data={"csrf": csrf_of(queue.text)}).status_code == 303
        assert client.get("/review/queue").status_code == 303


def test_tenants_see_only_their_own_items(site: Site) -> None:
    beta_item = list_items(site.store, "beta", ItemFilter())[0][0].id
    acme_items = {i.response_id: i.id for i in list_items(site.store, "acme", ItemFilter())[0]}
    with httpx.Client(base_url=site.url) as client:
        login(client, site.acme_key)
        queue = client.get("/review/queue").text
        assert all(f'id="item-{i}"' in queue for i in acme_items.values())
        assert f'id="item-{beta_item}"' not in queue and "beta-only-sample" not in queue
        assert "safety:email" in queue and "unscored:llm_unavailable" in queue  # new error categories
        other = client.get(f"/review/items/{beta_item}")
        assert other.status_code == 404 and "No such review item" in other.text
        csrf = csrf_of(queue)
        posted = client.post(f"/review/items/{beta_item}", data={"csrf": csrf, "verdict": "failed"})
        assert posted.status_code == 404
        assert get_item(site.store, "beta", beta_item).status == "open"  # type: ignore[union-attr]
        assert client.get("/review/items/999999").status_code == 404


def test_item_page_escapes_and_saves_a_review(site: Site) -> None:
    item_id = next(i.id for i in list_items(site.store, "acme", ItemFilter())[0] if i.response_id == "a2")
    with httpx.Client(base_url=site.url) as client:
        login(client, site.acme_key)
        page = client.get(f"/review/items/{item_id}")
        assert page.status_code == 200
        html = page.text
        assert "&lt;b&gt;kein&lt;/b&gt;" in html and "<b>kein</b>" not in html  # reasoning is escaped
        assert "gate safety failed" in html and "safety_rules" in html and "email &#39;x@y.de&#39;" in html
        assert 'name="dim_faithfulness"' in html and 'min="1"' in html and 'max="5"' in html
        # Not pre-filled with the judge's value: it is offered to confirm (works without JavaScript too).
        assert '<option value="" selected>— no label —</option>' in html
        assert 'name="confirm_safety"' in html and "confirm judge's fail" in html
        form = {
            "verdict": "failed",
            "dim_faithfulness": "2",
            "confirm_safety": "1",
            "comment": "Leaks an e-mail",
            "action": "save",
        }
        assert client.post(f"/review/items/{item_id}", data=form).status_code == 403  # no CSRF token
        assert client.post(f"/review/items/{item_id}", data={**form, "csrf": "forged"}).status_code == 403
        bad = client.post(f"/review/items/{item_id}", data={**form, "dim_faithfulness": "9", "csrf": csrf_of(html)})
        assert bad.status_code == 400 and "faithfulness: 9 is outside 1-5" in bad.text
        saved = client.post(f"/review/items/{item_id}", data={**form, "csrf": csrf_of(html), "back": "judge=voice"})
        assert saved.status_code == 303 and "saved=" in saved.headers["location"]
    item = get_item(site.store, "acme", item_id)
    assert item is not None and item.status == "reviewed"
    assert item.human_verdict == "failed" and item.human_values == {"faithfulness": 2, "safety": "fail"}
    assert item.comment == "Leaks an e-mail" and item.reviewer == fingerprint(site.acme_key)
    assert site.acme_key[:8] not in str(item.reviewer)  # never a piece of the key itself


def _rows(html: str) -> set[str]:
    """Response ids in the queue table (not in the side panels)."""
    table = html[html.index('<table id="queue">') : html.index("</table>")]
    return set(re.findall(r'<div class="small muted">([^<]+)</div>', table))


def test_queue_filters(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        login(client, site.acme_key)
        assert _rows(client.get("/review/queue").text) == {"a1", "a2", "a3"}
        assert _rows(client.get("/review/queue", params={"verdict": "failed"}).text) == {"a2"}
        assert _rows(client.get("/review/queue", params={"language": "en"}).text) == {"a3"}
        assert _rows(client.get("/review/queue", params={"judge": "intent"}).text) == set()
        future = client.get("/review/queue", params={"from": "2999-01-01"}).text
        assert _rows(future) == set() and "Nothing in the queue" in future
        span = {"from": "2000-01-01", "to": "2999-12-31", "status": "any"}
        assert _rows(client.get("/review/queue", params=span).text) == {"a1", "a2", "a3"}
        assert _rows(client.get("/review/queue", params={"status": "reviewed"}).text) == set()
        bad = client.get("/review/queue", params={"from": "yesterday"})
        assert bad.status_code == 400 and "from: expected a date YYYY-MM-DD" in bad.text


def test_sessions_end_when_the_key_is_revoked(bqas_home: Path) -> None:
    store = open_store()
    key = create_api_key(store, "acme")
    sessions = SessionManager(store, Authenticator(store, ttl=0.0), key_ttl=0.0)
    made = sessions.login(key)
    assert made is not None and sessions.login("bqas_wrong") is None
    token, view = made
    assert view.tenant == "acme" and sessions.resolve(token) is not None
    assert sessions.resolve(token + "x") is None
    revoke_api_keys(store, key[:12])
    assert sessions.resolve(token) is None
