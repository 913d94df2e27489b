"""The sample page's rendered prompt and LLM exchange, rebuilt from what the store keeps.

Rendering is deterministic, so the prompt is rendered again from the stored inputs with the judge's
template of today and checked against the prompt hash the judgment stored: when they differ, the page says
that the template changed and that the prompt shown is not the one that was sent. The request body is
rebuilt with the client's own function (``bqas.llm.client.request_payload``) from the run's stored request
parameters; replies, tokens, latency and cache hits are the stored ones (``bqas.judging.exchange``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.judgment.spec import JudgeRegistry

OFFLINE_DECIDED = "no LLM call (offline tier decided)"


@dataclass
class Attempt:
    """One request of a judgment as the page shows it."""

    number: int
    added: list[dict[str, str]]  # messages added to the prompt for this attempt (the retry)
    request: str  # the rebuilt request body (messages elided: they are shown above it)
    entry: Mapping[str, Any]
    payload: dict[str, Any]  # the rebuilt request body itself, messages included


@dataclass
class ExchangeView:
    """What the sample page's "Prompt and LLM exchange" card shows."""

    note: str | None = None  # why there is no exchange (offline tier, stored before, invalid sample)
    prompt: list[dict[str, str]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    hash_stored: str | None = None
    hash_now: str | None = None
    template_changed: bool = False
    render_error: str | None = None
    redacted: bool = False
    examples: str | None = None
    samples: list[str] = field(default_factory=list)
    request_params: Mapping[str, Any] | None = None


@cache
def _registry() -> JudgeRegistry:
    from bqas.judgment.spec import default_registry

    return default_registry()


def _no_call_note(record: Mapping[str, Any]) -> str:
    if record.get("status") == "invalid":
        return "no LLM call (the sample is invalid)"
    if record.get("judge") == "ragas":  # its calls are made inside the ragas library
        return "RAGAS metric: its LLM calls are made inside ragas and not stored (tokens and latency above)"
    if record.get("backend") == "offline" or record.get("decided_by") == "offline":
        return OFFLINE_DECIDED
    if record.get("llm_calls"):
        return "the LLM exchange was not stored (a result written before BQAS kept it)"
    return "no LLM call"


def exchange_view(
    record: Mapping[str, Any], exchange: Mapping[str, Any] | None, run_config: Mapping[str, Any]
) -> ExchangeView:
    """The prompt as rendered again, each attempt's rebuilt request and its stored reply."""
    if not isinstance(exchange, Mapping) or not exchange.get("attempts"):
        return ExchangeView(note=_no_call_note(record))
    from bqas.judging.render import render_prompt, retry_message
    from bqas.llm.client import request_payload

    stored = run_config.get("llm_request")
    snapshot: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    view = ExchangeView(
        hash_stored=record.get("prompt_hash"),
        redacted=bool(snapshot.get("redacted")),
        examples=exchange.get("examples") if isinstance(exchange.get("examples"), str) else None,
        samples=[s for s in exchange.get("samples") or [] if isinstance(s, str)],
        request_params=snapshot or None,
    )
    given = record.get("inputs")
    inputs: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    try:
        spec = _registry().get(str(record.get("judge")))
        prompt = render_prompt(
            spec,
            inputs,
            str(record.get("language") or "de"),
            max_field_chars=int(snapshot.get("max_field_chars") or 20_000),
        )
    except (KeyError, ValueError) as exc:
        view.render_error = f"the prompt cannot be rendered again: {exc}"
        messages: list[dict[str, str]] = []
        spec = None
    else:
        view.hash_now = prompt.prompt_hash
        view.template_changed = bool(view.hash_stored) and view.hash_stored != prompt.prompt_hash
        messages = list(prompt.messages)
        if view.examples:
            messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{view.examples}"}
        view.prompt = list(messages)
    params: dict[str, Any] = {"temperature": snapshot.get("temperature", 0.0)}
    limit = snapshot.get("max_tokens") or (spec.max_tokens if spec is not None else None)
    if limit:
        params["max_tokens"] = limit
    if snapshot.get("top_logprobs") is not None:
        params.update(logprobs=True, top_logprobs=snapshot["top_logprobs"])
    language = str(record.get("prompt_language") or record.get("language") or "de")
    added: list[dict[str, str]] = []
    for number, entry in enumerate(exchange["attempts"], start=1):
        if not isinstance(entry, Mapping):
            continue
        body = request_payload(
            str(snapshot.get("model") or record.get("model") or "?"),
            messages,
            spec.schema if spec is not None else None,
            spec.name if spec is not None else "answer",
            str(entry.get("mode") or "prompt"),
            params,
        )
        shown = {**body, "messages": f"[the {len(messages)} message(s) above]"}
        text = json.dumps(shown, ensure_ascii=False, indent=2, default=str)
        view.attempts.append(Attempt(number, added, text, entry, body))
        if isinstance(entry.get("reply"), str) and entry.get("errors"):
            # The next attempt: the reply so far and the message that said what was wrong with it.
            added = [
                {"role": "assistant", "content": entry["reply"][:4000]},
                {"role": "user", "content": retry_message(language, [str(e) for e in entry["errors"]])},
            ]
            messages = [*messages, *added]
        else:
            added = []
    return view
