"""Asking a Dify app, in each of its modes, streamed or blocking, into one stored reply.

- ``chat`` (chat, agent and chatflow apps): ``POST {base_url}/chat-messages`` with ``query`` and the
  conversation id of the previous turn. Streamed, the answer is the ``message`` / ``agent_message``
  events' pieces (``message_replace`` starts it again) and ``message_end`` brings ``metadata.usage``,
  ``metadata.retriever_resources`` and the conversation id; a stream without ``message_end`` was cut.
- ``completion``: ``POST {base_url}/completion-messages``, the user's message as the input ``query``;
  read as a chat answer.
- ``workflow``: ``POST {base_url}/workflows/run``; the reply's ``data.outputs`` (streamed: the
  ``workflow_finished`` event's) is what ``outputs`` maps; ``text_chunk`` events are the first token.

A streamed reply is assembled into the shape of the blocking one, so ``outputs`` maps both alike. An
``error`` event, a failed workflow or a cut stream is a target error with what was read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bqas.targets.config import DifyTarget, expand_env
from bqas.targets.mapping import UnmappableReply, fill, map_outputs
from bqas.targets.reply import TargetFailure, TargetReply, excerpt
from bqas.targets.streaming import StreamedAnswer, StreamEvent, event_json, send_streaming
from bqas.targets.turn_parts import (
    SampleProblem,
    as_judge_fields,
    bearer_header,
    count_tokens,
    reply_json,
    user_message,
)

if TYPE_CHECKING:
    from bqas.targets.kinds import Conversation, TargetClient

_PATHS = {"chat": "/chat-messages", "completion": "/completion-messages", "workflow": "/workflows/run"}
# Output keys read as a workflow's answer when ``outputs`` maps no ``response``, in this order.
_ANSWER_KEYS = ("answer", "text", "result", "output")


def request_of(t: DifyTarget, data: dict[str, Any], text: str | None, conversation: Conversation) -> dict[str, Any]:
    """The request body of one turn."""
    inputs = fill(t.inputs, data, "target.inputs")
    payload: dict[str, Any] = {"inputs": inputs, "response_mode": t.response_mode, "user": t.user}
    if t.mode == "chat":
        payload["query"] = text
        payload["conversation_id"] = conversation.remote_id or ""
    elif text is not None:  # completion and workflow apps take the user's message as an input variable
        inputs.setdefault("query", text)
    return payload


async def ask_dify(
    client: TargetClient, t: DifyTarget, data: dict[str, Any], conversation: Conversation, reply: TargetReply
) -> dict[str, Any]:
    """Ask one turn; returns the reply in its blocking shape (and sets the reply's figures)."""
    try:
        text: str | None = user_message(t, data)
    except SampleProblem:
        if t.mode == "chat" or not t.inputs:
            raise
        text = None  # a workflow or completion app may take all it needs from target.inputs
    payload = request_of(t, data, text, conversation)
    url = expand_env(t.base_url, "target.base_url").rstrip("/") + _PATHS[t.mode]
    # A chat turn without a conversation id opens a new conversation: sent twice, it leaves an unused one
    # behind. A later turn sent twice is taken twice into the same conversation. The other modes keep
    # nothing between requests.
    safe = t.idempotent if t.idempotent is not None else (t.mode != "chat" or conversation.remote_id is None)
    answer = await send_streaming(
        client.transport,
        "POST",
        url,
        bearer_header(t.api_key_env, "target.api_key_env"),
        payload,
        fmt="sse",
        replay_safe=safe,
    )
    reply.status, reply.latency_ms, reply.attempts = answer.status, answer.latency_ms, answer.attempts
    reply.keep_raw(answer.body)
    if not answer.streamed:
        body = reply_json(answer.body)
        if not isinstance(body, dict):
            raise UnmappableReply(f"not a Dify reply (no JSON object): {excerpt(answer.body)}")
        return body
    return _assembled(t, answer.events, answer, reply)


def _assembled(t: DifyTarget, events: list[StreamEvent], answer: StreamedAnswer, reply: TargetReply) -> dict[str, Any]:
    """Dify's events as its blocking reply; the first piece of the answer is the time to first token."""
    pieces: list[str] = []
    body: dict[str, Any] = {}
    finished = False
    for event in events:
        found = event_json(event)
        if not isinstance(found, dict):
            continue
        kind = found.get("event") or event.name
        if kind == "error":
            raise TargetFailure(
                f"Dify error event after {len(pieces)} pieces of the answer: {found.get('status', '')} "
                f"{found.get('code', '')}: {found.get('message', '')}".replace("  ", " "),
                status=answer.status,
                raw=answer.body,
                attempts=answer.attempts,
                latency_ms=event.at_ms,
            )
        for key in ("conversation_id", "message_id", "task_id", "workflow_run_id"):
            if isinstance(found.get(key), str) and found[key]:
                body[key] = found[key]
        if kind in ("message", "agent_message") and isinstance(found.get("answer"), str):
            if found["answer"] and reply.ttft_ms is None:
                reply.ttft_ms = event.at_ms
            pieces.append(found["answer"])
        elif kind == "message_replace" and isinstance(found.get("answer"), str):
            pieces = [found["answer"]]
        elif kind == "text_chunk" and reply.ttft_ms is None:
            text = (found.get("data") or {}).get("text") if isinstance(found.get("data"), dict) else None
            if isinstance(text, str) and text:
                reply.ttft_ms = event.at_ms
        elif kind == "message_end" and t.mode != "workflow":
            body["metadata"] = found.get("metadata") if isinstance(found.get("metadata"), dict) else {}
            finished = True
        elif kind == "workflow_finished" and t.mode == "workflow":
            body["data"] = found.get("data") if isinstance(found.get("data"), dict) else {}
            finished = True
    if not finished:
        last = "workflow_finished" if t.mode == "workflow" else "message_end"
        raise TargetFailure(
            f"the stream ended before {last} (cut off after {len(events)} events): {excerpt(''.join(pieces))}",
            status=answer.status,
            raw=answer.body,
            attempts=answer.attempts,
            latency_ms=answer.latency_ms,
        )
    if t.mode != "workflow":
        body["answer"] = "".join(pieces)
    return body


def judge_fields(t: DifyTarget, body: dict[str, Any], reply: TargetReply) -> dict[str, Any]:
    """The judge's inputs from Dify's reply (blocking shape) and the reply's tokens."""
    if t.mode == "workflow":
        return _workflow_fields(t, body, reply)
    if not isinstance(body.get("answer"), str):
        raise UnmappableReply(f"not a Dify {t.mode} reply (no answer): {excerpt(reply.raw)}")
    found = body.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    count_tokens(reply, metadata.get("usage"))
    fields: dict[str, Any] = {"response": body["answer"]}
    if t.mode == "chat":
        resources = metadata.get("retriever_resources")
        resources = resources if isinstance(resources, list) else []
        fields["available_facts"] = [
            r["content"] for r in resources if isinstance(r, dict) and isinstance(r.get("content"), str)
        ]
    if t.outputs:
        fields.update(as_judge_fields(map_outputs(body, t.outputs), (), t.outputs))
    return fields


def _workflow_fields(t: DifyTarget, body: dict[str, Any], reply: TargetReply) -> dict[str, Any]:
    data = body.get("data")
    if not isinstance(data, dict):
        raise UnmappableReply(f"not a Dify workflow reply (no data): {excerpt(reply.raw)}")
    status = data.get("status")
    if status not in (None, "succeeded"):
        raise TargetFailure(
            f"the workflow {status}: {data.get('error') or 'no reason given'}",
            status=reply.status,
            raw=reply.raw.encode(),
            attempts=reply.attempts,
            latency_ms=reply.latency_ms,
        )
    total = data.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
        reply.total_tokens = total
    outputs = data.get("outputs")
    outputs = outputs if isinstance(outputs, dict) else {}
    fields: dict[str, Any] = {}
    if "response" not in t.outputs:
        key = next((k for k in _ANSWER_KEYS if isinstance(outputs.get(k), str)), None)
        if key is None:
            texts = [k for k, v in outputs.items() if isinstance(v, str)]
            key = texts[0] if len(texts) == 1 else None
        if key is None:
            raise UnmappableReply(
                f"the workflow's outputs ({', '.join(outputs) or 'none'}) hold no answer: "
                "map one with target.outputs, e.g. response: $.answer"
            )
        fields["response"] = outputs[key]
    if t.outputs:
        required = ("response",) if "response" in t.outputs else ()
        fields.update(as_judge_fields(map_outputs(outputs, t.outputs), required, t.outputs))
    return fields
