"""Error answers that cannot fail on what the client sent.

FastAPI's own 422 answer echoes the offending input, and its JSON encoder cannot write ``NaN``,
``Infinity`` or a lone surrogate: a request with such a value in a field that fails validation used to
answer 500. Here the echoed input is made JSON-safe first (:func:`bqas.untrusted.json_safe`). A body
nested so deeply that Python's JSON parser gives up answers 422 too, instead of a generic 400.

A database that cannot be reached or used (down, restarting, frozen, a dropped connection, every pooled
connection busy, a statement timeout, a full disk) answers 503 with
``Retry-After`` and a JSON body on every endpoint that needs it, never a bare 500: the request was not
wrong, and the same request later will work.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from bqas.logs import get_logger
from bqas.store.db import database_unavailable
from bqas.untrusted import MAX_DEPTH, json_safe

log = get_logger("bqas.service")
DATABASE_UNAVAILABLE = "database_unavailable"


def _safe_error(error: dict[str, Any]) -> dict[str, Any]:
    out = {k: json_safe(v) for k, v in error.items() if k not in ("input", "ctx", "url")}
    if "input" in error:
        out["input"] = json_safe(error["input"], depth=3)
    if isinstance(error.get("ctx"), dict):
        out["ctx"] = {
            str(k): json_safe(v if isinstance(v, str | int | float) else str(v)) for k, v in error["ctx"].items()
        }
    return out


def database_unavailable_response(exc: BaseException, retry_after: int) -> JSONResponse:
    """503 naming the database error's kind (not its text: it may hold the server's address)."""
    return JSONResponse(
        status_code=503,
        content={
            "detail": f"the database is unavailable ({type(exc).__name__}); retry in {retry_after} s",
            "error": DATABASE_UNAVAILABLE,
        },
        headers={"Retry-After": str(retry_after)},
    )


def install_error_handlers(app: FastAPI, *, db_retry_after: int = 5) -> None:
    """422 answers that always render, 422 (not 400) for a body too deeply nested to parse, and 503 with
    ``Retry-After`` while the database cannot be reached."""

    # Every SQLAlchemy error, not only the driver's: a pool that stayed full and a store known to be down
    # (bqas.store.bounds) are the database being unavailable too.
    @app.exception_handler(SQLAlchemyError)
    async def database_error(request: Request, exc: SQLAlchemyError) -> Response:
        if database_unavailable(exc):
            log.warning("%s %s: database unavailable: %s", request.method, request.url.path, type(exc).__name__)
            return database_unavailable_response(exc, db_retry_after)
        log.error("%s %s: database error", request.method, request.url.path, exc_info=exc)
        return JSONResponse(status_code=500, content={"detail": "internal error (database)"})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> Response:
        return JSONResponse(status_code=422, content={"detail": [_safe_error(dict(e)) for e in exc.errors()]})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            detail = [{"loc": ["body"], "msg": f"body nested deeper than {MAX_DEPTH} levels", "type": "value_error"}]
            return JSONResponse(status_code=422, content={"detail": detail})
        return await http_exception_handler(request, exc)
