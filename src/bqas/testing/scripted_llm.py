"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API with scripted answers.

Used by BQAS's tests and benchmarks (and usable by yours) to exercise the LLM path without any network:
scripted replies, fixed latency and faults — 429 with ``Retry-After``, 500, a hanging request, malformed
or truncated JSON, a server that rejects ``json_schema`` like llama.cpp, one that refuses ``logprobs``,
one that serves one request at a time (``slots=1``) and stops working on a request whose client hung up
(as llama.cpp and vLLM do; counted in ``cancelled``).

Token log-probabilities come back in OpenAI's format when a request asks for them (``logprobs: true``,
``top_logprobs: k``): by default the reply text is split into words, spaces and punctuation, each with
log-probability ``DEFAULT_LOGPROB``; ``Reply(logprobs={"pass": [("pass", -0.1), ("fail", -2.4)]})`` sets
a token's log-probability and alternatives, ``Reply(tokens=[Token(...), ...])`` scripts every token.
Deterministic: the same reply always gives the same numbers. A request with ``n`` gets ``n`` choices,
each the next scripted reply (unless ``honour_n=False``, like servers that ignore ``n``).

    with ScriptedLLM(default=Reply(content='{"ok": true}'), latency=0.05) as llm:
        llm.push(Reply(status=429, headers={"Retry-After": "1"}))
        ...  # point the client at llm.base_url

Run standalone (benchmarks): ``python -m bqas.testing.scripted_llm --latency 0.2 --content '{...}'``
prints ``PORT <n>`` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


DEFAULT_LOGPROB = -0.01
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


@dataclass
class Token:
    """One scripted token: its text, log-probability and top alternatives ``(token, logprob)``.

    Without ``top`` the alternatives are the token itself alone.
    """

    text: str
    logprob: float = DEFAULT_LOGPROB
    top: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class Reply:
    """One scripted answer. ``content`` is the assistant message; ``body`` replaces the whole HTTP body.

    ``tokens`` scripts the reply token by token (``content`` defaults to their concatenation);
    ``logprobs`` maps a token's text to its alternatives, the first being the token's own log-probability.
    ``finish_reason`` is what the choice reports (``length`` for a reply cut at ``max_tokens``).
    ``raw`` replaces the whole HTTP body with bytes as they are (not UTF-8, say); a ``Content-Type`` in
    ``headers`` replaces the default ``application/json``.
    """

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float | None = None
    hang: bool = False
    body: str | None = None
    raw: bytes | None = None
    prompt_tokens: int | None = None
    completion_tokens: int = 20
    tokens: list[Token] | None = None
    logprobs: dict[str, list[tuple[str, float]]] | None = None
    finish_reason: str = "stop"

    @property
    def text(self) -> str:
        if self.content is None and self.tokens is not None:
            return "".join(t.text for t in self.tokens)
        return self.content or ""

    def scripted_tokens(self) -> list[Token]:
        """The reply's tokens: the scripted ones, or the text split into words, spaces and punctuation."""
        if self.tokens is not None:
            return self.tokens
        overrides = self.logprobs or {}
        out: list[Token] = []
        for piece in _TOKEN.findall(self.text):
            alternatives = overrides.get(piece)
            if alternatives:
                out.append(Token(piece, alternatives[0][1], list(alternatives)))
            else:
                out.append(Token(piece))
        return out


def logprobs_payload(tokens: list[Token], top_k: int) -> dict[str, Any]:
    """A choice's ``logprobs`` object in OpenAI's format, with ``top_k`` alternatives per token."""

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    content = []
    for token in tokens:
        top = token.top or [(token.text, token.logprob)]
        content.append({**entry(token.text, token.logprob), "top_logprobs": [entry(t, lp) for t, lp in top[:top_k]]})
    return {"content": content}


Responder = Callable[[dict[str, Any]], "Reply | None"]


class ScriptedLLM:
    """The server. Replies come from, in order: the FIFO of pushed replies, rules, the responder, the default."""

    def __init__(
        self,
        *,
        default: Reply | None = None,
        latency: float = 0.0,
        reject_json_schema: bool = False,
        reject_logprobs: bool = False,
        honour_n: bool = True,
        slots: int | None = None,
        responder: Responder | None = None,
        port: int = 0,
    ):
        self.default = default or Reply(content="{}")
        self.latency = latency
        self.reject_json_schema = reject_json_schema
        self.reject_logprobs = reject_logprobs
        self.honour_n = honour_n
        self.slots = slots
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        # Load, as a test can read it: requests being worked on now, the most at once, and requests whose
        # client hung up before the answer (the server stopped working on them).
        self.active = 0
        self.peak_active = 0
        self.cancelled = 0
        self._slots: asyncio.Semaphore | None = None
        self._queue: deque[Reply] = deque()
        self._rules: list[tuple[str, Reply]] = []
        self._lock = threading.Lock()
        self._port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def on(self, contains: str, reply: Reply) -> None:
        """Answer ``reply`` to every request whose messages contain ``contains``."""
        with self._lock:
            self._rules.append((contains, reply))

    def _pick(self, payload: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            text = json.dumps(payload.get("messages", []), ensure_ascii=False)
            for needle, reply in self._rules:
                if needle in text:
                    return reply
        if self.responder is not None:
            answer = self.responder(payload)
            if answer is not None:
                return answer
        return self.default

    # -- ASGI app ------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["method"] != "POST" or not scope["path"].endswith("/chat/completions"):
            await _respond(send, 404, {"error": {"message": "not found"}})
            return
        try:
            payload = json.loads(body)
        except ValueError:
            await _respond(send, 400, {"error": {"message": "invalid JSON body"}})
            return
        self.requests.append(payload)
        fmt = (payload.get("response_format") or {}).get("type")
        if self.reject_json_schema and fmt == "json_schema":
            await _respond(send, 500, {"error": {"code": 500, "message": "Unsupported response_format: json_schema"}})
            return
        if self.reject_logprobs and payload.get("logprobs"):
            await _respond(send, 400, {"error": {"message": "logprobs is not supported by this server"}})
            return
        # The client hanging up ends the request here, as on llama.cpp and vLLM, which stop generating.
        gone = asyncio.ensure_future(receive())
        try:
            await self._serve(payload, send, gone)
        finally:
            gone.cancel()

    async def _serve(self, payload: dict[str, Any], send: Send, gone: asyncio.Future[Any]) -> None:
        if self.slots is not None and self._slots is None:
            self._slots = asyncio.Semaphore(self.slots)
        if self._slots is not None and not await _unless_gone(self._slots.acquire(), gone):
            self.cancelled += 1
            return
        self.active += 1
        self.peak_active = max(self.peak_active, self.active)
        try:
            await self._answer(payload, send, gone)
        finally:
            self.active -= 1
            if self._slots is not None:
                self._slots.release()

    async def _answer(self, payload: dict[str, Any], send: Send, gone: asyncio.Future[Any]) -> None:
        n = payload.get("n") if self.honour_n else 1
        count = n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 16 else 1
        replies = [self._pick(payload) for _ in range(count)]
        reply = replies[0]
        delay = self.latency if reply.delay is None else reply.delay
        if reply.hang:
            delay = 3600
        if delay and not await _unless_gone(asyncio.sleep(delay), gone):
            self.cancelled += 1
            return
        if reply.raw is not None:
            await _respond_raw(send, reply.status, reply.raw, reply.headers)
            return
        if reply.body is not None:
            await _respond_raw(send, reply.status, reply.body.encode(), reply.headers)
            return
        if reply.status != 200:
            await _respond(send, reply.status, {"error": {"message": f"scripted {reply.status}"}}, reply.headers)
            return
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = max(1, len(json.dumps(payload.get("messages", []))) // 4)
        top_k = payload.get("top_logprobs")
        top_k = top_k if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k >= 0 else 0
        choices = []
        for index, each in enumerate(replies):
            choice: dict[str, Any] = {
                "index": index,
                "message": {"role": "assistant", "content": each.text},
                "finish_reason": each.finish_reason,
            }
            if payload.get("logprobs"):
                choice["logprobs"] = logprobs_payload(each.scripted_tokens(), top_k)
            choices.append(choice)
        completion_tokens = sum(r.completion_tokens for r in replies)
        answer = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model", "scripted"),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        await _respond(send, 200, answer, reply.headers)

    # -- lifecycle -----------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def start(self) -> ScriptedLLM:
        """Start serving in a background thread on 127.0.0.1 (a free port unless one was given)."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._port))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.time() + 10
        while not self._server.started:
            if time.time() > deadline:
                raise RuntimeError("scripted LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _unless_gone(work: Awaitable[Any], gone: asyncio.Future[Any]) -> bool:
    """Run ``work`` unless the client hangs up first (then cancel it): True when it finished."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        return True
    task.cancel()
    return False


async def _respond(send: Send, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
    await _respond_raw(send, status, json.dumps(data, ensure_ascii=False).encode(), headers)


async def _respond_raw(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    extra = {k.lower(): v for k, v in (headers or {}).items()}
    content_type = extra.pop("content-type", "application/json")
    raw_headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class _FastProtocol(asyncio.Protocol):
    """A minimal HTTP/1.1 keep-alive responder (httptools parser) for benchmarks: every POST gets the same
    chat completion after ``latency`` seconds. Much cheaper per request than the ASGI server above, so that
    a benchmark measures the client, not this fixture."""

    def __init__(self, body: bytes, latency: float):
        import httptools

        self._body = body
        self._latency = latency
        self._parser = httptools.HttpRequestParser(self)
        self._transport: Any = None  # uvloop's transports are not asyncio.Transport subclasses
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._parser.feed_data(data)

    def on_message_complete(self) -> None:
        self._loop.call_later(self._latency, self._respond)

    def _respond(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(self._body)}\r\n\r\n"
            self._transport.write(head.encode() + self._body)


def serve_fast(content: str, latency: float, port: int = 0) -> None:
    """Serve a fixed chat completion with fixed latency on 127.0.0.1 until killed (prints ``PORT <n>``)."""
    body = json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340},
        }
    ).encode()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _FastProtocol(body, latency), "127.0.0.1", port, backlog=1024)
        print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
        await server.serve_forever()

    try:
        import uvloop

        uvloop.run(run())
    except ImportError:
        asyncio.run(run())


def main() -> None:
    """Serve a fixed reply with fixed latency until killed (for benchmarks in another process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--content", default="{}", help="assistant message content of every answer")
    parser.add_argument("--fast", action="store_true", help="minimal keep-alive server (no scripting, no faults)")
    args = parser.parse_args()
    if args.fast:
        serve_fast(args.content, args.latency, args.port)
        return
    server = ScriptedLLM(default=Reply(content=args.content), latency=args.latency, port=args.port).start()
    print(f"PORT {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
