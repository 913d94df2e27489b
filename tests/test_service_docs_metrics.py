"""/docs and /redoc load their assets from this server (no CDN); /metrics labels every route and has no
``_created`` series; ``bqas serve`` does not default to port 8000."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from test_service_api import Service, _start


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    yield from _start(tmp_path)


def test_docs_pages_load_every_asset_from_this_server(svc: Service) -> None:
    for page in ("/docs", "/redoc"):
        html = httpx.get(f"{svc.url}{page}").text
        assets = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: *'([^']+)'", html)
        assert assets, page
        for asset in assets:
            assert asset.startswith("/"), f"{page} loads {asset} from elsewhere"
            r = httpx.get(f"{svc.url}{asset}")
            assert r.status_code == 200 and len(r.content) > 0, asset
        assert "cdn." not in html and "fonts.googleapis" not in html
    bundle = httpx.get(f"{svc.url}/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and len(bundle.content) > 100_000  # the real Swagger UI


def test_metrics_label_openapi_and_docs_and_have_no_created_series(svc: Service) -> None:
    httpx.get(f"{svc.url}/openapi.json")
    httpx.get(f"{svc.url}/docs")
    httpx.get(f"{svc.url}/no/such/path")
    text = httpx.get(f"{svc.url}/metrics").text
    assert 'bqas_http_requests_total{method="GET",route="/openapi.json",status="200"} 1.0' in text
    assert 'bqas_http_requests_total{method="GET",route="/docs",status="200"} 1.0' in text
    assert 'bqas_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text
    assert "_created" not in text


def test_serve_default_port_is_not_8000() -> None:
    from bqas.cli.serve import DEFAULT_PORT, serve

    default = inspect.signature(serve).parameters["port"].default
    assert default == DEFAULT_PORT and DEFAULT_PORT != 8000
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"127.0.0.1:{DEFAULT_PORT}" in readme
