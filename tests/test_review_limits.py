"""Review pages under oversized input: ids and pages beyond 64 bits, huge logout forms (4xx, never 500)."""

from __future__ import annotations

import httpx

from bqas.auth.keys import fingerprint
from test_review_page import Site, csrf_of, login, site  # noqa: F401 - the fixture

HUGE = str(2**64 + 5)


def test_ids_and_pages_beyond_64_bits_are_4xx(site: Site) -> None:  # noqa: F811
    with httpx.Client(base_url=site.url) as client:
        login(client, site.acme_key)
        queue = client.get("/review/queue")
        assert client.get(f"/review/items/{HUGE}").status_code == 404
        assert client.get(f"/review/items/-{HUGE}").status_code == 404
        posted = client.post(f"/review/items/{HUGE}", data={"csrf": csrf_of(queue.text), "verdict": "failed"})
        assert posted.status_code == 404
        for page in (HUGE, "0", "-3", "x"):
            bad = client.get("/review/queue", params={"page": page})
            assert bad.status_code == 400 and "page:" in bad.text
        assert fingerprint(site.acme_key) in queue.text and site.acme_key[:12] not in queue.text


def test_oversized_logout_forms_are_413_without_login(site: Site) -> None:  # noqa: F811
    with httpx.Client(base_url=site.url) as client:
        many = "&".join(f"f{i}=1" for i in range(300))
        headers = {"content-type": "application/x-www-form-urlencoded"}
        assert client.post("/review/logout", content=many, headers=headers).status_code == 413
        assert client.post("/review/logout", content="a=" + "x" * 70_000, headers=headers).status_code == 413
        assert client.post("/review/login", content=many, headers=headers).status_code == 413
