"""Run a service app under uvicorn in a background thread on 127.0.0.1 (for tests and examples).

with ServiceServer(create_app(...)) as server:
    httpx.get(server.base_url + "/healthz")
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class ServiceServer:
    """A real HTTP server (uvicorn, lifespan on) for an ASGI app, on a free port unless one is given."""

    def __init__(self, app: Any, *, port: int = 0):
        self.app = app
        self._port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> ServiceServer:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        self._port = sock.getsockname()[1]
        from bqas.service.server import server_config  # the settings `bqas serve` runs with

        config = server_config(self.app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.time() + 15
        while not self._server.started:
            if time.time() > deadline or not self._thread.is_alive():
                raise RuntimeError("service did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> ServiceServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
