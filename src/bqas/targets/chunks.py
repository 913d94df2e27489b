"""Streamed answers of the openai and http kinds, from their events to one reply.

- openai (``stream: true``): chat completion chunks; ``choices[0].delta.content`` pieces make the
  message, ``usage`` comes from the last chunk that has it (``stream_options.include_usage``); the stream
  ends with ``data: [DONE]`` or a ``finish_reason``, else it was cut.
- http (``stream: sse`` or ``ndjson``): each event's JSON; ``chunk`` (a JSONPath) gives a piece of
  ``response``, and each ``outputs`` field takes the last value an event holds for it.

The time to first token is the arrival of the first event with a non-empty piece of the answer.
"""

from __future__ import annotations

from typing import Any

from bqas.targets.mapping import map_outputs
from bqas.targets.reply import TargetFailure, TargetReply, excerpt
from bqas.targets.streaming import StreamedAnswer, event_json


def _failure(reason: str, answer: StreamedAnswer) -> TargetFailure:
    return TargetFailure(
        reason, status=answer.status, raw=answer.body, attempts=answer.attempts, latency_ms=answer.latency_ms
    )


def openai_message(answer: StreamedAnswer, reply: TargetReply) -> tuple[str, Any]:
    """The streamed message and the usage reported with it (None when not given)."""
    pieces: list[str] = []
    usage: Any = None
    finished = False
    for event in answer.events:
        if event.data.strip() == "[DONE]":
            finished = True
            break
        chunk = event_json(event)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error") is not None:
            raise _failure(f"error in the stream after {len(pieces)} pieces: {excerpt(str(chunk['error']))}", answer)
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(piece, str) and piece:
            if reply.ttft_ms is None:
                reply.ttft_ms = event.at_ms
            pieces.append(piece)
        if choice.get("finish_reason"):
            finished = True
    if not finished:
        raise _failure(
            f"the stream ended without [DONE] or a finish_reason (cut off after {len(answer.events)} events): "
            f"{excerpt(''.join(pieces))}",
            answer,
        )
    return "".join(pieces), usage


def http_fields(answer: StreamedAnswer, chunk: str, outputs: dict[str, str], reply: TargetReply) -> dict[str, Any]:
    """The mapped fields of a streamed http reply: ``response`` from the chunks, the rest from ``outputs``."""
    pieces: list[str] = []
    mapped: dict[str, Any] = {}
    for event in answer.events:
        if event.data.strip() == "[DONE]":
            break
        body = event_json(event)
        found = map_outputs(body, {"response": chunk}).get("response")
        values = found if isinstance(found, list) else [] if found is None else [found]
        piece = "".join(v if isinstance(v, str) else str(v) for v in values if v is not None)
        if piece:
            if reply.ttft_ms is None:
                reply.ttft_ms = event.at_ms
            pieces.append(piece)
        if outputs:
            mapped.update((k, v) for k, v in map_outputs(body, outputs).items() if v not in (None, [], ""))
    if pieces:
        mapped["response"] = "".join(pieces)
    return mapped
