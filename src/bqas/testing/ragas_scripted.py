"""Scripted answers for RAGAS's judge prompts, for tests and benchmarks on ``ScriptedLLM`` (no real LLM).

:func:`ragas_responder` recognises which response model a ragas prompt asks for (from the
``response_format`` name BQAS sends, or from the output schema title that ragas writes into every prompt
and that instructor's JSON mode repeats) and answers valid, deterministic JSON derived from the prompt's
input: statements are the sentences of the text, a verdict is 1 when most words of a statement occur in
the context. Good enough to exercise every code path; it is not a judge.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bqas.testing.scripted_llm import Reply

_MODELS = (
    "NLIStatementOutput",
    "StatementFaithfulnessOutput",
    "StatementGeneratorOutput",
    "AnswerRelevanceOutput",
    "ContextRecallOutput",
    "ContextPrecisionOutput",
    "ClaimDecompositionOutput",
)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_WORD = re.compile(r"\w+", re.UNICODE)


def _text(payload: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in payload.get("messages", []))


def response_model_name(payload: dict[str, Any]) -> str | None:
    """The response model a request asks for, or None."""
    fmt = payload.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name")
    if isinstance(name, str) and name in _MODELS:
        return name
    text = _text(payload)
    for model in _MODELS:
        if f'"title": "{model}"' in text:
            return model
    return None


def prompt_input(payload: dict[str, Any]) -> dict[str, Any]:
    """The JSON input at the end of a ragas prompt (``input: {...}\\nOutput:``)."""
    messages = payload.get("messages", [])
    user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    tail = user.rsplit("input: ", 1)[-1].rsplit("\nOutput:", 1)[0]
    try:
        value = json.loads(tail)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s.strip()]


def supported(statement: str, context: str) -> int:
    """1 when at least 60 % of the statement's words (or CJK characters) occur in the context."""
    words = [w.lower() for w in _WORD.findall(statement)]
    if not words:
        return 0
    ctx = context.lower()
    return int(sum(w in ctx for w in words) / len(words) >= 0.6)


def answer_for(model: str, data: dict[str, Any]) -> dict[str, Any]:
    """A valid answer of ``model`` for the prompt input ``data``."""
    if model == "StatementGeneratorOutput":
        return {"statements": sentences(str(data.get("answer") or data.get("text") or ""))}
    if model == "ClaimDecompositionOutput":
        return {"claims": sentences(str(data.get("response", "")))}
    if model in ("NLIStatementOutput", "StatementFaithfulnessOutput"):
        context = str(data.get("context", ""))
        return {
            "statements": [
                {"statement": s, "reason": "scripted word overlap", "verdict": supported(s, context)}
                for s in data.get("statements", [])
            ]
        }
    if model == "AnswerRelevanceOutput":
        response = str(data.get("response", ""))
        vague = any(p in response.lower() for p in ("i don't know", "not sure", "不知道", "不确定"))
        return {"question": f"What does this say: {response[:60]}?", "noncommittal": int(vague)}
    if model == "ContextRecallOutput":
        context = str(data.get("context", ""))
        return {
            "classifications": [
                {"statement": s, "reason": "scripted word overlap", "attributed": supported(s, context)}
                for s in sentences(str(data.get("answer", "")))
            ]
        }
    if model == "ContextPrecisionOutput":
        verdict = supported(str(data.get("answer", "")), str(data.get("context", "")))
        return {"reason": "scripted word overlap", "verdict": verdict}
    raise ValueError(f"no scripted answer for {model}")


def ragas_responder(payload: dict[str, Any]) -> Reply | None:
    """A ``ScriptedLLM`` responder answering every ragas collections prompt with valid JSON."""
    model = response_model_name(payload)
    if model is None:
        return None
    return Reply(content=json.dumps(answer_for(model, prompt_input(payload)), ensure_ascii=False))


class NetworkBlocked(OSError):
    """A connection to anything but the loopback interface was attempted."""


@contextmanager
def loopback_only() -> Iterator[list[Any]]:
    """Refuse every socket connection that does not go to 127.0.0.1/::1 (tests: no request leaves).

    Yields the list of refused addresses, so a test can assert that nothing tried.
    """
    refused: list[Any] = []
    original = socket.socket.connect
    original_ex = socket.socket.connect_ex

    def _allowed(address: Any) -> bool:
        host = address[0] if isinstance(address, tuple) else address
        return isinstance(host, str) and (host in ("127.0.0.1", "::1", "localhost") or host.startswith("/"))

    def connect(self: socket.socket, address: Any) -> None:
        if not _allowed(address):
            refused.append(address)
            raise NetworkBlocked(f"network access to {address!r} refused in tests")
        original(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _allowed(address):
            refused.append(address)
            raise NetworkBlocked(f"network access to {address!r} refused in tests")
        return original_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    try:
        yield refused
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]
        socket.socket.connect_ex = original_ex  # type: ignore[method-assign]
