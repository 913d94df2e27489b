"""How BQAS's HTTP servers run under uvicorn: which forwarded headers are believed, and how large a
request's head may be.

- ``X-Forwarded-For``/``-Proto`` are read only from the addresses in ``BQAS_FORWARDED_ALLOW_IPS``
  (comma-separated addresses or networks, ``*`` for any; default none). uvicorn's own default believes
  them from 127.0.0.1, so anything on the host (a local process, a sidecar) could name any client and
  walk past the failed-key back-off, which is kept per client address.
- The request line and headers together may hold ``BQAS_MAX_HEADER_BYTES`` (32 KiB); a larger head is
  answered ``431 Request Header Fields Too Large`` and the connection closed, before the rest is read
  or any of it reaches the application. uvicorn's httptools protocol has no such limit of its own.
"""

from __future__ import annotations

from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bqas.service.config import ServiceSettings

#: Default of ``BQAS_MAX_HEADER_BYTES``: above what browsers, Dify and reverse proxies send (nginx
#: allows 4 x 8 KiB by default), far below what would cost the server memory.
MAX_HEADER_BYTES = 32 * 1024


#: After a 431 the rest of what the client sends is read and dropped, up to this much and this long, so
#: that the answer reaches it: closing at once with its bytes unread resets the connection, and the
#: client sees "connection reset" instead of the 431.
LINGER_BYTES = 4 * 1024 * 1024
LINGER_SECONDS = 5.0


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop reading a request whose head is over the limit."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a limit on the bytes of the request line and headers."""

    max_header_bytes = MAX_HEADER_BYTES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._head_too_large = False
        self._dropped: int | None = None  # bytes read and dropped after a 431 (None: not refused)

    def data_received(self, data: bytes) -> None:
        if self._dropped is not None:
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        super().data_received(data)

    def on_message_begin(self) -> None:
        self._head_bytes = 0
        super().on_message_begin()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.max_header_bytes:
            self._head_too_large = True
            raise _HeadTooLarge  # the parser stops; uvicorn answers the error through send_400_response

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF, as on the wire
        super().on_header(name, value)

    def send_400_response(self, msg: str) -> None:
        if not self._head_too_large:
            super().send_400_response(msg)
            return
        body = f"request headers larger than {self.max_header_bytes} bytes\n".encode()
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        self.transport.write(head + body)
        self._dropped = 0
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the answer is complete; what still arrives is dropped
        self.loop.call_later(LINGER_SECONDS, self.transport.close)


def server_config(app: Any, service: ServiceSettings | None = None, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration of a BQAS server (``bqas serve``, ``bqas review``/``view``, tests):
    forwarded headers only from ``service.forwarded_allow_ips``, heads up to ``service.max_header_bytes``.
    Without ``service``: the service app's own settings, else the environment's."""
    if service is None:
        state = getattr(getattr(app, "state", None), "bqas", None)
        service = getattr(state, "service", None) or ServiceSettings()
    allowed = service.forwarded_allow_ips.strip()
    limit = service.max_header_bytes
    protocol = type("HttpProtocol", (LimitedHttpToolsProtocol,), {"max_header_bytes": limit})
    return uvicorn.Config(
        app,
        http=protocol,
        proxy_headers=bool(allowed),
        forwarded_allow_ips=allowed or None,
        **options,
    )
