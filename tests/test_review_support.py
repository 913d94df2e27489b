"""Shared builders for the review-loop tests (records in the shape of ``JudgmentResult.to_record()``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VOICE_INPUTS = {
    "user_input": "Erinnere mich morgen an die Elternkonferenz der 7b",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Elternkonferenz der 7b.",
    "expected_intent": "reminder",
}


def voice_record(
    rid: str,
    *,
    composite: float | None = 80.0,
    verdict: str | None = "production_ready",
    safety: str = "pass",
    safety_note: str | None = None,
    faithfulness: int = 4,
    reasons: list[str] | None = None,
    inputs: dict[str, Any] | None = None,
    source: str = "r-test",
    status: str = "scored",
    unscored_reason: str | None = None,
    language: str = "de",
) -> dict[str, Any]:
    """A voice-judge result record; escalated when ``reasons`` is non-empty."""
    dims = {
        "intent_accuracy": {"value": 100.0, "backend": "offline", "method": "taxonomy:exact", "measured": True},
        "faithfulness": {"value": faithfulness, "backend": "llm", "method": "judge_prompt", "measured": True},
        "relevance": {"value": 4, "backend": "llm", "method": "judge_prompt", "measured": True},
        "coherence": {"value": 4, "backend": "llm", "method": "judge_prompt", "measured": True},
        "safety": {
            "value": safety,
            "backend": "offline",
            "method": "safety_rules",
            "measured": True,
            "note": safety_note,
        },
    }
    for prov in dims.values():
        prov.setdefault("model", None)
        prov.setdefault("note", None)
        prov.update(offline_value=None, llm_value=None)
    return {
        "response_id": rid,
        "judge": "voice",
        "language": language,
        **{name: prov["value"] for name, prov in dims.items()},
        "status": status,
        "dimensions": dims,
        "composite_score": composite,
        "verdict": verdict,
        "escalation": "human_review" if reasons else None,
        "escalation_reasons": list(reasons or []),
        "reasoning": "Die Antwort trifft die Absicht; <b>kein</b> HTML bitte.",
        "unscored_reason": unscored_reason,
        "backend": "offline+llm",
        "run_id": source,
        "inputs": dict(VOICE_INPUTS if inputs is None else inputs),
    }


class Receiver:
    """A fake webhook receiver on 127.0.0.1: records JSON bodies; answers ``statuses`` in turn, then 200."""

    def __init__(self, statuses: list[int] | None = None):
        self.bodies: list[dict[str, Any]] = []
        self.statuses = list(statuses or [])
        self.event = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.bodies.append({"status": status, "body": body, "content_type": self.headers["Content-Type"]})
                self.send_response(status)
                self.end_headers()
                receiver.event.set()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    @contextmanager
    def running(self) -> Iterator[Receiver]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
