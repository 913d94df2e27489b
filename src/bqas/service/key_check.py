"""The ``X-BQAS-Key-Check`` response header: an API key accepted from the cache during a database outage.

While the store cannot be read, a key this process verified earlier keeps working for a bounded time
(:class:`bqas.auth.keys.Authenticator`); such a response says so (``stale; age=<seconds since the key was
last verified>``), so a client or a log can tell that revocations are not being seen right now.
"""

from __future__ import annotations

from bqas.service.asgi import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-BQAS-Key-Check"
#: Where the request's scope state holds the header's value (set by the API key dependency).
STATE_KEY = "bqas_key_check"


def stale_value(age: float) -> str:
    return f"stale; age={max(0, round(age))}"


class KeyCheckHeader:
    """Adds the header to a response whose API key was served stale."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                value = (scope.get("state") or {}).get(STATE_KEY)
                if value:
                    message["headers"] = [*message.get("headers", ()), (HEADER.lower().encode(), value.encode())]
            await send(message)

        await self.app(scope, receive, send_wrapper)
