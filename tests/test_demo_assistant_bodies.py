"""The demo assistant (``bqas demo-assistant``) against bodies it cannot read and clients that send a new,
huge session id with every request: a 400 with the reason, and a memory that stays bounded."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bqas.demo import assistant
from target_support import ServedApp

BAD_BODIES: list[tuple[str, bytes, str]] = [
    ("/chat", b"not json", "not JSON"),
    ("/chat", b"[1, 2]", "expected a JSON object"),
    ("/chat", b'"text"', "expected a JSON object"),
    ("/chat", b"\xff\xfe", "not JSON"),
    ("/chat", b"[" * 5000 + b"]" * 5000, "not JSON"),
    ("/chat", b'{"text": 5}', "text: expected text"),
    ("/chat", b'{"text": "hallo", "session": {"a": 1}}', "session: expected an id"),
    ("/v1/chat/completions", b'{"messages": [1, 2]}', "messages: expected"),
    ("/v1/chat/completions", b'{"messages": {"role": "user"}}', "messages: expected"),
    ("/v1/chat-messages", b'{"query": ["x"]}', "query: expected text"),
    ("/v1/chat-messages", b"null", "expected a JSON object"),
]


def test_bad_bodies_get_400_with_the_reason() -> None:
    with ServedApp(assistant.build_app()) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        for path, body, reason in BAD_BODIES:
            reply = client.post(path, content=body, headers={"Content-Type": "application/json"})
            assert reply.status_code == 400, (path, body[:40], reply.text[:200])
            assert reason in reply.json()["error"], (path, reply.text)
        good = client.post("/chat", json={"text": "Erinnere mich an die Konferenz"})
    assert good.status_code == 200 and good.json()["intent"]["name"].startswith("reminder")


def test_sessions_are_bounded_in_number_and_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assistant, "MAX_SESSIONS", 3, raising=False)

    def turn(client: httpx.Client, session: str) -> Any:
        reply = client.post("/chat", json={"text": "Hallo", "session": session})
        return reply.json()["turn"] if reply.status_code == 200 else reply.status_code

    with ServedApp(assistant.build_app()) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        huge = [turn(client, f"{i}-" + "s" * 500_000) for i in range(5)]
        assert [turn(client, f"s{i}") for i in range(5)] == [1, 1, 1, 1, 1]
        assert turn(client, "s4") == 2  # remembered: among the 3 most recent
        assert turn(client, "s0") == 1  # forgotten: the least recently used went first
    assert huge == [400] * 5  # a 500 KB session id is refused, not stored
