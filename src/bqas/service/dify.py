"""What tool runners such as Dify send in place of lists, read into the API's fields.

Dify passes a tool parameter as one string, so a list arrives in one of these shapes:

- judge or metric names as ``"rag_hallucination,rag_privacy"``, or as a one-item list of that string
  (``["rag_hallucination,rag_privacy"]``, what a fixed value in a tool node becomes);
- a knowledge-retrieval result as a list of objects (``{"content": …, "title": …, "metadata": {…}}``),
  as JSON or as the Python repr Dify renders for a string parameter (single quotes, ``None``).

Each context object gives its ``content`` text; ``title`` and ``metadata`` are dropped (the judges read
the retrieved text only). The repr is read with :func:`ast.literal_eval` (literals only, no code), and
only when it is small and shallow enough; anything else that is not such a list stays one context text.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from bqas.untrusted import surrogate_problem

# Bounds for parsing a retrieval result sent as text (the body limit of the service applies first).
MAX_PARSED_CHARS = 1_000_000
MAX_DEPTH = 32


def split_names(value: Any) -> Any:
    """Names from ``"a, b"``, ``["a,b"]`` or ``["a", "b"]``, stripped, empty ones dropped, first seen kept."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return value  # not names: the model's own type check reports it
    names: list[str] = []
    for item in value:
        for part in item.split(","):
            name = part.strip()
            if name and name not in names:
                names.append(name)
    return names


def _depth_ok(text: str) -> bool:
    """True unless brackets nest deeper than ``MAX_DEPTH`` (counted over the raw text: an upper bound)."""
    depth = 0
    for char in text:
        if char in "[{(":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif char in "]})":
            depth = max(0, depth - 1)
    return True


def _parse_structured(text: str) -> Any | None:
    """The list or object a text holds (JSON or a Python literal), or None when it holds none."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_PARSED_CHARS or not _depth_ok(stripped):
        return None
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _context_text(item: Any, index: int) -> Any:
    if isinstance(item, dict):
        content = item.get("content")
        if not isinstance(content, str):
            raise ValueError(
                f"contexts[{index}]: a retrieval result needs a 'content' text (Dify's knowledge-retrieval shape)"
            )
        item = content
    # A repr can spell what JSON would have refused (an escaped lone surrogate): the same rule applies.
    problem = surrogate_problem(item) if isinstance(item, str) else None
    if problem:
        raise ValueError(f"contexts[{index}]: {problem}")
    return item


def read_contexts(value: Any) -> Any:
    """Context texts from a text, a list of texts, or retrieval results (objects, as JSON or Python repr)."""
    if isinstance(value, str):
        parsed = _parse_structured(value)
        if isinstance(parsed, dict) and "content" in parsed:
            value = [parsed]
        elif isinstance(parsed, list) and parsed and all(isinstance(p, dict | str) for p in parsed):
            value = parsed
        else:
            return [value]  # plain text (or something that only looks like a list): one context
    elif isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return value
    return [_context_text(item, i) for i, item in enumerate(value)]
