"""Real assistants for the target tests: aiohttp applications served on 127.0.0.1 (a free port each) from a
thread of their own, and helpers to write and run a targeted scenario."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web


class ServedApp:
    """Serve an aiohttp application on 127.0.0.1 in a background thread (``with ServedApp(app) as s``)."""

    def __init__(self, app: web.Application):
        self.app = app
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServedApp:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._thread.start()

        async def start() -> None:
            self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=1.0)
            await self._runner.setup()
            await web.SockSite(self._runner, sock).start()

        asyncio.run_coroutine_threadsafe(start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


def json_app(handler: Callable[[web.Request, dict[str, Any]], Any], path: str = "/chat") -> web.Application:
    """An app whose POST ``path`` calls ``handler(request, body)`` (a coroutine returning a Response)."""

    async def route(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read() or b"{}")
        return await handler(request, body)  # type: ignore[no-any-return]

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post(path, route)
    return app


def write_scenario(tmp_path: Path, samples: list[dict[str, Any]], target: dict[str, Any] | None, **extra: Any) -> Path:
    """A scenario file with inline samples, the voice judge and ``target``."""
    doc: dict[str, Any] = {"name": "targeted", "judges": ["voice"], "backend": "offline", "samples": samples, **extra}
    if target is not None:
        doc["target"] = target
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def voice_samples(n: int) -> list[dict[str, Any]]:
    """Teacher commands without answers: the target gives response and detected_intent."""
    return [
        {"id": f"s{i:03d}", "user_input": f"Erinnere mich an die Konferenz Nummer {i}", "expected_intent": "reminder"}
        for i in range(n)
    ]


def records(out_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
