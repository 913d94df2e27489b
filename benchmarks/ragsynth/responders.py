"""Scripted answers for the synth-rag benchmark: any RAGAS prompt (from the JSON schema RAGAS writes into it)
and BQAS's own LLM generator prompt.

RAGAS's pydantic prompts end with "... complies with the following schema as specified in JSON Schema:
{schema}" and "input: {...}\\nOutput:". The responder builds a valid instance of that schema whose texts
are sentences and words of the prompt's input (so headlines are found in the text they came from, and
entities and themes are words of it). Not a generator of good questions: it lets RAGAS's pipeline run
end to end at a fixed latency, so calls, tokens and wall time can be counted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bqas.testing.scripted_llm import Reply

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _under(value: Any, key: str) -> list[str]:
    """The strings under ``key`` anywhere in ``value``."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (_strings(v) if k == key else _under(v, key))]
    if isinstance(value, list):
        return [s for v in value for s in _under(v, key)]
    return []


def _schema_and_input(text: str) -> tuple[dict[str, Any] | None, Any]:
    schema = None
    at = text.rfind("JSON Schema:")
    if at >= 0:
        start = text.find("{", at)
        try:
            schema, _end = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            schema = None
    tail = text.rsplit("input: ", 1)[-1].rsplit("Output:", 1)[0]
    try:
        parsed: Any = json.loads(tail)
    except ValueError:
        parsed = tail
    return schema, parsed


class _Builder:
    def __init__(self, schema: dict[str, Any], given: Any) -> None:
        source = given if isinstance(given, str) else " ".join(_strings(given))
        # A mapping's keys are the names in the input (personas), its values the input's themes.
        self.names = list(dict.fromkeys(_under(given, "name"))) or ["reader"]
        self.themes = list(dict.fromkeys(_under(given, "themes"))) or None
        self.defs = schema.get("$defs") or schema.get("definitions") or {}
        self.sentences = [s.strip() for s in _SENTENCE.split(source) if len(s.strip()) > 15] or [source[:200] or "text"]
        self.words = list(dict.fromkeys(_WORD.findall(source))) or ["topic"]
        # Headlines must be lines of the text (RAGAS splits the text at them).
        lines = [ln.strip() for ln in source.splitlines()]
        self.lines = [ln for ln in lines if 3 <= len(ln) <= 60 and not ln.endswith(".")] or self.sentences
        self.n = 0

    def _next(self, pool: list[str]) -> str:
        self.n += 1
        return pool[(self.n - 1) % len(pool)]

    def build(self, node: dict[str, Any], name: str = "", depth: int = 0) -> Any:
        if "$ref" in node:
            return self.build(self.defs[node["$ref"].rsplit("/", 1)[-1]], name, depth)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in node:
                if depth > 4 and any(o.get("type") == "null" for o in node[key]):
                    return None  # a recursive schema ends in its optional branch
                options = [o for o in node[key] if o.get("type") != "null"] or node[key]
                return self.build(options[0], name, depth)
        if "enum" in node:
            return node["enum"][0]
        kind = node.get("type", "object")
        if kind == "object" and not node.get("properties") and isinstance(node.get("additionalProperties"), dict):
            values = node["additionalProperties"]
            if self.themes and values.get("type") == "array":
                return {n: self.themes[:3] for n in self.names}
            return {n: self.build(values, n, depth + 1) for n in self.names}
        if kind == "object":
            props = node.get("properties", {})
            required = set(node.get("required", props))
            return {k: self.build(v, k, depth + 1) for k, v in props.items() if depth <= 4 or k in required}
        if kind == "array":
            n = int(node.get("minItems", 0)) if depth > 4 else max(int(node.get("minItems", 0)), 3)
            return [self.build(node.get("items", {"type": "string"}), name, depth + 1) for _ in range(n)]
        if kind == "integer":
            # Scores (a node's question potential, say) at their best, so RAGAS keeps what it scores.
            return int(node.get("maximum", 5))
        if kind == "number":
            return float(node.get("maximum", 1.0))
        if kind == "boolean":
            return True
        if "headline" in name.lower():
            return self._next(self.lines)
        short = any(w in name.lower() for w in ("name", "theme", "entit", "keyphrase", "concept", "role"))
        return self._next(self.words) if short and "description" not in name else self._next(self.sentences)


def ragas_testset_responder(payload: dict[str, Any]) -> Reply | None:
    """A valid JSON answer for the RAGAS prompt in ``payload`` (None when no schema is in it)."""
    text = "\n".join(str(m.get("content", "")) for m in payload.get("messages", []))
    schema, given = _schema_and_input(text)
    if schema is None:
        return None
    value = _Builder(schema, given).build(schema)
    return Reply(content=json.dumps(value, ensure_ascii=False), prompt_tokens=max(1, len(text) // 4),
                 completion_tokens=max(1, len(json.dumps(value)) // 4))  # fmt: skip


_SHOWN = re.compile(r"^- \[(?P<id>[^\]]+)\] (?:[^:\n]*: )?(?P<text>.+)$", re.M)


def bqas_synth_responder(payload: dict[str, Any]) -> Reply | None:
    """An answer to BQAS's own LLM generator prompt (``rag_synth``): one fact item per passage shown, its
    first sentence quoted, the question made from its first words (valid, not good)."""
    fmt = (payload.get("response_format") or {}).get("json_schema") or {}
    if fmt.get("name") != "rag_synth":
        return None
    user = str(payload["messages"][-1]["content"])
    items = []
    for m in _SHOWN.finditer(user):
        sentence = (_SENTENCE.split(m.group("text").strip()) or [""])[0]
        words = sentence.split()
        if len(words) < 4:
            continue
        items.append({"kind": "fact", "query": f"What do the documents say about {' '.join(words[1:4])}?",
                      "reference": sentence, "supporting_sentences": [sentence], "chunk_ids": [m.group("id")],
                      "expected_concepts": words[1:4]})  # fmt: skip
    content = json.dumps(items, ensure_ascii=False)
    return Reply(content=content, prompt_tokens=max(1, len(user) // 4), completion_tokens=max(1, len(content) // 4))


def responder(payload: dict[str, Any]) -> Reply | None:
    """BQAS's generator prompt or any RAGAS prompt."""
    return bqas_synth_responder(payload) or ragas_testset_responder(payload)
