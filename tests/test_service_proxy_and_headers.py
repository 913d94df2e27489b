"""The server settings of ``bqas serve`` (bqas.service.server): X-Forwarded-For is believed only from
addresses in BQAS_FORWARDED_ALLOW_IPS (default none), so wrong keys sent from loopback with ever new
X-Forwarded-For values still reach the failed-key back-off; a request head over BQAS_MAX_HEADER_BYTES
is answered 431 before any of it reaches the application."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.server import LimitedHttpToolsProtocol
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store

BODY = {"question": "Wie spät ist es?", "answer": "Es ist acht Uhr.", "judges": ["rag_privacy"]}


def _server(tmp_path: Path, **service: Any) -> Iterator[str]:
    store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
    settings = Settings(home=tmp_path / "home", llm_cache=False)
    options: dict[str, Any] = {"rate_limit": 0, "auth_backoff_seconds": 60, **service}
    app = create_app(settings=settings, service=ServiceSettings(**options), store=store)
    with ServiceServer(app) as server:
        yield server.base_url


def _wrong_keys(url: str, forwarded: list[str | None]) -> list[int]:
    codes = []
    for i, xff in enumerate(forwarded):
        headers = {"Authorization": f"Bearer bqas_wrong-{i}"}
        if xff is not None:
            headers["X-Forwarded-For"] = xff
        codes.append(httpx.post(f"{url}/api/score", json=BODY, headers=headers).status_code)
    return codes


def test_forwarded_for_from_loopback_does_not_dodge_the_back_off(tmp_path: Path) -> None:
    for url in _server(tmp_path):
        codes = _wrong_keys(url, [f"203.0.113.{i}" for i in range(10)])
        assert codes == [401] * 6 + [429] * 4  # as without the header: the peer (127.0.0.1) is the client


def test_a_configured_proxy_is_believed_per_forwarded_client(tmp_path: Path) -> None:
    for url in _server(tmp_path, forwarded_allow_ips="127.0.0.1"):
        assert _wrong_keys(url, [f"203.0.113.{i}" for i in range(10)]) == [401] * 10  # ten clients, one try each
        assert _wrong_keys(url, ["198.51.100.7"] * 7) == [401] * 6 + [429]  # one client behind the proxy


def _raw_request(url: str, head: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("where", ["one header", "many headers", "request line"])
def test_a_200_kb_head_is_431_and_the_server_goes_on(tmp_path: Path, where: str) -> None:
    big = "x" * 200_000
    if where == "one header":
        head = f"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: {big}\r\n\r\n"
    elif where == "many headers":
        head = (
            "GET /healthz HTTP/1.1\r\nHost: t\r\n" + "".join(f"X-H{i}: {'y' * 100}\r\n" for i in range(2000)) + "\r\n"
        )
    else:
        head = f"GET /healthz?q={big} HTTP/1.1\r\nHost: t\r\n\r\n"
    for url in _server(tmp_path):
        answer = _raw_request(url, head.encode())
        assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:200]
        assert httpx.get(f"{url}/healthz", headers={"X-Ok": "y" * 20_000}).status_code == 200  # under 32 KiB


def test_the_limit_is_a_setting(tmp_path: Path) -> None:
    for url in _server(tmp_path, max_header_bytes=4096):
        assert httpx.get(f"{url}/healthz", headers={"X-Ok": "y" * 5000}).status_code == 431
        assert httpx.get(f"{url}/healthz", headers={"X-Ok": "y" * 3000}).status_code == 200


def test_bqas_serve_and_bqas_review_run_with_these_settings(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    from bqas.cli.main import app

    configs: list[uvicorn.Config] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: configs.append(self.config))
    monkeypatch.setenv("BQAS_FORWARDED_ALLOW_IPS", "10.0.0.0/8")
    monkeypatch.setenv("BQAS_MAX_HEADER_BYTES", "8192")
    result = CliRunner().invoke(app, ["serve", "--no-worker", "--port", "1"])
    assert result.exit_code == 0, result.output
    (config,) = configs
    assert config.proxy_headers and config.forwarded_allow_ips == "10.0.0.0/8"
    assert isinstance(config.http, type) and issubclass(config.http, LimitedHttpToolsProtocol)
    assert config.http.max_header_bytes == 8192
    monkeypatch.delenv("BQAS_FORWARDED_ALLOW_IPS")
    CliRunner().invoke(app, ["serve", "--no-worker", "--port", "1"])
    assert not configs[-1].proxy_headers  # the default: no forwarded headers believed
    viewer = CliRunner().invoke(app, ["view", "--no-open", "--port", "0"])
    assert viewer.exit_code == 0, viewer.output
    assert not configs[-1].proxy_headers and configs[-1].http.max_header_bytes == 8192  # type: ignore[union-attr]
