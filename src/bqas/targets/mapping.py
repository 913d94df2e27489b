"""From a sample to a request and from a reply to the judge's inputs: ``{field}`` templates and JSONPath.

JSONPath is RFC 9535 (the ``jsonpath-rfc9535`` library, imported on first use). A path that selects one
node gives its value; several nodes (``$.sources[*].text``) give the list of their values; none gives
nothing, and a missing ``response`` makes the reply unmappable.

A reply is somebody else's data: one nested deeper than :data:`MAX_DEPTH` levels is refused before any
path is evaluated (the JSONPath library and the judges' text recurse), and a mapped list holds at most
:data:`MAX_TEXTS` texts; both limits are checked without recursion, whatever Python's recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bqas.targets.config import HTTPTarget, compile_path, expand_env

# The deepest nesting of lists and objects a reply may have to be mapped.
MAX_DEPTH = 100
# The most texts a mapped list (sources, facts) may hold.
MAX_TEXTS = 10_000

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class UnmappableReply(ValueError):
    """The reply holds no value where ``outputs`` points (or a value of the wrong kind)."""


def map_outputs(reply: Any, outputs: Mapping[str, str]) -> dict[str, Any]:
    """The judge inputs from a parsed reply: one value per output; a singular path that selects nothing
    is left out."""
    depth = nesting_depth(reply, MAX_DEPTH)
    if depth > MAX_DEPTH:
        raise UnmappableReply(f"the reply nests lists and objects deeper than {MAX_DEPTH} levels; not mapped")
    fields: dict[str, Any] = {}
    for name, path in outputs.items():
        query = compile_path(path, f"outputs.{name}")
        values = query.find(reply).values()
        # A singular query (RFC 9535: names and indexes only) gives a value or nothing; any other a list,
        # even of one or none (a RAG answer without sources has an empty list of facts).
        if not query.singular_query():
            fields[name] = list(values)
        elif values:
            fields[name] = values[0]
    return fields


def as_judge_text(name: str, value: Any) -> str | list[str]:
    """A mapped value as the judges take it: text, or a list of texts (numbers become text; objects and
    nested lists are refused: the path should point at the text inside them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        raise UnmappableReply(f"outputs.{name}: expected text, got {'null' if value is None else 'a boolean'}")
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        if len(value) > MAX_TEXTS:
            raise UnmappableReply(f"outputs.{name}: a list of {len(value)} values; at most {MAX_TEXTS} are taken")
        if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
            raise UnmappableReply(f"outputs.{name}: lists nested deeper than {MAX_DEPTH} levels")
        return [v if isinstance(v, str) else str(as_judge_text(name, v)) for v in value]
    raise UnmappableReply(f"outputs.{name}: expected text or a list of texts, got an object (point the path inside it)")


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar: 0), counted without recursion and no
    further than ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children if isinstance(child, dict | list))
    return deepest


def fill(template: Any, values: Mapping[str, Any], where: str) -> Any:
    """``template`` with ``{field}`` taken from ``values`` and ``${VAR}`` from the environment, in every
    string of a nested structure. A string that is exactly ``{field}`` takes the value as it is (a list
    stays a list); ``{{`` and ``}}`` are literal braces. A field the sample lacks raises naming it."""
    if isinstance(template, str):
        text = expand_env(template, where)
        whole = _FIELD.fullmatch(text)
        if whole is not None and whole.group(1) is not None:
            return _value(values, whole.group(1), where)

        def one(match: re.Match[str]) -> str:
            if match.group(1) is None:
                return match.group()[0]
            found = _value(values, match.group(1), where)
            return found if isinstance(found, str) else _compact(found)

        return _FIELD.sub(one, text)
    if isinstance(template, dict):
        return {k: fill(v, values, f"{where}.{k}") for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values, f"{where}[{i}]") for i, v in enumerate(template)]
    return template


def template_fields(template: Any) -> set[str]:
    """The ``{field}`` names a template refers to anywhere (strings, lists, mappings)."""
    if isinstance(template, str):
        return {m.group(1) for m in _FIELD.finditer(template) if m.group(1) is not None}
    if isinstance(template, dict):
        return set().union(set(), *(template_fields(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(set(), *(template_fields(v) for v in template))
    return set()


def _value(values: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in values or values[name] is None:
        raise KeyError(f"{where}: the sample has no field {name!r}")
    return values[name]


def _compact(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()


class UnsafeURL(ValueError):
    """The sample's values would change the target URL's scheme, host or path structure."""


def fill_url(template: str, values: Mapping[str, Any], where: str) -> str:
    """``template`` (``target.url``) with ``${VAR}`` from the environment as written and each ``{field}``
    percent-encoded as one path segment or query value: a value holding ``/``, ``?``, ``#`` or ``&`` stays
    inside its segment or value. A value that would still change the URL's scheme, host, port or path
    segments (a segment that is exactly ``.`` or ``..``) raises :class:`UnsafeURL`."""
    from urllib.parse import quote

    from yarl import URL

    text = expand_env(template, where)

    def one(match: re.Match[str], *, probe: bool) -> str:
        if match.group(1) is None:
            return match.group()[0]
        if probe:
            return "x"
        found = _value(values, match.group(1), where)
        return quote(found if isinstance(found, str) else _compact(found), safe="")

    filled = _FIELD.sub(lambda m: one(m, probe=False), text)
    shape = URL(_FIELD.sub(lambda m: one(m, probe=True), text))
    url = URL(filled)
    if (url.scheme, url.host, url.port) != (shape.scheme, shape.host, shape.port) or len(url.raw_parts) != len(
        shape.raw_parts
    ):
        raise UnsafeURL(
            f"{where}: the sample's values would change the URL's host or path ({url.raw_path!r}); not sent"
        )
    return filled


def uses_session(target: HTTPTarget) -> bool:
    """Whether an HTTP target's requests carry a conversation (``{conversation_id}`` in a template, or
    the target's own id mapped from its reply): the assistant then keeps state between requests."""
    used = template_fields([target.url, target.headers, target.body])
    return "conversation_id" in used or "conversation_id" in target.outputs
