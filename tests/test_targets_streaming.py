"""Streamed replies of the openai (``stream: true``) and http (``stream: sse | ndjson``) kinds against local
servers: the answer assembled from its chunks, usage from the last chunk, a cut stream a target error, and
the time to first token taken at the first piece of the answer (a clock the server sets shows which event
it was: no duration is measured)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from aiohttp import web
from pydantic import TypeAdapter

from bqas.targets.config import TargetConfig
from bqas.targets.kinds import Conversation, client_for
from bqas.targets.reply import TargetReply
from bqas.targets.streaming import EventParser
from target_support import ServedApp


def _chunk(content: str | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


USAGE = {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}


class Streamer:
    """An OpenAI-compatible and a plain streaming endpoint; ``script`` is the list of (event bytes or None
    for a dropped connection) each request gets; ``step`` (optional) runs before each write."""

    def __init__(self, script: list[bytes | None]):
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.step: Any = None

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.bodies.append(json.loads(await request.read()))
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for index, part in enumerate(self.script):
                if self.step is not None:
                    await self.step(index)
                if part is None:
                    assert request.transport is not None
                    request.transport.close()
                    return response
                await response.write(part)
            await response.write_eof()
            return response

        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        app.router.add_post("/chat", handle)
        return app


def _sse(obj: Any) -> bytes:
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode()


def _ask(config: dict[str, Any], turns: list[dict[str, Any]]) -> list[TargetReply]:
    target = TypeAdapter(TargetConfig).validate_python({"retries": 0, **config})

    async def run() -> list[TargetReply]:
        client = client_for(target, 1024 * 1024)
        conversation = Conversation()
        try:
            return [await client.ask(data, conversation, i) for i, data in enumerate(turns)]
        finally:
            await client.aclose()

    return asyncio.run(run())


OPENAI_STREAM = [
    _sse(_chunk(None, role="assistant")),
    _sse(_chunk("Ich erinnere ")),
    _sse(_chunk("dich morgen.")),
    _sse(_chunk(None, finish="stop")),
    _sse({"id": "c1", "choices": [], "usage": USAGE}),
    _sse("[DONE]"),
]


def test_an_openai_stream_is_assembled_with_its_usage_and_kept_for_the_history() -> None:
    server = Streamer(OPENAI_STREAM)
    with ServedApp(server.app()) as served:
        (reply,) = _ask(
            {"type": "openai", "base_url": f"{served.url}/v1", "model": "m", "stream": True},
            [{"user_input": "Erinnere mich"}],
        )
    assert reply.error is None, reply.error
    assert reply.fields == {"response": "Ich erinnere dich morgen."}
    assert reply.message == "Ich erinnere dich morgen."  # the next turn's history (targets.stage)
    assert (reply.prompt_tokens, reply.completion_tokens, reply.total_tokens) == (21, 4, 25)
    assert reply.ttft_ms is not None
    assert server.bodies[0]["stream"] is True and server.bodies[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("cut", [None, b'data: {"choices": [{"delta": {"content": "Ich"}}]}\n\n'])
def test_an_openai_stream_cut_off_is_a_target_error(cut: bytes | None) -> None:
    script: list[bytes | None] = [OPENAI_STREAM[1]] + ([None] if cut is None else [cut])
    with ServedApp(Streamer(script).app()) as served:
        (reply,) = _ask(
            {"type": "openai", "base_url": f"{served.url}/v1", "model": "m", "stream": True}, [{"user_input": "x"}]
        )
    assert reply.error is not None and reply.fields == {}
    expected = "the stream was cut after 1 events" if cut is None else "ended without [DONE] or a finish_reason"
    assert expected in reply.error, reply.error
    assert "Ich erinnere" in reply.raw


@pytest.mark.parametrize("fmt", ["sse", "ndjson"])
def test_an_http_stream_maps_its_chunks_and_its_last_fields(fmt: str) -> None:
    events = [
        {"token": "Gern, "},
        {"token": "ich erinnere dich."},
        {"token": "", "intent": {"name": "reminder"}, "session": "s-9"},
    ]
    script = [(_sse(e) if fmt == "sse" else (json.dumps(e) + "\n").encode()) for e in events]
    server = Streamer(script)
    with ServedApp(server.app()) as served:
        (reply,) = _ask(
            {
                "type": "http",
                "url": f"{served.url}/chat",
                "body": {"text": "{user_input}"},
                "stream": fmt,
                "chunk": "$.token",
                "outputs": {"detected_intent": "$.intent.name", "conversation_id": "$.session"},
            },
            [{"user_input": "Erinnere mich"}],
        )
    assert reply.error is None, reply.error
    assert reply.fields == {"response": "Gern, ich erinnere dich.", "detected_intent": "reminder"}
    assert reply.conversation_id == "s-9" and reply.ttft_ms is not None


def test_a_stream_needs_its_chunk_path() -> None:
    with pytest.raises(ValueError, match="stream: needs chunk"):
        TypeAdapter(TargetConfig).validate_python({"type": "http", "url": "http://127.0.0.1:9/", "stream": "sse"})


def test_time_to_first_token_is_the_first_piece_of_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server sets the clock before each event and waits until the client has read it: the role chunk
    at 10 ms carries no text, the first piece comes at 30 ms (the delayed first token), the end at 80 ms."""

    class Clock:
        now = 0.0

        def perf_counter(self) -> float:
            return self.now

    clock = Clock()
    read = threading.Event()
    feed = EventParser.feed

    def feed_and_tell(parser: EventParser, chunk: bytes, at_ms: float) -> None:
        feed(parser, chunk, at_ms)
        read.set()

    monkeypatch.setattr("bqas.targets.streaming.time", clock)
    monkeypatch.setattr(EventParser, "feed", feed_and_tell)
    moments = [0.010, 0.030, 0.050, 0.080]
    script = [OPENAI_STREAM[0], OPENAI_STREAM[1], _sse(_chunk("dich morgen.", finish="stop")), _sse("[DONE]")]
    server = Streamer(script)

    async def step(index: int) -> None:
        if index:  # the client has read the event before
            await asyncio.get_running_loop().run_in_executor(None, read.wait, 30)
        read.clear()
        clock.now = moments[index]

    server.step = step
    with ServedApp(server.app()) as served:
        (reply,) = _ask(
            {"type": "openai", "base_url": f"{served.url}/v1", "model": "m", "stream": True}, [{"user_input": "x"}]
        )
    assert reply.error is None, reply.error
    assert reply.ttft_ms == 30.0  # the first piece of text, not the role chunk before it (10.0)
    assert reply.latency_ms == 80.0  # the stream read to its end


def test_the_ttft_gate_and_the_report(tmp_path: Any, bqas_home: Any) -> None:
    from typer.testing import CliRunner

    from bqas.cli.main import app
    from target_support import records, voice_samples, write_scenario

    events = [{"token": "Gern."}, {"token": "", "intent": "reminder"}]
    stream = {
        "type": "http",
        "body": {"text": "{user_input}"},
        "stream": "sse",
        "chunk": "$.token",
        "outputs": {"detected_intent": "$.intent"},
        "timeout": 30,
    }
    # The limit is the target's timeout: a streamed answer always meets it; an unstreamed one has no
    # time to first token and misses it.
    gate = {"max_target_ttft_p95_ms": 30_000}
    with ServedApp(Streamer([_sse(e) for e in events]).app()) as served:
        target = {**stream, "url": f"{served.url}/chat"}
        path = write_scenario(tmp_path, voice_samples(3), target, thresholds=gate)
        met = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "a")])
    assert met.exit_code == 0, met.output
    assert "time to first token p50" in met.output
    recs = records(tmp_path / "a")
    assert len(recs) == 3 and all(r["target"]["ttft_ms"] is not None for r in recs)
    run_id = recs[0]["run_id"]
    shown = json.loads(CliRunner().invoke(app, ["show", run_id, "--json"]).output)
    assert shown["summary"]["target"]["ttft_ms"]["n"] == 3
    assert "time to first token p50 / p95 / max" in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    # The viewer's page of a result shows its reply's time to first token.
    import httpx

    from bqas.review.local import LocalReview
    from bqas.review.settings import ReviewSettings
    from bqas.service.testing import ServiceServer
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    get_settings.cache_clear()
    local = LocalReview(open_store(), ReviewSettings())
    with ServiceServer(local.app) as viewer, httpx.Client(base_url=viewer.base_url) as client:
        client.get(local.start_path)
        page = client.get(f"/review/runs/{run_id}/results/1")
    assert page.status_code == 200 and "<dt>time to first token</dt>" in page.text

    async def whole(request: web.Request) -> web.Response:
        return web.json_response({"answer": "Gern.", "intent": "reminder"})

    plain = web.Application()
    plain.router.add_post("/chat", whole)
    with ServedApp(plain) as served:
        target = {
            "type": "http",
            "url": f"{served.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
        }
        path = write_scenario(tmp_path, voice_samples(2), target, thresholds=gate)
        missed = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "b")])
    assert missed.exit_code == 1, missed.output
    assert "max_target_ttft_p95_ms" in missed.output
