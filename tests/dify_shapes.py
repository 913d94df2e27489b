"""A local Dify on 127.0.0.1 that speaks each of Dify's reply shapes: chat, agent and chatflow apps streamed
(``message`` / ``agent_message`` events, ``message_end`` with usage and retriever resources), a chatflow
app that streams although asked to block, workflow apps streamed and blocking, completion apps, an
``error`` event in the middle of a stream and a stream cut off. ``shape`` picks one per test."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

FACT = "Die Lehrerkonferenz findet am Donnerstag um 14 Uhr im Raum 104 statt."
USAGE = {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912, "latency": 0.4}


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


class Dify:
    """Records each request (path, body, Authorization) and answers in the shape ``self.shape``."""

    def __init__(self, shape: str = "agent") -> None:
        self.shape = shape
        self.label = "text/event-stream"  # the Content-Type of a stream (some servers call it JSON)
        self.requests: list[tuple[str, dict[str, Any], str | None]] = []

    def app(self) -> web.Application:
        app = web.Application()
        for path in ("/v1/chat-messages", "/v1/completion-messages", "/v1/workflows/run"):
            app.router.add_post(path, self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.requests.append((request.path, body, request.headers.get("Authorization")))
        if request.path.endswith("/workflows/run") and self.shape == "workflow-blocking":
            return web.json_response(
                {
                    "workflow_run_id": "run-1",
                    "task_id": "task-1",
                    "data": {
                        "id": "run-1",
                        "workflow_id": "wf-1",
                        "status": "succeeded",
                        "outputs": {"answer": f"Gern: {body['inputs']['frage']}", "intent": "reminder"},
                        "error": None,
                        "elapsed_time": 0.8,
                        "total_tokens": 321,
                        "total_steps": 3,
                    },
                }
            )
        response = web.StreamResponse(headers={"Content-Type": self.label, "Cache-Control": "no-cache"})
        await response.prepare(request)
        for event in self._events(body):
            if event is None:  # the connection drops in the middle of the stream
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(_sse(event))
        await response.write_eof()
        return response

    def _events(self, body: dict[str, Any]) -> list[dict[str, Any] | None]:
        conversation = body.get("conversation_id") or f"conv-{len(self.requests)}"
        common = {"conversation_id": conversation, "message_id": f"msg-{len(self.requests)}", "task_id": "t"}
        end = {
            "event": "message_end",
            **common,
            "metadata": {"usage": USAGE, "retriever_resources": [{"position": 1, "content": FACT}]},
        }
        query = body.get("query") or body.get("inputs", {}).get("query", "")
        if self.shape == "agent":
            return [
                {"event": "agent_thought", **common, "thought": "", "tool": ""},
                {"event": "agent_message", **common, "answer": "Die Konferenz "},
                {"event": "agent_message", **common, "answer": f"ist am Donnerstag ({query})."},
                end,
            ]
        if self.shape in ("chatflow", "completion"):
            return [
                {"event": "workflow_started", **common, "data": {"id": "r"}},
                {"event": "node_finished", **common, "data": {"id": "n"}},
                {"event": "message", **common, "answer": "Am Donnerstag"},
                {"event": "message_replace", **common, "answer": "Die Konferenz ist "},
                {"event": "message", **common, "answer": "am Donnerstag."},
                {"event": "workflow_finished", **common, "data": {"status": "succeeded", "outputs": {}}},
                end,
            ]
        if self.shape == "workflow":
            outputs = {"answer": f"Gern: {body['inputs']['frage']}", "intent": "reminder"}
            return [
                {"event": "workflow_started", "task_id": "t", "workflow_run_id": "run-1", "data": {"id": "run-1"}},
                {"event": "node_started", "task_id": "t", "data": {"id": "n1"}},
                {"event": "text_chunk", "task_id": "t", "data": {"text": "Gern"}},
                {
                    "event": "workflow_finished",
                    "task_id": "t",
                    "workflow_run_id": "run-1",
                    "data": {"status": "succeeded", "outputs": outputs, "total_tokens": 77},
                },
            ]
        if self.shape == "workflow-failed":
            return [
                {
                    "event": "workflow_finished",
                    "task_id": "t",
                    "data": {"status": "failed", "outputs": None, "error": "node llm: model quota exceeded"},
                }
            ]
        if self.shape == "error":
            return [
                {"event": "message", **common, "answer": "Die Konferenz"},
                {
                    "event": "error",
                    **common,
                    "status": 400,
                    "code": "completion_request_error",
                    "message": "Quota exceeded",
                },
            ]
        if self.shape == "cut":
            return [{"event": "message", **common, "answer": "Die Konferenz"}, None]
        if self.shape == "no-end":
            return [{"event": "message", **common, "answer": "Die Konferenz"}]
        raise AssertionError(f"unknown shape {self.shape}")
