"""The one JSON Lines reader: line numbers, blank lines, bad lines reported (never raised)."""

from __future__ import annotations

from bqas.jsonl import iter_json_objects


def test_objects_keep_their_line_numbers_and_bad_lines_are_reported() -> None:
    rows = list(iter_json_objects(['{"a": 1}', "", "  ", "{broken", "[1, 2]", '{"b": "ü {x}"}']))
    assert [r.line for r in rows] == [1, 4, 5, 6]
    assert rows[0].value == {"a": 1} and rows[3].value == {"b": "ü {x}"}
    assert rows[1].value is None and rows[1].error("f.jsonl").startswith("f.jsonl:4: invalid JSON: ")
    assert rows[2].error("f.jsonl") == "f.jsonl:5: expected a JSON object, got list"
