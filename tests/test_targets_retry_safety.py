"""A turn of a conversation the assistant keeps (an http target with a session, a later Dify turn) is sent
again only where the request cannot have reached the assistant: an error status or a timeout after the
request was sent is a target error after one call, unless the target is declared ``idempotent``."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.targets.reply import TargetFailure
from bqas.targets.transport import Transport
from target_support import ServedApp, json_app, records, voice_samples, write_scenario


def _flaky(calls: dict[str, int]) -> web.Application:
    """Answers each text's first request with 500 (the turn taken, the answer lost), then 200."""

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = body["text"]
        calls[text] = calls.get(text, 0) + 1
        if calls[text] == 1:
            return web.json_response({"error": "upstream timeout"}, status=500)
        return web.json_response({"answer": "Gern.", "intent": "reminder"})

    return json_app(answer)


def _target(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "url": f"{url}/chat",
        "body": {"text": "{user_input}", "session": "{conversation_id}"},
        "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
        "retries": 2,
        **extra,
    }


@pytest.fixture
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    monkeypatch.setattr("bqas.targets.transport._sleep", no_wait)


@pytest.mark.usefixtures("no_waits")
def test_a_session_turn_is_not_sent_twice_after_an_error_status(tmp_path: Path, bqas_home: Path) -> None:
    calls: dict[str, int] = {}
    with ServedApp(_flaky(calls)) as server:
        path = write_scenario(tmp_path, voice_samples(2), _target(server.url))
        result = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output  # two target errors: the max_target_errors gate
    assert set(calls.values()) == {1}, calls  # the session never got a turn twice
    for rec in records(tmp_path / "o"):
        assert rec["status"] == "target_error" and rec["target"]["attempts"] == 1
        assert "not retried: the assistant may have taken this turn already" in rec["target_error"]


@pytest.mark.usefixtures("no_waits")
def test_an_idempotent_or_sessionless_target_is_retried(tmp_path: Path, bqas_home: Path) -> None:
    calls: dict[str, int] = {}
    with ServedApp(_flaky(calls)) as server:
        declared = _target(server.url, idempotent=True)
        sessionless = {**_target(server.url), "body": {"text": "{user_input}"}}
        for name, target in (("declared", declared), ("sessionless", sessionless)):
            calls.clear()
            path = write_scenario(tmp_path, voice_samples(2), target)
            result = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / name)])
            assert result.exit_code == 0, result.output
            assert set(calls.values()) == {2}, (name, calls)
            assert {r["target"]["attempts"] for r in records(tmp_path / name)} == {2}


@pytest.mark.usefixtures("no_waits")
def test_a_refused_connection_is_retried_even_for_a_session_turn() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there: every attempt is refused before anything is sent

    async def send() -> TargetFailure:
        transport = Transport(timeout=5, retries=2, concurrency=1, max_reply_bytes=1024)
        try:
            await transport.send("POST", f"http://127.0.0.1:{port}/chat", {}, {"text": "x"}, replay_safe=False)
        except TargetFailure as exc:
            return exc
        finally:
            await transport.aclose()
        raise AssertionError("a refused connection answered")

    failure = asyncio.run(send())
    assert failure.attempts == 3 and "after 3 attempts" in failure.reason
    assert "not retried" not in failure.reason
