"""The review page: a FastAPI router with server-rendered HTML (Jinja2, autoescape) and one small JS file.

Mount it into the service app with ``app.include_router(review_router(store, auth))``. Pages:
``/review/login``, ``/review/queue`` (filters: judge, verdict, language, status, from, to, run),
``/review/items/{id}`` (inputs, scores with provenance, reasoning, why escalated, the review form),
``/review/static/review.js`` (keyboard shortcuts). Forms are URL-encoded and parsed here (no
multipart dependency); every POST checks the session's CSRF token.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from bqas.auth.keys import Authenticator
from bqas.review.alerts import recent_alerts
from bqas.review.categories import new_categories
from bqas.review.labels import HUMAN_VERDICTS, label_fields, spec_for
from bqas.review.queue import (
    PAGE_SIZE,
    ItemFilter,
    ReviewError,
    adjacent_ids,
    dismiss_item,
    facets,
    get_item,
    group_members,
    list_items,
    status_counts,
    submit_review,
)
from bqas.review.records import dimension_values, iso
from bqas.review.sessions import COOKIE, PRE_COOKIE, SessionManager, SessionView, cookie_name, same_token
from bqas.review.settings import ReviewSettings, get_review_settings
from bqas.review.tables import ITEM_STATUSES
from bqas.store.db import Store
from bqas.textsafe import form_value, html_value

if TYPE_CHECKING:
    import jinja2

    from bqas.judgment.spec import JudgeRegistry

MAX_FORM_BYTES = 64 * 1024
MAX_ID = 2**63 - 1  # ids and pages beyond a signed 64-bit integer cannot exist in any database
MAX_PAGE = MAX_ID // PAGE_SIZE
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
FILTER_KEYS: tuple[str, ...] = ("judge", "verdict", "language", "status", "from", "to", "run")


@cache
def _templates() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bqas.review", "templates"),
        autoescape=True,
        # Every value: characters HTML cannot carry shown as escapes, bidi controls shown, RTL isolated.
        finalize=html_value,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["form_value"] = form_value
    env.filters["iso"] = lambda epoch: (iso(epoch) or "").replace("T", " ").replace("+00:00", " UTC")
    env.filters["pretty"] = _pretty
    env.filters["num"] = _num
    return env


def _pretty(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(f"• {v}" for v in value) if value else "(empty list)"
    return json.dumps(value, ensure_ascii=False, indent=2)


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def _day(text: str | None, field: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise ValueError(f"{field}: expected a date YYYY-MM-DD, got {text!r}") from None


def parse_filter(params: Mapping[str, str]) -> tuple[ItemFilter, dict[str, str]]:
    """The queue filter from query parameters (``status=any`` shows every status); ValueError on bad dates."""
    values = {k: (params.get(k) or "").strip() for k in FILTER_KEYS}
    status = values["status"] or "open"
    if status not in (*ITEM_STATUSES, "any"):
        raise ValueError(f"status: expected one of {', '.join((*ITEM_STATUSES, 'any'))}")
    values["status"] = status
    since = _day(values["from"], "from")
    until = _day(values["to"], "to")
    flt = ItemFilter(
        judge=values["judge"] or None,
        verdict=values["verdict"] or None,
        language=values["language"] or None,
        status=None if status == "any" else status,
        since=since,
        until=until + 86400 if until is not None else None,
        source=values["run"] or None,
    )
    return flt, values


def parse_page(raw: str | None) -> int:
    """The queue page number (1 when absent); ValueError naming the field when it is no page."""
    try:
        page = int(raw or 1)
    except ValueError:
        raise ValueError(f"page: expected a whole number, got {raw!r}") from None
    if not 1 <= page <= MAX_PAGE:
        raise ValueError(f"page: expected 1 to {MAX_PAGE}")
    return page


def _client(request: Request) -> str:
    """Who is knocking, for the failed-login back-off (the peer address)."""
    return request.client.host if request.client is not None else "unknown"


def _query(values: Mapping[str, str]) -> str:
    return urlencode({k: v for k, v in values.items() if v and not (k == "status" and v == "open")})


def _secure(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    return response


async def _form(request: Request) -> dict[str, str]:
    """A URL-encoded form body (first value of each field); larger than 64 KiB is refused."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise ValueError("form too large")
    parsed = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=200)
    return {k: v[0] for k, v in parsed.items()}


def review_router(
    store: Store,
    auth: Authenticator,
    *,
    settings: ReviewSettings | None = None,
    registry: JudgeRegistry | None = None,
    prefix: str | None = None,
    cookie_per_port: bool = False,
) -> APIRouter:
    """The review page router (mounted at ``prefix``, default ``BQAS_REVIEW_PATH`` = ``/review``);
    ``cookie_per_port``: session cookies named per port (bqas.review.sessions.cookie_name)."""
    settings = settings or get_review_settings()
    base = (prefix or settings.review_path).rstrip("/")
    sessions = SessionManager(store, auth, hours=settings.review_session_hours)
    router = APIRouter(prefix=base, include_in_schema=False)

    def reg() -> JudgeRegistry | None:
        if registry is not None:
            return registry
        from bqas.judgment.spec import default_registry

        return default_registry()

    def render(name: str, status: int = 200, **context: Any) -> Response:
        html = _templates().get_template(name).render(base=base, **context)
        return _secure(HTMLResponse(html, status_code=status))

    def cookie(request: Request, name: str = COOKIE) -> str:
        return cookie_name(request, name, per_port=cookie_per_port)

    def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(
            cookie(request, name),
            value,
            max_age=max_age,
            path=base or "/",
            httponly=True,
            samesite="strict",
            secure=settings.review_cookie_secure,
        )

    def current(request: Request) -> SessionView | None:
        return sessions.resolve(request.cookies.get(cookie(request)))

    def to_login() -> Response:
        return _secure(RedirectResponse(f"{base}/login", status_code=303))

    def not_found(session: SessionView) -> Response:
        return render("error.html", 404, session=session, title="Not found", message="No such review item.")

    def login_page(request: Request, message: str | None = None, status: int = 200) -> Response:
        token = request.cookies.get(cookie(request, PRE_COOKIE)) or secrets.token_urlsafe(24)
        response = render("login.html", status, session=None, login_token=token, message=message)
        set_cookie(request, response, PRE_COOKIE, token, 3600)
        return response

    @router.get("/static/review.js")
    def script() -> Response:
        body = resources.files("bqas.review").joinpath("static/review.js").read_bytes()
        response = Response(body, media_type="text/javascript; charset=utf-8")
        response.headers["Cache-Control"] = "max-age=300"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @router.get("")
    @router.get("/")
    def home(request: Request) -> Response:
        return _secure(RedirectResponse(f"{base}/queue" if current(request) else f"{base}/login", status_code=303))

    @router.get("/login")
    def login_form(request: Request) -> Response:
        if current(request):
            return _secure(RedirectResponse(f"{base}/queue", status_code=303))
        return login_page(request)

    @router.post("/login")
    async def login(request: Request) -> Response:
        client = _client(request)
        wait = auth.throttle.wait(client)
        if wait is not None:  # too many wrong keys from this client: the key is not even looked at
            response = login_page(request, f"Too many failed logins; try again in {math.ceil(wait)} s.", 429)
            response.headers["Retry-After"] = str(math.ceil(wait))
            return response
        try:
            form = await _form(request)
        except ValueError:
            return login_page(request, "The form was too large.", 413)
        if not same_token(
            request.cookies.get(cookie(request, PRE_COOKIE)) or "",
            form.get("login_token"),
        ):
            return login_page(request, "The login form expired; please try again.", 403)
        result = await run_in_threadpool(sessions.login, form.get("api_key") or "")
        if result is None:
            auth.throttle.failed(client)
            return login_page(request, "Unknown or revoked API key.", 401)
        token, _view = result
        response = _secure(RedirectResponse(f"{base}/queue", status_code=303))
        set_cookie(request, response, COOKIE, token, int(settings.review_session_hours * 3600))
        response.delete_cookie(cookie(request, PRE_COOKIE), path=base or "/")
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        session = await run_in_threadpool(current, request)
        try:
            form = await _form(request)
        except ValueError:
            return _secure(Response("form too large", status_code=413))
        if session is None or not same_token(session.csrf, form.get("csrf")):
            return _secure(Response("CSRF token missing or wrong", status_code=403))
        await run_in_threadpool(sessions.logout, request.cookies.get(cookie(request)))
        response = _secure(RedirectResponse(f"{base}/login", status_code=303))
        response.delete_cookie(cookie(request), path=base or "/")
        return response

    @router.get("/queue")
    def queue(request: Request) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        try:
            flt, values = parse_filter(request.query_params)
            page = parse_page(request.query_params.get("page"))
        except ValueError as exc:
            return render("error.html", 400, session=session, title="Bad filter", message=str(exc))
        items, total = list_items(store, session.tenant, flt, offset=(page - 1) * PAGE_SIZE)
        query = _query(values)
        return render(
            "queue.html",
            session=session,
            items=items,
            groups=group_members(store, session.tenant, items),
            total=total,
            page=page,
            pages=max(1, -(-total // PAGE_SIZE)),
            filters=values,
            query=query,
            facets=facets(store, session.tenant),
            statuses=(*ITEM_STATUSES, "any"),
            counts=status_counts(store, session.tenant),
            categories=new_categories(store, session.tenant, limit=20),
            alerts=recent_alerts(store, session.tenant, limit=10),
            saved=request.query_params.get("saved"),
        )

    @router.get("/items/{item_id}")
    def item_page(request: Request, item_id: int) -> Response:
        session = current(request)
        if session is None:
            return to_login()
        item = get_item(store, session.tenant, item_id) if 1 <= item_id <= MAX_ID else None
        if item is None:
            return not_found(session)
        try:
            flt, values = parse_filter(request.query_params)
        except ValueError as exc:
            return render("error.html", 400, session=session, title="Bad filter", message=str(exc))
        return item_view(session, item_id, flt, values, saved=request.query_params.get("saved"))

    def item_view(
        session: SessionView,
        item_id: int,
        flt: ItemFilter,
        values: dict[str, str],
        *,
        saved: str | None = None,
        errors: list[str] | None = None,
        submitted: Mapping[str, str] | None = None,
        status: int = 200,
    ) -> Response:
        item = get_item(store, session.tenant, item_id)
        if item is None:
            return not_found(session)
        spec = spec_for(reg(), item.judge)
        fields = label_fields(spec, item.record)
        dims = item.record.get("dimensions") if isinstance(item.record.get("dimensions"), dict) else {}
        prev_id, next_id = adjacent_ids(store, session.tenant, item, flt)
        # The form starts from the human's labels when reviewed, else empty: a judge value enters a gold
        # label only when the reviewer types it or ticks "confirm" (the judge's value is shown beside).
        start = dict(item.human_values or {}) if item.status == "reviewed" else {}
        judge_values = dimension_values(item.record)
        confirm = {f.name: f.confirm_text(judge_values.get(f.name)) for f in fields}
        form_values = {f.name: "" if start.get(f.name) is None else _num(start.get(f.name)) for f in fields}
        verdict = item.human_verdict if item.status == "reviewed" else None
        comment = item.comment or ""
        confirmed: set[str] = set()
        if submitted is not None:
            form_values = {f.name: submitted.get(f"dim_{f.name}", "") for f in fields}
            confirmed = {f.name for f in fields if submitted.get(f"confirm_{f.name}")}
            verdict = submitted.get("verdict") or None
            comment = submitted.get("comment", "")
        return render(
            "item.html",
            status,
            session=session,
            item=item,
            group=group_members(store, session.tenant, [item])[item.id],
            spec=spec,
            dims=dims or {},
            fields=fields,
            form_values=form_values,
            judge_values=judge_values,
            confirm=confirm,
            confirmed=confirmed,
            verdict=verdict,
            verdicts=HUMAN_VERDICTS,
            comment=comment,
            prev_id=prev_id,
            next_id=next_id,
            query=_query(values),
            errors=errors or [],
            saved=saved,
            warning=item.record.get("consistency_warning"),
        )

    @router.post("/items/{item_id}")
    async def save(request: Request, item_id: int) -> Response:
        session = await run_in_threadpool(current, request)
        if session is None:
            return _secure(Response("not logged in", status_code=401))
        try:
            form = await _form(request)
        except ValueError:
            return _secure(Response("form too large", status_code=413))
        if not same_token(session.csrf, form.get("csrf")):
            return _secure(Response("CSRF token missing or wrong", status_code=403))
        if not 1 <= item_id <= MAX_ID:
            return not_found(session)
        back = parse_qs(form.get("back") or "")
        try:
            flt, values = parse_filter({k: v[0] for k, v in back.items()})
        except ValueError:
            flt, values = parse_filter({})
        return await run_in_threadpool(_save, session, item_id, form, flt, values)

    def _save(
        session: SessionView, item_id: int, form: dict[str, str], flt: ItemFilter, values: dict[str, str]
    ) -> Response:
        item = get_item(store, session.tenant, item_id)
        if item is None:
            return not_found(session)
        if form.get("action") == "dismiss":
            dismiss_item(store, session.tenant, item_id, session.key_prefix)
        else:
            raw = {k.removeprefix("dim_"): v for k, v in form.items() if k.startswith("dim_")}
            try:
                submit_review(
                    store,
                    session.tenant,
                    item_id,
                    verdict=form.get("verdict"),
                    raw_values=raw,
                    comment=form.get("comment"),
                    reviewer=session.key_prefix,
                    registry=reg(),
                    confirmed={k.removeprefix("confirm_") for k, v in form.items() if k.startswith("confirm_") and v},
                )
            except ReviewError as exc:
                return item_view(session, item_id, flt, values, errors=exc.errors, submitted=form, status=400)
        # After the decision: the item's group siblings are settled now and no longer "next".
        _prev, next_id = adjacent_ids(store, session.tenant, item, flt)
        query = _query(values)
        sep = "&" if query else ""
        if next_id is not None:
            url = f"{base}/items/{next_id}?{query}{sep}saved={item_id}"
        else:
            url = f"{base}/queue?{query}{sep}saved={item_id}"
        return _secure(RedirectResponse(url, status_code=303))

    return router
