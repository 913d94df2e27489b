"""Error answers that cannot fail on what the client sent.

FastAPI's own 422 answer echoes the offending input, and its JSON encoder cannot write ``NaN``,
``Infinity`` or a lone surrogate: a request with such a value in a field that fails validation used to
answer 500. Here the echoed input is made JSON-safe first (:func:`bqas.untrusted.json_safe`). A body
nested so deeply that Python's JSON parser gives up answers 422 too, instead of a generic 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from bqas.untrusted import MAX_DEPTH, json_safe


def _safe_error(error: dict[str, Any]) -> dict[str, Any]:
    out = {k: json_safe(v) for k, v in error.items() if k not in ("input", "ctx", "url")}
    if "input" in error:
        out["input"] = json_safe(error["input"], depth=3)
    if isinstance(error.get("ctx"), dict):
        out["ctx"] = {
            str(k): json_safe(v if isinstance(v, str | int | float) else str(v)) for k, v in error["ctx"].items()
        }
    return out


def install_error_handlers(app: FastAPI) -> None:
    """422 answers that always render, and 422 (not 400) for a body too deeply nested to parse."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> Response:
        return JSONResponse(status_code=422, content={"detail": [_safe_error(dict(e)) for e in exc.errors()]})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            detail = [{"loc": ["body"], "msg": f"body nested deeper than {MAX_DEPTH} levels", "type": "value_error"}]
            return JSONResponse(status_code=422, content={"detail": detail})
        return await http_exception_handler(request, exc)
