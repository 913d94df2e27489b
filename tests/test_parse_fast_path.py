"""The reply parser's fast path (orjson first, no repair pass over a reply that cannot hold lone
surrogates) gives exactly the outcome of the slow path, whatever the reply."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bqas.judging import parse
from bqas.judging.parse import ParseOutcome, parse_reply
from bqas.judgment.spec import default_registry
from bqas.untrusted import loads_plain, may_hold_surrogates

SCHEMA = default_registry().get("voice").schema
TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=30)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
    | st.sampled_from(["pass", "fail", "85", " 4 "])
)
VALUES = st.recursive(
    SCALARS, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=4), max_leaves=20
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "intent_accuracy": SCALARS,
        "faithfulness": SCALARS,
        "relevance": SCALARS,
        "coherence": SCALARS,
        "safety": SCALARS,
        "reasoning": TEXT,
        "extra": VALUES,
    },
)


VALID_EXAMPLE = {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass"}
VALID = st.fixed_dictionaries(
    {
        "intent_accuracy": st.integers(0, 100) | st.floats(0, 100),
        "faithfulness": st.integers(1, 5),
        "relevance": st.integers(1, 5),
        "coherence": st.integers(1, 5) | st.sampled_from(["3", " 4 "]),
        "safety": st.sampled_from(["pass", "fail"]),
        "reasoning": TEXT,
    }
)


def _text(value: Any, style: int) -> str:
    body = json.dumps(value, ensure_ascii=style == 0)  # ensure_ascii: surrogates as \\udxxx escapes
    return [body, body, f"```json\n{body}\n```", f"Here it is: {body} hope it helps", body[:-1] + ",}"][style]


REPLIES = st.one_of(
    st.builds(_text, VALID, st.integers(0, 4)),
    st.builds(_text, FIELDS, st.integers(0, 4)),
    st.builds(_text, VALUES, st.integers(0, 2)),
    TEXT,
    st.sampled_from(['{"safety": NaN}', '{"a": 1e999}', "[" * 80 + "]" * 80, '{"a": "\\ud800"}', '{"a":1,"a":2}']),
)


def _slow(text: str) -> ParseOutcome:
    """The parser as it was: Python's json always, the repair pass always."""
    with (
        mock.patch.object(parse, "loads_plain", lambda _text: (False, None)),
        mock.patch.object(parse, "may_hold_surrogates", lambda _text: True),
    ):
        return parse_reply(text, SCHEMA)


def _same(a: Any, b: Any) -> bool:
    # NaN never reaches an outcome (refused), so plain equality plus the types (1 vs 1.0 vs True) suffices.
    return orjson.dumps(a, option=orjson.OPT_NON_STR_KEYS) == orjson.dumps(b, option=orjson.OPT_NON_STR_KEYS)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(REPLIES)
def test_fast_path_gives_the_slow_paths_outcome(text: str) -> None:
    fast, slow = parse_reply(text, SCHEMA), _slow(text)
    assert (fast.errors, fast.repairs, fast.warnings) == (slow.errors, slow.repairs, slow.warnings)
    assert _same(fast.data, slow.data)


def test_typical_reply_takes_the_fast_path() -> None:
    reply = json.dumps({**VALID_EXAMPLE, "reasoning": "Passt."})
    assert loads_plain(reply)[0] and not may_hold_surrogates(reply)
    assert parse_reply(reply, SCHEMA).ok


def test_fast_path_leaves_what_it_cannot_vouch_for_to_the_slow_path() -> None:
    assert loads_plain('{"a": "\\ud800"}') == (False, None)  # a lone surrogate escape
    assert loads_plain('{"a": 18446744073709551616}') == (False, None)  # past 64 bits: json keeps the int
    assert loads_plain("[" * 80 + "]" * 80) == (False, None)  # deeper than MAX_DEPTH
    assert loads_plain('{"a": NaN}') == (False, None)
    assert may_hold_surrogates('{"a": "\\uDBFF"}') and may_hold_surrogates("x\ud800")
    assert not may_hold_surrogates('{"a": "\\u00e4 \\ud7ff"}')
    outcome = parse_reply('{"intent_accuracy": 85, "reasoning": "\\ud800"}', SCHEMA)
    assert "lone surrogates" in " ".join(outcome.warnings)


@settings(max_examples=400, deadline=None)
@given(st.one_of(TEXT, REPLIES, st.text(alphabet='\\ud{"u0123456789abcdefABCDEF', max_size=20)))
def test_the_ascii_shortcut_never_skips_a_reply_that_may_hold_surrogates(text: str) -> None:
    """parse_reply skips the surrogate search for an ASCII reply without a "\\u" escape: such a reply can
    never be one the search would flag."""
    if may_hold_surrogates(text):
        assert not (text.isascii() and "\\u" not in text)


def test_an_ascii_reply_skips_the_surrogate_search() -> None:
    reply = json.dumps({**VALID_EXAMPLE, "reasoning": "Passt."})
    with mock.patch.object(parse, "may_hold_surrogates", side_effect=may_hold_surrogates) as search:
        assert parse_reply(reply, SCHEMA).ok
        assert search.call_count == 0
        assert parse_reply(reply.replace("Passt.", "Passt, Grüße."), SCHEMA).ok  # not ASCII: searched
        assert search.call_count == 1
