"""Reply parsing: documented repairs only, no clamping, no NaN."""

from __future__ import annotations

from bqas.judging.parse import parse_reply
from bqas.judgment.spec import default_registry

SCHEMA = default_registry().get("voice").schema
GOOD = '{"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass", "reasoning": "ok"}'


def test_plain_json_is_accepted_without_repairs() -> None:
    out = parse_reply(GOOD, SCHEMA)
    assert out.ok and out.repairs == []
    assert out.data is not None and out.data["intent_accuracy"] == 85


def test_code_fence_is_repaired() -> None:
    out = parse_reply(f"```json\n{GOOD}\n```", SCHEMA)
    assert out.ok and out.repairs == ["code_fence"]


def test_prose_around_json_is_repaired() -> None:
    out = parse_reply(f"Hier ist meine Bewertung:\n{GOOD}\nIch hoffe, das hilft.", SCHEMA)
    assert out.ok and out.repairs == ["surrounding_prose"]


def test_trailing_commas_are_repaired_but_not_inside_strings() -> None:
    text = GOOD.replace('"ok"}', '"ok, }",}')
    out = parse_reply(text, SCHEMA)
    assert out.ok and "trailing_comma" in out.repairs
    assert out.data is not None and out.data["reasoning"] == "ok, }"


def test_numbers_as_strings_are_repaired() -> None:
    out = parse_reply(GOOD.replace("85", '"85"').replace('"faithfulness": 4', '"faithfulness": " 4 "'), SCHEMA)
    assert out.ok and out.repairs == ["number_as_string"]
    assert out.data is not None and out.data["faithfulness"] == 4 and out.data["intent_accuracy"] == 85


def test_out_of_range_is_an_error_not_clamped() -> None:
    out = parse_reply(GOOD.replace('"relevance": 5', '"relevance": 7'), SCHEMA)
    assert not out.ok and out.data is None
    assert any("relevance" in e and "maximum" in e for e in out.errors)


def test_wrong_types_and_enum_are_errors() -> None:
    out = parse_reply(GOOD.replace('"pass"', '"ok"').replace('"coherence": 4', '"coherence": "gut"'), SCHEMA)
    assert not out.ok
    assert any(e.startswith("safety") for e in out.errors) and any(e.startswith("coherence") for e in out.errors)


def test_truncated_json_is_an_error() -> None:
    out = parse_reply(GOOD[:60], SCHEMA)
    assert not out.ok and "truncated" in out.errors[0]


def test_nan_and_infinity_are_rejected() -> None:
    for bad in ("NaN", "Infinity", "-Infinity"):
        out = parse_reply(GOOD.replace("85", bad), SCHEMA)
        assert not out.ok, bad
        assert out.data is None


def test_missing_key_is_an_error() -> None:
    out = parse_reply('{"intent_accuracy": 85, "faithfulness": 4}', SCHEMA)
    assert not out.ok and any("required" in e for e in out.errors)


def test_extra_keys_are_dropped_with_a_warning() -> None:
    out = parse_reply(GOOD.replace('"reasoning"', '"bonus": 100, "reasoning"'), SCHEMA)
    assert out.ok and out.data is not None and "bonus" not in out.data
    assert out.warnings == ["extra keys ignored: bonus"]


def test_fractional_one_to_five_score_is_an_error() -> None:
    out = parse_reply(GOOD.replace('"faithfulness": 4', '"faithfulness": 4.5'), SCHEMA)
    assert not out.ok and any("faithfulness" in e for e in out.errors)


def test_empty_and_non_json_replies() -> None:
    assert parse_reply("", SCHEMA).errors == ["no JSON object found in the reply"]
    assert not parse_reply("Ich kann das nicht bewerten.", SCHEMA).ok
    assert not parse_reply("[1, 2]", SCHEMA).ok
