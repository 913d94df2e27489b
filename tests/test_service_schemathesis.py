"""Schemathesis against the app's own OpenAPI schema (in-process ASGI calls): no input gives a 5xx."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key

_TMP = Path(tempfile.mkdtemp(prefix="bqas-schemathesis-"))
_STORE = open_store(f"sqlite:///{_TMP / 'fuzz.sqlite'}")
_KEY = create_api_key(_STORE, "fuzz")
APP = create_app(
    settings=Settings(home=_TMP / "home", llm_cache=False),
    service=ServiceSettings(rate_limit=0, service_backend="offline"),
    store=_STORE,
    run_worker=False,
    public_url="http://testserver",
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    response = case.call(headers={"Authorization": f"Bearer {_KEY}"})
    assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:500]}"
