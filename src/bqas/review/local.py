"""The review page for what ``bqas run`` escalated (tenant ``@local``), served by ``bqas review``.

CLI runs file their review items under the reserved tenant :data:`bqas.tenants.LOCAL_TENANT`, for
which no API key can be issued, so no service tenant can reach them. ``bqas review`` serves the same
review page on 127.0.0.1 with a key that exists only in its own process, and opens sessions through a
start link that carries a secret token (like a notebook server's): it logs in every browser that opens it
while the command runs (a second tab, another browser, the link opened again), so the printed key is only
needed where the link cannot go. Both die with the process.
"""

from __future__ import annotations

import secrets

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response

from bqas.auth.keys import Authenticator
from bqas.review.sessions import SessionManager, cookie_name
from bqas.review.settings import ReviewSettings, get_review_settings
from bqas.review.web import review_router
from bqas.store.db import Store
from bqas.tenants import LOCAL_TENANT
from bqas.viewer.web import viewer_router


class LocalReview:
    """A review app (with the results viewer) for the local tenant: ``app``, the process-only ``key`` and the
    ``start_path`` (valid while this object lives), which leads to ``landing`` (default: the queue)."""

    def __init__(self, store: Store, settings: ReviewSettings | None = None, *, landing: str | None = None):
        settings = settings or get_review_settings()
        self.store = store
        self.key = "bqas_local_" + secrets.token_urlsafe(32)
        self._start_token = secrets.token_urlsafe(32)
        auth = Authenticator(store)
        auth.add_key(self.key, LOCAL_TENANT)
        base = settings.review_path.rstrip("/")
        sessions = SessionManager(store, auth, hours=settings.review_session_hours)
        self.start_path = f"/start/{self._start_token}"
        app = FastAPI(title="BQAS local review", docs_url=None, redoc_url=None, openapi_url=None)
        app.include_router(review_router(store, auth, settings=settings, cookie_per_port=True))
        # The results viewer (bqas view) under the same login: BQAS_REVIEW_PATH/runs.
        app.include_router(viewer_router(store, auth, settings=settings, cookie_per_port=True))
        # Where the start link leads (``bqas view`` lands on its runs; a path inside this app only).
        target = landing if landing is not None and landing.startswith("/") else f"{base}/queue"

        @app.get("/")
        def root() -> Response:
            # Where the start link leads: a logged-in browser stays, the page sends others to the login.
            return RedirectResponse(target, status_code=303)

        @app.get("/start/{token}")
        def start(token: str, request: Request) -> Response:
            if not secrets.compare_digest(self._start_token.encode(), token.encode()):
                return Response("Unknown start link: open the one `bqas review` / `bqas view` printed.", 403)
            result = sessions.login(self.key)
            assert result is not None  # the key was added above
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(
                cookie_name(request, per_port=True),
                result[0],
                max_age=int(settings.review_session_hours * 3600),
                path=base or "/",
                httponly=True,
                samesite="strict",
                secure=settings.review_cookie_secure,
            )
            return response

        self.app = app
