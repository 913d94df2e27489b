"""Crash-safe conversations: each turn's reply is stored before the next turn is sent, so a run killed in
the middle of five-turn conversations, resumed, asks every turn exactly once (the turn in flight at the
kill excepted) and continues each conversation in the same assistant session: the target's own id (http,
Dify) or, for the openai kind, the stored history sent again without asking the answered turns."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from target_support import ServedApp, write_scenario

CONVERSATIONS = TURNS = 5


def _text(conversation: int, turn: int) -> str:
    return f"Konversation {conversation} Schritt {turn}: erinnere mich an die Konferenz"


def _where(text: str) -> tuple[int, int]:
    words = text.split()
    return int(words[1]), int(words[3].rstrip(":"))


def _samples() -> list[dict[str, Any]]:
    """Conversation i is held (while the first run lives) at its turn i: a kill at each of the five turns."""
    return [
        {
            "id": f"c{i}",
            "expected_intent": "reminder",
            "turns": [{"user_input": _text(i, j)} for j in range(TURNS)],
        }
        for i in range(CONVERSATIONS)
    ]


class Assistant:
    """One server for the three kinds; it records every call as (conversation, turn, session, request)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str | None, dict[str, Any]]] = []
        self.hold = True

    async def _answer(self, text: str, session: str | None, body: dict[str, Any]) -> tuple[int, int]:
        conversation, turn = _where(text)
        self.calls.append((conversation, turn, session, body))
        if self.hold and turn == conversation:
            await asyncio.Event().wait()  # the killed run's turn in flight is never answered
        return conversation, turn

    def app(self) -> web.Application:
        async def http(request: web.Request) -> web.Response:
            body = orjson.loads(await request.read())
            conversation, turn = await self._answer(body["text"], body["session"], body)
            return web.json_response(
                {"answer": f"Erledigt: Schritt {turn}", "intent": "reminder", "session": f"srv-{conversation}"}
            )

        async def openai(request: web.Request) -> web.Response:
            body = orjson.loads(await request.read())
            _, turn = await self._answer(body["messages"][-1]["content"], None, body)
            message = orjson.dumps({"answer": f"Erledigt: Schritt {turn}", "intent": "reminder"}).decode()
            return web.json_response({"choices": [{"message": {"role": "assistant", "content": message}}]})

        async def dify(request: web.Request) -> web.Response:
            body = orjson.loads(await request.read())
            conversation, turn = await self._answer(body["query"], body["conversation_id"], body)
            return web.json_response(
                {
                    "event": "message",
                    "answer": f"Erledigt: Schritt {turn}",
                    "intent": "reminder",
                    "conversation_id": f"dify-{conversation}",
                    "metadata": {"usage": {"prompt_tokens": 10, "completion_tokens": 3}},
                }
            )

        app = web.Application()
        app.router.add_post("/chat", http)
        app.router.add_post("/v1/chat/completions", openai)
        app.router.add_post("/v1/chat-messages", dify)
        return app


def _target(kind: str, url: str) -> dict[str, Any]:
    common = {"concurrency": CONVERSATIONS, "timeout": 60}
    if kind == "http":
        return {
            "type": "http",
            "url": f"{url}/chat",
            "body": {"text": "{user_input}", "session": "{conversation_id}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent", "conversation_id": "$.session"},
            **common,
        }
    if kind == "openai":
        outputs = {"response": "$.answer", "detected_intent": "$.intent"}
        return {"type": "openai", "base_url": f"{url}/v1", "model": "m", "outputs": outputs, **common}
    return {
        "type": "dify",
        "base_url": f"{url}/v1",
        "api_key_env": "CRASH_DIFY_KEY",
        "outputs": {"detected_intent": "$.intent"},
        **common,
    }


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:  # not created yet, or being migrated
        return 0


@pytest.mark.parametrize("kind", ["http", "openai", "dify"])
def test_a_conversation_killed_at_each_turn_resumes_where_it_stopped(
    tmp_path: Path, bqas_home: Path, kind: str
) -> None:
    env = {**os.environ, "BQAS_HOME": str(bqas_home), "CRASH_DIFY_KEY": "dify-key-for-the-test"}
    db = bqas_home / "bqas.sqlite"
    assistant = Assistant()
    stored_at_kill = sum(range(CONVERSATIONS))  # conversation i has turns 0..i-1 answered
    with ServedApp(assistant.app()) as server:
        path = write_scenario(tmp_path, _samples(), _target(kind, server.url))
        cmd = [sys.executable, "-m", "bqas.cli.main", "run", str(path), "--no-progress", "--out", str(tmp_path / "o")]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and len(assistant.calls) < stored_at_kill + CONVERSATIONS:
            time.sleep(0.05)  # until each conversation's held turn has arrived
        # A turn is sent only once the turn before it is stored: nothing more to wait for (a guard).
        deadline = time.time() + 10
        while time.time() < deadline and _count(db, "SELECT COUNT(*) FROM target_replies") < stored_at_kill:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # Every answered turn is in the store before the run goes on; the five held turns are not.
        assert _count(db, "SELECT COUNT(*) FROM target_replies") == stored_at_kill
        assert len(assistant.calls) == stored_at_kill + CONVERSATIONS
        with sqlite3.connect(db) as conn:
            run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
        assistant.hold = False
        resumed = subprocess.run(
            [sys.executable, "-m", "bqas.cli.main", "run", "--resume", run_id, "--no-progress"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    asked: dict[tuple[int, int], int] = {}
    for conversation, turn, _, _ in assistant.calls:
        asked[conversation, turn] = asked.get((conversation, turn), 0) + 1
    expected = {(i, j): 2 if i == j else 1 for i in range(CONVERSATIONS) for j in range(TURNS)}
    assert asked == expected  # one call per turn across crash and resume, but the one in flight
    last = {(c, t): (session, body) for c, t, session, body in assistant.calls}  # the answered call of each
    for (conversation, turn), (session, body) in last.items():
        if kind == "http" and turn > 0:
            assert session == f"srv-{conversation}"  # the assistant's own session, after the resume too
        if kind == "dify":
            assert session == ("" if turn == 0 else f"dify-{conversation}")
        if kind == "openai":  # the earlier turns are sent again as history, with the stored answers
            history = body["messages"][:-1]
            assert [m["content"] for m in history if m["role"] == "user"] == [
                _text(conversation, j) for j in range(turn)
            ]
            said = [orjson.loads(m["content"])["answer"] for m in history if m["role"] == "assistant"]
            assert said == [f"Erledigt: Schritt {j}" for j in range(turn)]
    with sqlite3.connect(db) as conn:
        keys = [r[0] for r in conn.execute("SELECT sample_key FROM results WHERE run_id = ?", (run_id,))]
        replies = _count(db, f"SELECT COUNT(*) FROM target_replies WHERE run_id = '{run_id}'")
    assert sorted(keys) == sorted(f"c{i}#{j}::voice" for i in range(CONVERSATIONS) for j in range(TURNS))
    assert replies == CONVERSATIONS * TURNS
