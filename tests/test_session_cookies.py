"""`bqas view` and `bqas review` open in one browser do not log each other out: browsers share cookies
between the ports of a host, so each one-process page names its session cookie by its port. Two real
servers on 127.0.0.1 and one cookie jar, as a browser has."""

from __future__ import annotations

from pathlib import Path

import httpx

from bqas.review.local import LocalReview
from bqas.review.settings import ReviewSettings
from bqas.service.testing import ServiceServer
from bqas.store.db import open_store


def test_view_and_review_sessions_survive_each_other(tmp_path: Path, bqas_home: Path) -> None:
    store = open_store()
    review = LocalReview(store, ReviewSettings())
    view = LocalReview(store, ReviewSettings(), landing="/review/runs")
    # One cookie jar for both ports, as a browser has.
    with (
        ServiceServer(review.app) as review_server,
        ServiceServer(view.app) as view_server,
        httpx.Client(follow_redirects=True) as browser,
    ):
        first = browser.get(f"{review_server.base_url}{review.start_path}")
        assert first.status_code == 200 and first.url.path == "/review/queue"
        second = browser.get(f"{view_server.base_url}{view.start_path}")
        assert second.status_code == 200 and second.url.path == "/review/runs"
        # Both still logged in: neither page sends the browser back to its login.
        for base, page in ((review_server.base_url, "/review/queue"), (view_server.base_url, "/review/runs")):
            again = browser.get(f"{base}{page}")
            assert again.status_code == 200 and again.url.path == page, (base, again.url)
        names = {cookie.name for cookie in browser.cookies.jar}
        assert {f"bqas_review_{review_server.port}", f"bqas_review_{view_server.port}"} <= names
