"""A hostile assistant under test, served on 127.0.0.1: deep nesting, values a header cannot hold, redirects
to another port, a body that stops after the headers, echoes of every secret form, and data rows that
try to rewrite the URL. Each bad sample is that sample's ``target_error``; the run goes on."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import pytest
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app, records, write_scenario

OUTPUTS = {"response": "$.answer", "detected_intent": "$.intent", "available_facts": "$..text"}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", *args, "--no-progress"])


def _sample(i: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"s{i:03d}", "user_input": f"Erinnere mich an Nummer {i}", "expected_intent": "reminder", **extra}


def _deep_reply(extra: str) -> web.Response:
    """A reply with ``extra`` (JSON text too deep for the json module to write) next to a good answer."""
    return web.Response(
        text='{"answer": "Gern.", "intent": "reminder", ' + extra + "}", content_type="application/json"
    )


def _no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    monkeypatch.setattr("bqas.targets.transport._sleep", no_wait)


def test_deep_replies_and_unsendable_header_values_are_target_errors_and_resume_does_not_ask_again(
    tmp_path: Path, bqas_home: Path
) -> None:
    """A 900-deep list at the mapped path, a 1,000-deep object under ``$..text``, a 2,000-deep nesting and a
    CR/LF in a field used in a header: each is its sample's target error; the good sample is scored, the run
    ends on the target-error gate (exit 1), and ``--resume`` asks nobody again."""
    asked: list[str] = []

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = body["text"]
        asked.append(text)
        good = {"answer": "Gern.", "intent": "reminder"}
        if text.endswith(" 1"):  # 900 lists deep at the mapped path
            return _deep_reply('"facts": ' + "[" * 900 + '"tief"' + "]" * 900)
        if text.endswith(" 2"):  # 1,000 objects deep, where $..text descends
            return _deep_reply('"junk": ' + '{"a": ' * 1000 + '{"text": "unten"}' + "}" * 1000)
        if text.endswith(" 3"):
            return web.Response(body=b"[" * 2000 + b"]" * 2000, content_type="application/json")
        return web.json_response(good)

    samples = [_sample(0), _sample(1), _sample(2), _sample(3), _sample(4, user="Ada\r\nX-Injected: 1")]
    for sample in samples[:4]:
        sample["user"] = "Ada"
    with ServedApp(json_app(answer)) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat",
            "headers": {"X-User": "{user}"},
            "body": {"text": "{user_input}"},
            "outputs": {**OUTPUTS, "available_facts": "$.facts"},
            "retries": 0,
        }
        path = write_scenario(tmp_path, samples, target)
        first = _run(str(path), "--out", str(tmp_path / "out"))
        target["outputs"] = OUTPUTS  # $..text: the JSONPath library descends the whole reply
        (tmp_path / "b").mkdir()
        write_scenario(tmp_path / "b", samples, target)
        second = _run(str(tmp_path / "b" / "scenario.yaml"), "--out", str(tmp_path / "out2"))
        run_id = records(tmp_path / "out")[0]["run_id"]
        before = len(asked)
        resumed = _run("--resume", run_id)
    assert first.exit_code == 1, first.output  # the target-error gate, not a crash (2)
    assert second.exit_code == 1, second.output
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert sorted(by_id) == ["s000", "s001", "s002", "s003", "s004"]
    assert by_id["s000"]["status"] == "scored"
    assert by_id["s001"]["status"] == "target_error" and "deeper than 100 levels" in by_id["s001"]["target_error"]
    assert by_id["s002"]["status"] == "target_error" and "deeper than 100 levels" in by_id["s002"]["target_error"]
    assert by_id["s003"]["status"] == "target_error" and "not JSON" in by_id["s003"]["target_error"]
    injected = by_id["s004"]
    assert injected["status"] == "target_error" and "header X-User" in injected["target_error"]
    assert "Erinnere mich an Nummer 4" not in asked  # nothing was sent for it
    again = {r["response_id"]: r for r in records(tmp_path / "out2")}
    assert again["s002"]["status"] == "target_error" and "deeper than 100" in again["s002"]["target_error"]
    assert again["s000"]["status"] == "scored"
    assert resumed.exit_code == 1, resumed.output
    assert "judged now: 0" in resumed.output
    assert len(asked) == before  # the stored target errors are not asked for again


def test_a_redirect_to_another_port_is_a_target_error_and_no_header_reaches_it(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSISTANT_KEY", "key-4711-never-elsewhere")
    elsewhere: list[dict[str, str]] = []

    @web.middleware
    async def other(request: web.Request, handler: Any) -> web.Response:  # any method, any path
        elsewhere.append(dict(request.headers))
        return web.json_response({"answer": "von woanders", "intent": "reminder"})

    with ServedApp(web.Application(middlewares=[other])) as stranger:

        async def redirect(request: web.Request, body: dict[str, Any]) -> web.Response:
            raise web.HTTPFound(f"{stranger.url}/chat")

        with ServedApp(json_app(redirect)) as server:
            target = {
                "type": "http",
                "url": f"{server.url}/chat",
                "headers": {"X-Api-Key": "${ASSISTANT_KEY}"},
                "body": {"text": "{user_input}"},
                "outputs": OUTPUTS,
            }
            path = write_scenario(tmp_path, [_sample(0)], target)
            result = _run(str(path), "--out", str(tmp_path / "out"))
    assert elsewhere == []  # no request (and no header) reached the other port
    assert result.exit_code == 1, result.output
    (rec,) = records(tmp_path / "out")
    assert rec["status"] == "target_error" and rec["target"]["status"] == 302
    assert f"redirects to {stranger.url}/chat" in rec["target_error"]


def test_a_body_that_stops_after_the_headers_is_a_timeout_and_retried(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_wait(monkeypatch)
    calls: dict[str, int] = {}

    async def drip(request: web.Request) -> web.StreamResponse:
        text = (await request.json())["text"]
        calls[text] = calls.get(text, 0) + 1
        body = json.dumps({"answer": "Gern.", "intent": "reminder"}).encode()
        if calls[text] == 1 or text.endswith(" 1"):  # the first attempt (always, for sample 1) stalls
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            response.content_length = len(body)
            await response.prepare(request)
            await response.write(body[:5])
            await asyncio.sleep(5)
            return response
        return web.json_response(json.loads(body))

    application = web.Application()
    application.router.add_post("/chat", drip)
    with ServedApp(application) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": OUTPUTS,
            "timeout": 0.5,
            "retries": 1,
        }
        path = write_scenario(tmp_path, [_sample(0), _sample(1)], target)
        result = _run(str(path), "--out", str(tmp_path / "out"))
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert by_id["s000"]["status"] == "scored" and by_id["s000"]["target"]["attempts"] == 2
    stalled = by_id["s001"]
    assert stalled["status"] == "target_error" and "timed out" in stalled["target_error"]
    assert "after 2 attempts" in stalled["target_error"]
    assert result.exit_code == 1, result.output


def test_data_rows_cannot_rewrite_the_url(tmp_path: Path, bqas_home: Path) -> None:
    """``{uid}`` and the target's conversation id are percent-encoded as a path segment and a query value;
    a value that would still change the path (``..``) is a target error, sent nowhere."""
    seen: list[tuple[str, str]] = []

    @web.middleware
    async def anything(request: web.Request, handler: Any) -> web.Response:  # every path, matched or not
        raw = request.raw_path
        seen.append((raw, unquote(raw.split("?")[0].removeprefix("/chat/"))))
        return web.json_response({"answer": "Gern.", "intent": "reminder", "session": "../../admin?y=2"})

    application = web.Application(middlewares=[anything])
    samples = [
        _sample(0, uid="../../../admin?x=1#frag"),
        _sample(1, uid="a\r\nb c"),
        _sample(2, uid=".."),
        {"id": "c", "uid": "u", "expected_intent": "reminder", "turns": [{"user_input": "a"}, {"user_input": "b"}]},
    ]
    with ServedApp(application) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat/{{uid}}?session={{conversation_id}}",
            "body": {"text": "{user_input}"},
            "outputs": {**OUTPUTS, "conversation_id": "$.session"},
        }
        path = write_scenario(tmp_path, samples, target, concurrency=1)
        result = _run(str(path), "--out", str(tmp_path / "out"))
    assert seen and all(raw.startswith("/chat/") for raw, _ in seen), seen
    assert not any("admin?x=1" in raw or raw.startswith("/admin") for raw, _ in seen)
    paths = {uid: raw for raw, uid in seen}
    assert {"../../../admin?x=1#frag", "a\r\nb c"} <= set(paths)  # each arrived whole
    for uid in ("../../../admin?x=1#frag", "a\r\nb c"):
        assert len(paths[uid].split("?")[0].split("/")) == 3, paths[uid]  # as one segment under /chat/
        assert paths[uid].count("?") == 1  # only the template's own query
    second_turn = [raw for raw, uid in seen if uid == "u"][1]
    path_part, _, query = second_turn.partition("?")
    assert path_part == "/chat/u" and parse_qs(query) == {"session": ["../../admin?y=2"]}  # one query value
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert by_id["s000"]["status"] == "scored" and by_id["c#1"]["status"] == "scored"
    dots = by_id["s002"]
    assert dots["status"] == "target_error" and "would change the URL" in dots["target_error"]
    assert result.exit_code == 1, result.output


SECRET = "sk/LIVE+9z=Q7-abcdef0123456789"  # "/", "+" and "=": every escaping differs from the value
OTHER = "tok-SECRET-2718-defaulted"


def _leaks(data: bytes) -> list[str]:
    forms = {
        SECRET,
        SECRET.replace("/", "\\/"),
        quote(SECRET, safe=""),
        base64.b64encode(SECRET.encode()).decode(),
        OTHER,
        quote(OTHER, safe=""),
        SECRET[:8],  # a cut that falls inside the key
        OTHER[:10],
    }
    return [f for f in forms if f.encode() in data]


def test_no_secret_form_survives_in_stored_or_shown_output(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${VAR:-default}`` and ``${VAR}`` values echoed as they are, JSON-escaped, percent-encoded, in
    Base64, as the conversation id, where the 300-byte error excerpt and the 16 KB raw cut fall inside
    them: none reaches the store, results.jsonl, report.html, junit.xml or the command's output."""
    _no_wait(monkeypatch)
    monkeypatch.setenv("ASSISTANT_KEY", SECRET)
    monkeypatch.setenv("ASSISTANT_OTHER", OTHER)

    async def echo(request: web.Request, body: dict[str, Any]) -> web.Response:
        key, other = request.headers["X-Api-Key"], request.headers["X-Other"]
        n = int(body["text"].rsplit(" ", 1)[1])
        good = {"intent": "reminder", "session": "sess"}
        if n == 0:  # JSON-escaped (orjson never writes "\/", many servers do)
            raw = json.dumps({**good, "answer": f"Dein Schlüssel: {key} / {other}"}).replace("/", "\\/")
            return web.Response(text=raw, content_type="application/json")
        if n == 1:
            return web.json_response({**good, "answer": base64.b64encode(key.encode()).decode()})
        if n == 2:
            return web.json_response({**good, "answer": f"{quote(key, safe='')} {quote(other, safe='')}"})
        if n == 3:
            return web.json_response({**good, "answer": "Gern.", "session": f"sess-{key}"})
        if n == 4:  # the error excerpt's cut falls inside the key
            return web.Response(text="x" * 290 + key + other, status=500)
        if n == 5:  # the raw reply's 16 KB cut falls inside the key
            return web.json_response({**good, "answer": "Gern.", "pad": "p" * (16 * 1024 - 40) + key * 3})
        if n == 6:  # a reply that is not JSON, quoted in the error
            return web.Response(text="y" * 295 + other, content_type="text/plain")
        return web.json_response({**good, "answer": "Gern."})

    out = tmp_path / "out"
    with ServedApp(json_app(echo)) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat",
            "headers": {"X-Api-Key": "${ASSISTANT_KEY:-none}", "X-Other": "${ASSISTANT_OTHER}"},
            "body": {"text": "{user_input}"},
            "outputs": {**OUTPUTS, "conversation_id": "$.session"},
            "retries": 0,
        }
        path = write_scenario(tmp_path, [_sample(i) for i in range(8)], target)
        result = _run(str(path), "--out", str(out))
    assert result.exit_code == 1, result.output
    by_id = {r["response_id"]: r for r in records(out)}
    assert by_id["s000"]["inputs"]["response"] == "Dein Schlüssel: [secret ASSISTANT_KEY] / [secret ASSISTANT_OTHER]"
    assert by_id["s003"]["target"]["conversation_id"] == "sess-[secret ASSISTANT_KEY]"
    assert "HTTP 500" in by_id["s004"]["target_error"]
    files = [p for root in (bqas_home, out) for p in root.rglob("*") if p.is_file()]
    assert {"bqas.sqlite", "report.html", "junit.xml", "results.jsonl"} <= {p.name for p in files}
    assert _leaks(result.output.encode()) == []
    for file in files:
        assert _leaks(file.read_bytes()) == [], file


def test_any_other_failure_in_one_samples_call_is_its_target_error(tmp_path: Path, bqas_home: Path) -> None:
    """A python target's reply that can be neither written as JSON nor printed: the exception is that
    sample's target error, and the other sample is scored."""
    target = {"type": "python", "function": "hostile_functions:unprintable"}
    path = write_scenario(tmp_path, [_sample(0), _sample(1)], target)
    result = _run(str(path), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output
    by_id = {r["response_id"]: r for r in records(tmp_path / "out")}
    assert by_id["s000"]["status"] == "scored"
    assert by_id["s001"]["status"] == "target_error"
    assert by_id["s001"]["target_error"] == "RuntimeError: repr refused"


def test_same_origin_redirects_are_followed_only_when_asked(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``redirects: same-origin``: a 307 to another path of the same server is followed (the body goes
    along); a 302 to another port is still a target error that sends nothing there. By default the 307
    is a target error too."""
    monkeypatch.setenv("ASSISTANT_KEY", "key-4711-never-elsewhere")
    elsewhere: list[str] = []

    @web.middleware
    async def other(request: web.Request, handler: Any) -> web.Response:
        elsewhere.append(request.raw_path)
        return web.json_response({"answer": "von woanders", "intent": "reminder"})

    with ServedApp(web.Application(middlewares=[other])) as stranger:
        moved: list[tuple[str, str | None, dict[str, Any]]] = []

        async def chat(request: web.Request) -> web.Response:
            body = await request.json()
            if body["text"].endswith(" 1"):
                raise web.HTTPFound(f"{stranger.url}/chat")
            raise web.HTTPTemporaryRedirect("/v2/chat")

        async def v2(request: web.Request) -> web.Response:
            body = await request.json()
            moved.append((request.method, request.headers.get("X-Api-Key"), body))
            return web.json_response({"answer": "Gern.", "intent": "reminder"})

        application = web.Application()
        application.router.add_post("/chat", chat)
        application.router.add_post("/v2/chat", v2)
        with ServedApp(application) as server:
            target = {
                "type": "http",
                "url": f"{server.url}/chat",
                "headers": {"X-Api-Key": "${ASSISTANT_KEY}"},
                "body": {"text": "{user_input}"},
                "outputs": OUTPUTS,
                "retries": 0,
            }
            (tmp_path / "same").mkdir()
            write_scenario(tmp_path / "same", [_sample(0), _sample(1)], {**target, "redirects": "same-origin"})
            followed = _run(str(tmp_path / "same" / "scenario.yaml"), "--out", str(tmp_path / "a"))
            write_scenario(tmp_path, [_sample(0)], target)
            default = _run(str(tmp_path / "scenario.yaml"), "--out", str(tmp_path / "b"))
    assert elsewhere == []
    assert moved == [("POST", "key-4711-never-elsewhere", {"text": "Erinnere mich an Nummer 0"})]
    assert followed.exit_code == 1, followed.output
    same = {r["response_id"]: r for r in records(tmp_path / "a")}
    assert same["s000"]["status"] == "scored" and same["s000"]["target"]["status"] == 200
    assert same["s001"]["status"] == "target_error" and "another origin; not followed" in same["s001"]["target_error"]
    (plain,) = records(tmp_path / "b")
    assert plain["status"] == "target_error" and "redirects to /v2/chat" in plain["target_error"]
    assert default.exit_code == 1, default.output
