"""``type: http`` targets against a real aiohttp assistant on 127.0.0.1: JSONPath mapping, headers from the
environment, conversation ids, 429 with Retry-After, 500, an HTML error page, slow and huge replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app, records, voice_samples, write_scenario

HTTP_TARGET = {
    "type": "http",
    "method": "POST",
    "headers": {"Authorization": "Bearer ${ASSISTANT_TOKEN}"},
    "body": {"text": "{user_input}", "session": "{conversation_id}"},
    "outputs": {"response": "$.answer", "detected_intent": "$.intent.name", "available_facts": "$.sources[*].text"},
    "retries": 2,
    "timeout": 5,
}


def _target(server: ServedApp, **extra: Any) -> dict[str, Any]:
    return {**HTTP_TARGET, "url": f"{server.url}/chat", **extra}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", *args, "--no-progress"])


def test_replies_are_mapped_with_jsonpath_and_headers_come_from_the_environment(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_TOKEN", "tok-123")
    seen: list[tuple[str | None, dict[str, Any]]] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        seen.append((request.headers.get("Authorization"), body))
        return web.json_response(
            {
                "answer": f"Ich erinnere dich: {body['text']}",
                "intent": {"name": "reminder"},
                "sources": [{"text": "Konferenz am Montag"}, {"text": "Raum 104"}],
                "session": body["session"],
            }
        )

    with ServedApp(json_app(answer)) as server:
        path = write_scenario(tmp_path, voice_samples(3), _target(server))
        result = _run(str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert [h for h, _ in seen] == ["Bearer tok-123"] * 3
    sessions = {b["session"] for _, b in seen}
    assert len(sessions) == 3  # one conversation per sample
    recs = records(tmp_path / "out")
    assert {r["status"] for r in recs} == {"scored"}
    first = next(r for r in recs if r["response_id"] == "s000")
    assert first["inputs"]["response"] == "Ich erinnere dich: Erinnere mich an die Konferenz Nummer 0"
    assert first["inputs"]["detected_intent"] == "reminder"
    assert first["target"]["status"] == 200 and first["target"]["attempts"] == 1
    assert first["target"]["latency_ms"] > 0
    assert "assistant: 3 answers · 0 target errors" in result.output


def test_a_missing_variable_is_refused_before_any_sample(tmp_path: Path, bqas_home: Path) -> None:
    path = write_scenario(tmp_path, voice_samples(1), {**HTTP_TARGET, "url": "http://127.0.0.1:9/chat"})
    result = _run(str(path))
    assert result.exit_code == 2
    assert "target.headers: environment variable ASSISTANT_TOKEN is not set" in result.output


def test_retry_after_is_honoured_and_failures_become_target_errors(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """429 + Retry-After: waited as asked, then answered; 500 every time: retried, then a target error with
    the status and the reply's first bytes; an HTML error page and a non-JSON 200 are target errors too.
    The run goes on and the max_target_errors gate (default 0) fails it: exit 1."""
    monkeypatch.setenv("ASSISTANT_TOKEN", "t")
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("bqas.targets.transport._sleep", no_wait)
    calls: dict[str, int] = {}

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = body["text"]
        calls[text] = calls.get(text, 0) + 1
        if text.endswith(" 0") and calls[text] == 1:
            return web.json_response({"error": "slow down"}, status=429, headers={"Retry-After": "7"})
        if text.endswith(" 1"):
            return web.json_response({"error": "boom"}, status=500)
        if text.endswith(" 2"):
            page = "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
            return web.Response(text=page, status=502, content_type="text/html")
        if text.endswith(" 3"):
            return web.Response(text="<html>Wartung</html>", status=200, content_type="text/html")
        if text.endswith(" 4"):
            return web.json_response({"reply": "no answer field here"})
        return web.json_response({"answer": "Gern.", "intent": {"name": "reminder"}, "sources": []})

    with ServedApp(json_app(answer)) as server:
        # idempotent: this assistant keeps no state between requests, so a turn sent twice is harmless.
        path = write_scenario(tmp_path, voice_samples(6), _target(server, idempotent=True))
        result = _run(str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output  # a gate missed, not a crash
    assert 7.0 in waits  # Retry-After, not the backoff
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert by_id["s000"]["status"] == "scored" and by_id["s000"]["target"]["attempts"] == 2
    assert by_id["s005"]["status"] == "scored"
    assert calls["Erinnere mich an die Konferenz Nummer 1"] == 3  # retries: 2
    boom = by_id["s001"]
    assert boom["status"] == "target_error" and boom["target"]["status"] == 500
    assert (
        "HTTP 500" in boom["target_error"]
        and "boom" in boom["target_error"]
        and "after 3 attempts" in boom["target_error"]
    )
    assert by_id["s002"]["status"] == "target_error" and "502 Bad Gateway" in by_id["s002"]["target_error"]
    assert "not JSON" in by_id["s003"]["target_error"] and "Wartung" in by_id["s003"]["target_error"]
    assert "unmappable reply: nothing at response ($.answer)" in by_id["s004"]["target_error"]
    assert "no answer field here" in by_id["s004"]["target"]["reply_excerpt"]
    assert "max_target_errors" in result.output and "4 target errors" in result.output


def test_slow_replies_time_out_into_target_errors(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_TOKEN", "t")

    async def no_wait(seconds: float) -> None:
        return None

    monkeypatch.setattr("bqas.targets.transport._sleep", no_wait)

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        if body["text"].endswith(" 1"):
            await asyncio.sleep(3)
        return web.json_response({"answer": "Gern.", "intent": {"name": "reminder"}, "sources": []})

    with ServedApp(json_app(answer)) as server:
        path = write_scenario(tmp_path, voice_samples(2), _target(server, timeout=0.5, retries=1))
        result = _run(str(path), "--out", str(tmp_path / "out"))
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert by_id["s000"]["status"] == "scored"
    assert by_id["s001"]["status"] == "target_error"
    assert "timed out: no answer within 0.5 s" in by_id["s001"]["target_error"]
    assert result.exit_code == 1


def test_a_10_mb_reply_is_refused_by_default_and_capped_when_allowed(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_TOKEN", "t")
    big = "x" * (10 * 1024 * 1024)

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        return web.json_response({"answer": "Gern.", "intent": {"name": "reminder"}, "sources": [{"text": big}]})

    with ServedApp(json_app(answer)) as server:
        path = write_scenario(tmp_path, voice_samples(1), _target(server))
        refused = _run(str(path), "--out", str(tmp_path / "a"))
        monkeypatch.setenv("BQAS_TARGET_MAX_REPLY_BYTES", str(16 * 1024 * 1024))
        from bqas.settings import get_settings

        get_settings.cache_clear()
        allowed = _run(str(path), "--out", str(tmp_path / "b"))
    assert refused.exit_code == 1
    (rec,) = records(tmp_path / "a")
    assert rec["status"] == "target_error" and "exceeds 8388608 bytes" in rec["target_error"]
    assert allowed.exit_code == 0, allowed.output
    (rec,) = records(tmp_path / "b")
    assert rec["status"] == "scored" and rec["target"]["raw_bytes"] > 10 * 1024 * 1024
    from bqas.store.db import open_store

    store = open_store()
    run_id = rec["run_id"]
    (stored,) = store.iter_target_replies(run_id)
    assert stored["raw_truncated"] is True and len(stored["raw"].encode()) <= 16 * 1024
    assert stored["fields"]["available_facts"] == [big]  # the mapped fields are kept whole


def test_conversations_go_turn_by_turn_to_one_session(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample with turns: each turn is sent in order within one conversation (the target's own id from
    outputs.conversation_id after the first turn) and each turn is judged; history: sent first, not judged."""
    monkeypatch.setenv("ASSISTANT_TOKEN", "t")
    seen: list[dict[str, Any]] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        seen.append(body)
        session = body["session"] if body["session"].startswith("srv-") else f"srv-{len(seen)}"
        return web.json_response(
            {"answer": f"zu: {body['text']}", "intent": {"name": "reminder"}, "sources": [], "session": session}
        )

    samples = [
        {
            "id": "c1",
            "expected_intent": "reminder",
            "turns": [{"user_input": "Erinnere mich an A"}, {"user_input": "und an B"}, {"user_input": "und an C"}],
        },
        {
            "id": "h1",
            "expected_intent": "reminder",
            "history": ["Hallo", {"role": "assistant", "content": "Hi"}],
            "user_input": "Erinnere mich an D",
        },
    ]
    with ServedApp(json_app(answer)) as server:
        target = _target(server, outputs={**HTTP_TARGET["outputs"], "conversation_id": "$.session"})
        path = write_scenario(tmp_path, samples, target, concurrency=1)
        result = _run(str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    c1 = [b for b in seen if b["text"] in ("Erinnere mich an A", "und an B", "und an C")]
    assert [b["text"] for b in c1] == ["Erinnere mich an A", "und an B", "und an C"]
    assert c1[0]["session"].startswith("bqas-")
    assert c1[1]["session"].startswith("srv-") and c1[1]["session"] == c1[2]["session"]
    h1 = [b["text"] for b in seen if b["text"] in ("Hallo", "Erinnere mich an D")]
    assert h1 == ["Hallo", "Erinnere mich an D"]
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert sorted(by_id) == ["c1#0", "c1#1", "c1#2", "h1"]  # history turns are sent, not judged
    assert by_id["c1#2"]["inputs"]["response"] == "zu: und an C"
    assert by_id["c1#2"]["target"]["turn"] == 2 and by_id["h1"]["target"]["turn"] == 1


def test_dry_run_counts_target_calls(tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSISTANT_TOKEN", "t")
    samples = [
        *voice_samples(3),
        {
            "id": "done",
            "user_input": "x",
            "response": "y",
            "detected_intent": "reminder",
            "expected_intent": "reminder",
        },
        {"id": "c", "expected_intent": "reminder", "turns": [{"user_input": "a"}, {"user_input": "b"}]},
        {"id": "h", "expected_intent": "reminder", "history": ["vorher"], "user_input": "jetzt"},
    ]
    path = write_scenario(tmp_path, samples, {**HTTP_TARGET, "url": "http://127.0.0.1:9/chat"})
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.output)
    assert estimate["target"] == "http"
    assert estimate["target_calls"] == 3 + 2 + 2  # the stored answer is not asked for; history counts
    assert estimate["invalid"] == 0  # the answers the target would give are not missing fields
