"""Parse and validate a judge's reply; repair only documented cases, never invent or clamp values.

Documented repairs (each recorded in ``repairs``):
- ``code_fence``: the JSON sits inside a markdown code fence;
- ``surrounding_prose``: the JSON object/array is surrounded by other text;
- ``trailing_comma``: a comma before ``}`` or ``]``;
- ``number_as_string``: a numeric field given as a string such as ``"4"`` or ``" 85.5 "``.
Everything else is an error: truncated JSON, wrong types, out-of-range numbers (not clamped), missing
keys, a reply nested deeper than ``bqas.untrusted.MAX_DEPTH`` levels. Extra keys are ignored and reported
as a warning; lone surrogates in the reply's text become U+FFFD, also with a warning (see bqas.untrusted).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from bqas.untrusted import MAX_DEPTH, UntrustedValueError, depth_exceeds, loads_plain, may_hold_surrogates, repair_value

TOO_DEEP = f"reply nested deeper than {MAX_DEPTH} levels"

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def _reject_constant(name: str) -> Any:
    # JSON has no NaN/Infinity; Python's json accepts them, and a NaN would slip through range checks.
    raise json.JSONDecodeError(f"non-finite number {name} is not allowed", name, 0)


class _TooDeep(Exception):
    pass


def _loads(text: str) -> Any:
    # orjson first (most replies are plain JSON objects); what it refuses or may have bent goes through
    # Python's parser below, whose errors are the ones reported to the judge.
    plain, value = loads_plain(text)
    if plain:
        return value
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:  # Python's parser gives up on very deep nesting; never let that escape
        raise _TooDeep from None
    if depth_exceeds(value):
        raise _TooDeep
    return value


_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


@dataclass
class ParseOutcome:
    """The validated data (or None) with the errors, repairs and warnings met on the way."""

    data: Any | None
    errors: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.data is not None and not self.errors


def _balanced_span(text: str, opener: str) -> str | None:
    """The first balanced ``{…}`` / ``[…]`` span of ``text``, string-aware; None if it never closes."""
    closer = "}" if opener == "{" else "]"
    start = text.find(opener)
    if start < 0:
        return None
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1] if ch == closer else None
    return None


_NEXT_CLOSER = re.compile(r"\s*[}\]]")


def _strip_trailing_commas(text: str) -> str:
    """Remove commas directly before a closing bracket, outside strings."""
    out: list[str] = []
    in_str, esc = False, False
    for i, ch in enumerate(text):
        if in_str:
            out.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "," and _NEXT_CLOSER.match(text, i + 1):
            continue  # (a match, not a slice of the rest: linear in the reply's length)
        out.append(ch)
    return "".join(out)


def extract_json(text: str, *, top: str = "object") -> tuple[Any | None, list[str], str | None]:
    """Find the JSON value in a reply. Returns (value, repairs, error); too deep a reply is an error."""
    try:
        return _extract_json(text, top)
    except _TooDeep:
        return None, [], TOO_DEEP


def _extract_json(text: str, top: str) -> tuple[Any | None, list[str], str | None]:
    repairs: list[str] = []
    candidate = text.strip()
    opener = "{" if top == "object" else "["
    try:
        return _loads(candidate), repairs, None
    except json.JSONDecodeError:
        pass
    fenced = _FENCE.search(candidate)
    if fenced:
        candidate = fenced.group(1).strip()
        repairs.append("code_fence")
        try:
            return _loads(candidate), repairs, None
        except json.JSONDecodeError:
            pass
    span = _balanced_span(candidate, opener)
    if span is None:
        if opener in candidate:
            return None, repairs, "truncated or unbalanced JSON (no closing bracket)"
        return None, repairs, f"no JSON {top} found in the reply"
    if span != candidate:
        repairs.append("surrounding_prose")
    try:
        return _loads(span), repairs, None
    except json.JSONDecodeError:
        pass
    fixed = _strip_trailing_commas(span)
    if fixed != span:
        try:
            value = _loads(fixed)
        except json.JSONDecodeError as exc:
            return None, repairs, f"invalid JSON: {exc.msg} at position {exc.pos}"
        repairs.append("trailing_comma")
        return value, repairs, None
    try:
        _loads(span)
    except json.JSONDecodeError as exc:
        return None, repairs, f"invalid JSON: {exc.msg} at position {exc.pos}"
    return None, repairs, "invalid JSON"  # pragma: no cover - loads succeeded above


def _coerce_numbers(data: dict[str, Any], properties: dict[str, Any], repairs: list[str]) -> None:
    """Turn numeric strings into numbers for fields the schema declares numeric."""
    for key, prop in properties.items():
        value = data.get(key)
        if prop.get("type") in ("integer", "number") and isinstance(value, str) and _NUMBER.match(value):
            number = float(value)
            data[key] = int(number) if number.is_integer() and prop.get("type") == "integer" else number
            if "number_as_string" not in repairs:
                repairs.append("number_as_string")


_VALIDATORS: dict[int, tuple[dict[str, Any], Draft202012Validator, Any]] = {}


def _validators(schema: dict[str, Any]) -> tuple[Draft202012Validator, Any]:
    """Per schema object: jsonschema's validator (all errors, for messages) and a fastjsonschema-compiled
    check (about 20× faster) for the common case of a valid reply. Judge schemas live as long as the
    process, so they are compiled once."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        import fastjsonschema

        hit = (schema, Draft202012Validator(schema), fastjsonschema.compile(schema))
        _VALIDATORS[id(schema)] = hit
    return hit[1], hit[2]


def _path(err: Any) -> str:
    return ".".join(str(p) for p in err.absolute_path) or "(root)"


def parse_reply(text: str, schema: dict[str, Any]) -> ParseOutcome:
    """Extract, repair (documented cases only) and validate a reply against a judge's output schema."""
    top = "array" if schema.get("type") == "array" else "object"
    value, repairs, error = extract_json(text or "", top=top)
    if error is not None:
        return ParseOutcome(None, [error], repairs)
    if top == "object" and not isinstance(value, dict):
        return ParseOutcome(None, [f"expected a JSON object, got {type(value).__name__}"], repairs)
    warnings: list[str] = []
    replaced = False
    # Else the value has none: repairing would rebuild it for nothing. An ASCII reply without a "\u" escape
    # cannot hold one, which is checked faster than the search; most replies are such, and every judgment's
    # reply passes here.
    raw = text or ""
    if not (raw.isascii() and "\\u" not in raw) and may_hold_surrogates(raw):
        try:
            value, replaced = repair_value(value)
        except UntrustedValueError:  # pragma: no cover - _loads checked the depth already
            return ParseOutcome(None, [TOO_DEEP], repairs)
    if replaced:
        warnings.append("invalid Unicode (lone surrogates) in the reply replaced with U+FFFD")
    if top == "object":
        assert isinstance(value, dict)
        properties = schema.get("properties", {})
        _coerce_numbers(value, properties, repairs)
        extra = sorted(set(value) - set(properties))
        if extra:
            warnings.append(f"extra keys ignored: {', '.join(extra)}")
            value = {k: v for k, v in value.items() if k in properties}
    validator, fast_check = _validators(schema)
    try:
        fast_check(value)
    except Exception:  # fastjsonschema reports one error; collect all of them for the judge's retry
        pass
    else:
        return ParseOutcome(value, [], repairs, warnings)
    errors = [f"{_path(e)}: {e.message}" for e in sorted(validator.iter_errors(value), key=lambda e: list(e.path))]
    if errors:
        return ParseOutcome(None, errors, repairs, warnings)
    return ParseOutcome(value, [], repairs, warnings)
