"""Render a judge prompt with untrusted text kept as data.

The template is trusted (a file of ours); the values are not. Values never pass through a template
engine: the template is parsed once and each placeholder is replaced by a fenced, labelled data block,
so braces, Jinja or format syntax, markdown fences and text in any language arrive verbatim. The fence
carries a nonce derived from the value itself, so a value cannot close its own block. The system
message (from ``judges/_frame``) tells the judge that fenced blocks are data, never instructions.
"""

from __future__ import annotations

import functools
import hashlib
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bqas.judgment.spec import JudgeSpec, frame_texts

OPEN_MARKER = "<<<DATA {name} {nonce}>>>"
CLOSE_MARKER = "<<<END {name} {nonce}>>>"


@dataclass(frozen=True)
class RenderedPrompt:
    """The chat messages of one judgment and what went into them."""

    messages: list[dict[str, str]]
    language: str
    prompt_id: str
    prompt_hash: str
    truncated: dict[str, int] = field(default_factory=dict)


def format_value(value: Any, empty: str) -> str:
    """Turn an input value into text: lists as bullet lines, mappings as JSON, None/'' as the empty mark."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return empty
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "\n".join(f"- {format_value(v, empty)}" for v in value) if value else empty
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def truncate(text: str, limit: int, marker: str) -> tuple[str, int | None]:
    """Cut ``text`` to about ``limit`` characters, keeping head and tail around a visible marker."""
    if limit <= 0 or len(text) <= limit:
        return text, None
    head = (limit * 2) // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n{marker.format(omitted=omitted)}\n{text[len(text) - tail :]}", len(text)


def fence(name: str, text: str) -> str:
    """Wrap one untrusted value in markers whose nonce depends on the value (it cannot forge its end).

    The markers are :data:`OPEN_MARKER` and :data:`CLOSE_MARKER` written out as one f-string: two
    ``str.format`` calls per field were most of this function's time (tests/test_render.py holds the two
    equal)."""
    nonce = hashlib.sha256(f"{name}\x00{text}".encode()).hexdigest()[:12]
    return f"\n<<<DATA {name} {nonce}>>>\n{text}\n<<<END {name} {nonce}>>>\n"


@functools.lru_cache(maxsize=256)
def _compiled(template: str, language: str) -> tuple[tuple[tuple[str, str | None], ...], str, str]:
    """(literal, placeholder) pieces of ``template``, the system message and the prompt hash.

    Cached: parsing the template, formatting the system message and hashing both on every judgment
    would be a measurable part of the runner's CPU per sample (``render_prompt`` in
    ``benchmarks/runner/spy_shares.py``'s breakdown of a run)."""
    frame = frame_texts(language)
    pieces = tuple((literal, name) for literal, name, _spec, _conv in string.Formatter().parse(template))
    system = frame["system"].format(
        open=OPEN_MARKER.format(name="<field>", nonce="<id>"),
        close=CLOSE_MARKER.format(name="<field>", nonce="<id>"),
    )
    digest = hashlib.sha256(f"{system}\x00{template}".encode()).hexdigest()
    return pieces, system, digest


def render_prompt(
    spec: JudgeSpec,
    values: Mapping[str, Any],
    language: str,
    *,
    max_field_chars: int = 20_000,
) -> RenderedPrompt:
    """Render ``spec``'s template in ``language`` (German fallback) with ``values`` fenced as data."""
    template, used_language = spec.template_for(language)
    frame = frame_texts(used_language)
    pieces, system, digest = _compiled(template, used_language)
    truncated: dict[str, int] = {}
    parts: list[str] = []
    for literal, name in pieces:
        parts.append(literal)
        if name is None:
            continue
        text = format_value(values.get(name), frame["empty"])
        text, original = truncate(text, max_field_chars, frame["truncated"])
        if original is not None:
            truncated[name] = original
        parts.append(fence(name, text) if spec.inputs[name].fenced else text)
    return RenderedPrompt(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": "".join(parts)}],
        language=used_language,
        prompt_id=f"{spec.name}@{used_language}",
        prompt_hash=digest[:16],
        truncated=truncated,
    )


def retry_message(language: str, errors: list[str]) -> str:
    """The follow-up message that tells the judge what was wrong with its reply."""
    return frame_texts(language)["retry"].format(errors="; ".join(errors)[:2000])
