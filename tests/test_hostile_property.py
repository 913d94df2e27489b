"""Property tests (hypothesis) of the edge parsers and request models: whatever the text or structure,
they answer with a value, an ``invalid`` problem or a validation error, never an exception of their own,
and what they accept can be stored (orjson) and echoed (422 answers)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bqas.jsonl import iter_json_objects
from bqas.judging.parse import parse_reply
from bqas.judgment.spec import default_registry
from bqas.service.errors import _safe_error
from bqas.service.models import ScoreRequest, SessionScoreRequest
from bqas.untrusted import UntrustedValueError, check_value, repair_value

# Any str, lone surrogates and control characters included (hypothesis excludes surrogates by default).
TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | TEXT
VALUES = st.recursive(
    SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TEXT, kids, max_size=4), max_leaves=30
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = [value]
    return value


@FAST
@given(VALUES)
def test_check_value_accepts_only_what_orjson_can_store(value: Any) -> None:
    try:
        check_value({"field": value})
    except UntrustedValueError as exc:
        assert exc.field.startswith("field") and exc.message
        return
    orjson.dumps({"field": value}, option=orjson.OPT_NON_STR_KEYS)  # no surrogate, NaN or depth left


@FAST
@given(
    st.lists(
        TEXT
        | VALUES.map(
            lambda v: orjson.dumps(v, default=str, option=orjson.OPT_NON_STR_KEYS).decode() if not _bad(v) else "[1"
        ),
        max_size=5,
    )
)
def test_jsonl_reader_never_raises(lines: list[str]) -> None:
    for row in iter_json_objects(lines):
        assert (row.value is None) != (row.problem is None)
        if row.value is not None:
            orjson.dumps(row.value)


def _bad(value: Any) -> bool:
    try:
        check_value(value)
    except UntrustedValueError:
        return True
    return False


@pytest.mark.parametrize("depth", [31, 33, 5_000, 60_000])
def test_jsonl_reader_depth_limits(depth: int) -> None:
    line = '{"a": ' + "[" * depth + "]" * depth + "}"
    (row,) = iter_json_objects([line])
    assert (row.value is not None) == (depth <= 31)
    if row.value is None:
        assert row.problem == "field a: nested deeper than 32 levels"


VOICE_SCHEMA = default_registry().get("voice").schema


@FAST
@given(TEXT | VALUES.map(lambda v: repr(v)))
def test_parse_reply_never_raises_on_text(text: str) -> None:
    outcome = parse_reply(text, VOICE_SCHEMA)
    assert outcome.ok or outcome.errors


@FAST
@given(
    st.dictionaries(
        st.sampled_from(["intent_accuracy", "faithfulness", "relevance", "coherence", "safety", "reasoning", "x"]),
        VALUES,
        max_size=7,
    )
)
def test_parse_reply_of_any_json_object_is_storable(data: dict[str, Any]) -> None:
    try:
        text = orjson.dumps(repair_value(data)[0], default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (UntrustedValueError, TypeError, orjson.JSONEncodeError):
        return
    outcome = parse_reply(text, VOICE_SCHEMA)
    if outcome.ok:
        orjson.dumps(outcome.data)
        assert all(not isinstance(v, float) or math.isfinite(v) for v in outcome.data.values())


@FAST
@given(
    st.dictionaries(
        st.sampled_from(["judges", "question", "answer", "contexts", "sample", "language", "response_id", "turns"]),
        VALUES,
        max_size=6,
    )
)
def test_request_models_raise_only_validation_errors_that_render(body: dict[str, Any]) -> None:
    for model in (ScoreRequest, SessionScoreRequest):
        try:
            request = model.model_validate(body)
        except ValidationError as exc:
            rendered = orjson.dumps([_safe_error(dict(e)) for e in exc.errors()])  # the 422 answer renders
            assert orjson.loads(rendered), "a 422 answer names at least one field"
            continue
        stored = orjson.loads(orjson.dumps(request.model_dump()))  # what was accepted can be stored and answered
        assert isinstance(stored, dict)


@FAST
@given(st.lists(st.lists(TEXT, min_size=1, max_size=4), min_size=1, max_size=4), st.sampled_from([",", ";", "\t", "|"]))
def test_csv_reader_never_raises(
    tmp_path_factory: pytest.TempPathFactory, rows: list[list[str]], delimiter: str
) -> None:
    from bqas.runner.dataset import _iter_csv

    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    writer.writerow(["id", "user_input", "response", "detected_intent"])
    for row in rows:
        writer.writerow(row)
    path = Path(tmp_path_factory.mktemp("csv")) / "d.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8", "surrogatepass"))  # lone surrogates as raw bytes
    for item in _iter_csv(path, {}):
        assert (item.error is None) or item.error.startswith("d.csv:")
        if item.error is None:
            orjson.dumps(item.data)


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, allow_nan=True)


NUMBERS = st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=True, allow_infinity=True)
JSON_LIKE = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TEXT, kids, max_size=4),
    max_leaves=30,
)


@FAST
@given(JSON_LIKE, st.integers(min_value=0, max_value=40))
def test_loads_with_orjson_decides_as_the_python_parser_did(value: Any, depth: int) -> None:
    # untrusted.loads parses with orjson first (faster dataset reading); what it accepts or refuses,
    # and the message naming the field, must be what json.loads + check_value decided.
    from bqas.untrusted import _loads_checked, loads

    text = _json_text(_deep(depth) if depth > 30 else value)

    def outcome(parse: Any) -> tuple[str, Any]:
        try:
            return "ok", parse(text)
        except UntrustedValueError as exc:
            return "refused", str(exc)
        except ValueError as exc:  # json.JSONDecodeError
            return "bad", str(exc)

    fast, slow = outcome(loads), outcome(lambda t: _loads_checked(t, 32))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert orjson.dumps(fast[1]) == orjson.dumps(slow[1])  # the same value (NaN-free, so comparable)
        assert type(fast[1]) is type(slow[1])
    else:
        assert fast[1] == slow[1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"n": 18446744073709551616}', "field n: integer out of the 64-bit range"),
        ('{"n": -9223372036854775809}', "field n: integer out of the 64-bit range"),
        ('{"n": 1e400}', "field n: Infinity is not a number (JSON has no NaN or Infinity)"),
        ('{"n": NaN}', "field n: NaN is not a number (JSON has no NaN or Infinity)"),
        ('{"t": "\\ud800"}', "field t: invalid Unicode: lone surrogate U+D800 at character 0"),
    ],
)
def test_loads_refuses_what_orjson_would_bend(text: str, message: str) -> None:
    # orjson reads 2**64 as a float and refuses NaN and lone surrogates with its own words; BQAS's verdict
    # and message stay those of the Python parser.
    from bqas.untrusted import loads

    with pytest.raises(UntrustedValueError) as info:
        loads(text)
    assert str(info.value) == message
