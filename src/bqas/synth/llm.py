"""The LLM generator: the ``synthetic`` judge's prompt through the LLM seam, item-by-item validation.

Round 1 sends the rendered prompt (base patterns fenced as data). Later rounds ask only for the missing
number and add one message listing the already kept commands (fenced as data) to avoid. A reply whose
array is broken is not thrown away whole when complete items precede the break: those are salvaged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bqas.judging.parse import extract_json, parse_reply
from bqas.judging.render import fence, format_value, render_prompt
from bqas.judgment.spec import JudgeSpec
from bqas.llm.client import LLMClient
from bqas.synth.items import Candidate, validate_item

TYPO_INSTRUCTION: dict[bool, dict[str, str]] = {
    True: {
        "de": "Baue in etwa jeden dritten Befehl realistische Tippfehler ein (Nachbartaste auf QWERTZ, "
        "fehlender oder doppelter Buchstabe, ae/oe/ue/ss statt Umlaut)",
        "en": "Put realistic typos into about every third command (neighbouring QWERTZ key, missing or doubled "
        "letter, ae/oe/ue/ss instead of umlauts)",
        "zh": "在大约三分之一的指令中加入真实的拼写错误（QWERTZ 键盘相邻键、漏字母或重复字母、用 ae/oe/ue/ss 代替变音）",
    },
    False: {
        "de": "Korrekte Rechtschreibung, keine Tippfehler",
        "en": "Correct spelling, no typos",
        "zh": "拼写正确，不要有拼写错误",
    },
}

AVOID_MESSAGE: dict[str, str] = {
    "de": "Diese Befehle gibt es schon; wiederhole sie nicht und formuliere anders. "
    "Generiere {count} weitere im selben JSON-Format.",
    "en": "These commands already exist; do not repeat them, phrase new ones differently. "
    "Generate {count} more in the same JSON format.",
    "zh": "以下指令已经存在；不要重复，请换一种说法。按相同的 JSON 格式再生成 {count} 条。",
}


@dataclass
class ReplyOutcome:
    """What one LLM reply gave: candidates, per-reason drops, and whether the array itself was broken."""

    candidates: list[Candidate] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    broken: str | None = None
    salvaged: int = 0


def _salvage_items(text: str) -> list[Any]:
    """The complete values at the top level of a truncated JSON array (those before the break)."""
    start = text.find("[")
    if start < 0:
        return []
    decoder = json.JSONDecoder()
    items: list[Any] = []
    i = start + 1
    while i < len(text):
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            break
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        items.append(value)
    return items


def read_reply(text: str, spec: JudgeSpec, intent: str) -> ReplyOutcome:
    """Validate a reply item by item (the whole array need not be valid)."""
    outcome = ReplyOutcome()
    parsed = parse_reply(text, spec.schema)
    if parsed.ok:
        items = list(parsed.data or [])
    else:
        value, _repairs, error = extract_json(text, top="array")
        if error is None and isinstance(value, list):
            items = value  # the array parses but some items break the schema: check them one by one
        elif error is None:
            outcome.broken = f"expected a JSON array, got {type(value).__name__}"
            items = []
        else:
            outcome.broken = error
            items = _salvage_items(text)
            outcome.salvaged = len(items)
    for raw in items:
        cand, reason = validate_item(raw, intent)
        if cand is not None:
            outcome.candidates.append(cand)
        else:
            assert reason is not None
            outcome.dropped[reason] = outcome.dropped.get(reason, 0) + 1
    return outcome


def build_messages(
    spec: JudgeSpec,
    *,
    intent: str,
    count: int,
    patterns: Sequence[str],
    typos: bool,
    dialect_instruction: str,
    language: str,
    avoid: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The chat messages of one generation round."""
    values = {
        "count": count,
        "intent": intent,
        "patterns": list(patterns),
        "typo_instruction": TYPO_INSTRUCTION[typos].get(language, TYPO_INSTRUCTION[typos]["de"]),
        "dialect_instruction": dialect_instruction,
    }
    prompt = render_prompt(spec, values, language)
    messages = list(prompt.messages)
    if avoid:
        note = AVOID_MESSAGE.get(prompt.language, AVOID_MESSAGE["de"]).format(count=count)
        messages.append({"role": "user", "content": note + fence("avoid", format_value(list(avoid), "-"))})
    return messages


async def ask(client: LLMClient, spec: JudgeSpec, messages: list[dict[str, str]]) -> str:
    """One LLM call with the array schema; a reply that does not validate is never cached."""
    completion = await client.complete(
        messages,
        schema=spec.schema,
        schema_name=spec.name,
        accept=lambda t: parse_reply(t, spec.schema).ok,
        max_tokens=spec.max_tokens,
    )
    return completion.text
