"""A rule-based German voice assistant for teachers, served on 127.0.0.1 (``bqas demo-assistant``).

It recognises a few teacher intents by keywords and answers in one sentence. It is wrong on purpose
now and then: every seventh request (by a hash of its text, so runs agree) gets a related intent and a
less fitting answer, and a command it does not understand (a typo in the keyword) is ``unknown``.
Three doors to the same rules, one per kind of target: ``POST /chat`` (any JSON endpoint: ``{text,
session}`` -> ``{answer, intent: {name}, sources: [{text}]}``), ``POST /v1/chat/completions`` (OpenAI:
the message is that JSON) and ``POST /v1/chat-messages`` (Dify's blocking chat-messages reply).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import zlib
from collections import OrderedDict
from typing import Any

# Conversations remembered (the turn count of each), the least recently used forgotten first, and the
# longest session id taken: a client cannot grow the assistant's memory without bound.
MAX_SESSIONS = 10_000
MAX_SESSION_CHARS = 200


class BadRequest(ValueError):
    """A request body the assistant cannot read (answered 400 with the reason)."""


RULES: tuple[tuple[str, str, str], ...] = (  # (intent, pattern, answer; {rest} is what the teacher said after it)
    ("reminder_schedule", r"\b(jeden|jede|wöchentlich|immer am)\b", "Wiederkehrende Erinnerung angelegt: {rest}."),
    ("reminder", r"\w*erinner\w*|\bmerk\w*|nicht vergessen|denk bitte an", "Alles klar, ich erinnere dich: {rest}."),
    ("parent_letter", r"elternbrief|elterninfo\w*|brief an die eltern", "Ich entwerfe den Elternbrief: {rest}."),
    ("class_message", r"nachricht an die klasse|der klasse schreiben", "Nachricht an die Klasse vorbereitet: {rest}."),
    ("worksheet_generate", r"arbeitsblatt|übungsblatt", "Ich erstelle ein Arbeitsblatt: {rest}."),
    ("quiz_generate", r"\bquiz\b|\btest\b|kahoot|fragen", "Hier ist ein kurzes Quiz: {rest}."),
    (
        "student_observation",
        r"notiz zu|beobachtung|halte fest|notiere bei|vermerk\w*",
        "Beobachtung gespeichert: {rest}.",
    ),
    ("homework_check", r"hausaufgabe", "Hausaufgabenkontrolle notiert: {rest}."),
    ("task_summary", r"zusammenfassung|was steht an|was liegt an", "Heute stehen drei Aufgaben an: {rest}."),
)
RELATED = {"reminder": "reminder_schedule", "reminder_schedule": "reminder", "worksheet_generate": "quiz_generate",
           "quiz_generate": "worksheet_generate", "parent_letter": "class_message", "class_message": "parent_letter",
           "student_observation": "homework_check", "homework_check": "student_observation"}  # fmt: skip
FACTS = (  # the knowledge of the Dify door (its "retriever")
    "Die Lehrerkonferenz findet am Donnerstag um 14 Uhr im Raum 104 statt.",
    "Der Elternsprechtag ist am 12. März von 15 bis 19 Uhr.",
    "Die Hausaufgaben der 7b werden jeden Montag eingesammelt.",
    "Der Wandertag der Unterstufe ist am 3. Juni.",
)


def understand(text: str) -> tuple[str, str]:
    """(intent, answer) for what the teacher said."""
    lowered = text.lower()
    for intent, pattern, answer in RULES:
        match = re.search(pattern, lowered)
        if match is None:
            continue
        rest = re.sub(r"^(?:\W|mich|mir|bitte|ans|an|am|zum|zur|zu|für)+", "", text[match.end() :], flags=re.I).strip(
            " ,.!?"
        )
        rest = rest or text.strip(" .!?")
        if zlib.crc32(text.encode()) % 7 == 0 and intent in RELATED:  # wrong on purpose, reproducibly
            intent = RELATED[intent]
            return intent, f"Erledigt: {rest}."
        return intent, answer.format(rest=rest)
    return "unknown", "Das habe ich leider nicht verstanden. Kannst du es anders sagen?"


def answer(sample: dict[str, Any]) -> dict[str, Any]:
    """The same rules as a ``type: python`` target: ``(sample) -> {response, detected_intent}``."""
    intent, text = understand(str(sample.get("user_input") or ""))
    return {"response": text, "detected_intent": intent}


def retrieve(text: str) -> list[str]:
    """The facts holding a word of five letters or more of the question."""
    words = re.findall(r"\w{5,}", text.lower())
    return [f for f in FACTS if any(w in f.lower() for w in words)]


def build_app(latency_ms: float = 0.0) -> Any:
    """The aiohttp application (``latency_ms``: wait this long before each answer)."""
    from aiohttp import web

    turns: OrderedDict[str, int] = OrderedDict()

    async def answer_of(text: str, session: str | None) -> dict[str, Any]:
        if latency_ms:
            await asyncio.sleep(latency_ms / 1000)
        session = session or uuid.uuid4().hex
        turns[session] = turns.get(session, 0) + 1
        turns.move_to_end(session)
        while len(turns) > MAX_SESSIONS:
            turns.popitem(last=False)
        intent, answer = understand(text)
        return {"answer": answer, "intent": {"name": intent}, "sources": [{"text": f} for f in retrieve(text)],
                "session": session, "turn": turns[session]}  # fmt: skip

    async def chat(request: web.Request) -> web.Response:
        body = await _body(request)
        return web.json_response(await answer_of(_text(body, "text"), _session(body, "session")))

    async def openai(request: web.Request) -> web.Response:
        body = await _body(request)
        messages = body.get("messages", [])
        if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content", ""), str) for m in messages
        ):
            raise BadRequest("messages: expected a list of {role, content} objects with text content")
        user = [m.get("content", "") for m in messages if m.get("role") == "user"]
        reply = await answer_of(user[-1] if user else "", None)
        content = json.dumps({"answer": reply["answer"], "intent": reply["intent"]["name"]}, ensure_ascii=False)
        usage = {"prompt_tokens": sum(len(u.split()) for u in user), "completion_tokens": len(reply["answer"].split())}
        return web.json_response({"object": "chat.completion", "model": body.get("model", "demo"), "usage": usage,
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                               "finish_reason": "stop"}]})  # fmt: skip

    async def dify(request: web.Request) -> web.Response:
        body = await _body(request)
        reply = await answer_of(_text(body, "query"), _session(body, "conversation_id"))
        facts = [s["text"] for s in reply["sources"]]
        answer = facts[0] if facts else "Dazu finde ich in den Unterlagen nichts."
        resources = [
            {"position": i + 1, "dataset_name": "schule", "score": 0.8, "content": f} for i, f in enumerate(facts)
        ]
        return web.json_response({"event": "message", "message_id": uuid.uuid4().hex, "mode": "chat",
                                  "conversation_id": reply["session"], "answer": answer,
                                  "metadata": {"retriever_resources": resources,
                                               "usage": {"prompt_tokens": 40, "completion_tokens": len(answer.split()),
                                                         "total_tokens": 40 + len(answer.split())}}})  # fmt: skip

    @web.middleware
    async def bad_requests(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except BadRequest as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return response

    app = web.Application(middlewares=[bad_requests])
    app.router.add_post("/chat", chat)
    app.router.add_post("/v1/chat/completions", openai)
    app.router.add_post("/v1/chat-messages", dify)
    app.router.add_get("/healthz", healthz)
    from bqas.demo.docs_rag import add_docs_routes

    add_docs_routes(app)  # /docs/v1/chat-messages: answers from the demo's own document folder
    return app


async def _body(request: Any) -> dict[str, Any]:
    """The request's JSON object; :class:`BadRequest` for anything else."""
    try:
        body = json.loads(await request.read())
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's limit
        raise BadRequest("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest(f"expected a JSON object, got {type(body).__name__}")
    return body


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{name}: expected text")
    return value


def _session(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value in (None, ""):
        return None
    if not isinstance(value, str) or len(value) > MAX_SESSION_CHARS:
        raise BadRequest(f"{name}: expected an id of at most {MAX_SESSION_CHARS} characters")
    return value


async def healthz(_: Any) -> Any:
    from aiohttp import web

    return web.json_response({"status": "ok"})


def serve(port: int, latency_ms: float = 0.0, host: str = "127.0.0.1") -> None:
    """Serve until interrupted."""
    from aiohttp import web

    print(f"demo assistant on http://{host}:{port} (POST /chat, /v1/chat/completions, /v1/chat-messages)", flush=True)
    web.run_app(build_app(latency_ms), host=host, port=port, print=None, access_log=None)
