"""A CSV row that cannot be read is an ``invalid`` record at its own line, the rows after it are still
judged, and a run with invalid samples misses ``thresholds.max_invalid`` (default 0): exit 1, the gate in
the console, JUnit and the CI summary; the console names the first invalid rows by file, line and field.
Before, an unclosed quote on line 6 of a 10-row file swallowed rows 6-10 into one field, the error named
line 11, and the run passed."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner.csv_rows import csv_records

HEADER = "id,user_input,detected_intent,response,expected_intent"


def _row(i: int, response: str | None = None) -> str:
    return f"s{i},Erinnere mich {i},reminder,{response or f'Ich erinnere dich morgen um {i} Uhr.'},reminder"


def _write(tmp_path: Path, lines: list[str], thresholds: str = "") -> Path:
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        f"name: csv\njudges: [voice]\nbackend: offline\ndataset: data.csv\n{thresholds}", encoding="utf-8"
    )
    return scenario


def _run(tmp_path: Path, scenario: Path) -> tuple[Any, dict[str, dict[str, Any]]]:
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")])
    lines = (tmp_path / "o" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return result, {str(r["sample_id"]): r for r in map(json.loads, lines)}


def test_unclosed_quote_is_invalid_at_its_line_and_the_rows_after_it_are_judged(
    tmp_path: Path, bqas_home: Path
) -> None:
    lines = [HEADER] + [_row(i, '"Ich erinnere dich, unclosed' if i == 5 else None) for i in range(1, 11)]
    result, records = _run(tmp_path, _write(tmp_path, lines))
    assert result.exit_code == 1, result.output  # the max_invalid gate, default 0
    assert len(records) == 10
    bad = records["line-6"]
    assert bad["status"] == "invalid" and bad["line"] == 6
    assert bad["errors"][0].startswith("data.csv:6: field response: CSV: a quote opened on this line is not closed")
    assert [records[f"s{i}"]["status"] for i in (1, 2, 3, 4, 6, 7, 8, 9, 10)] == ["scored"] * 9
    assert [records[f"s{i}"]["line"] for i in (6, 10)] == [7, 11]
    assert "data.csv:6: field response: CSV: a quote opened on this line" in result.output
    assert "max_invalid" in result.output and "MISSED" in result.output
    suites = ET.parse(tmp_path / "o" / "junit.xml").getroot()
    gate = [c for c in suites.iter("testcase") if c.get("name") == "max_invalid"]
    assert len(gate) == 1 and gate[0].find("failure") is not None
    summary = CliRunner().invoke(app, ["ci-summary", str(tmp_path / "o")])
    assert summary.exit_code == 1 and "| max\\_invalid | 0 | 1 | **MISSED** |" in summary.output, summary.output


def test_max_invalid_allows_what_the_scenario_says(tmp_path: Path, bqas_home: Path) -> None:
    lines = [HEADER] + [_row(i, '"unclosed' if i == 3 else None) for i in range(1, 6)]
    result, records = _run(tmp_path, _write(tmp_path, lines, "thresholds:\n  max_invalid: 1\n"))
    assert result.exit_code == 0, result.output
    assert sum(r["status"] == "invalid" for r in records.values()) == 1 and len(records) == 5


@pytest.mark.parametrize(
    ("broken", "rows", "line"),
    [
        ("last column", [_row(1), 's2,Erinnere mich,reminder,Gut.,"reminder', _row(3), _row(4)], 3),
        ("closes inside a later quoted cell", [_row(1), _row(2, '"offen'), _row(3, '"Ja, morgen."'), _row(4)], 3),
        ("first data row", [_row(1, '"offen'), _row(2), _row(3), _row(4)], 2),
        ("last row, to the end of the file", [_row(1), _row(2), _row(3), _row(4, '"offen')], 5),
    ],
)
def test_every_shape_of_unclosed_quote_loses_only_its_row(broken: str, rows: list[str], line: int) -> None:
    records = list(csv_records(io.StringIO("\n".join([HEADER, *rows]) + "\n", newline=""), csv.excel))
    bad = [r for r in records if r.fields is None]
    assert [r.line for r in bad] == [line], (broken, records)
    assert bad[0].error and "a quote opened on this line is not closed" in bad[0].error
    assert len([r for r in records[1:] if r.fields is not None]) == 3


def test_cells_with_line_breaks_short_rows_and_trailing_delimiters_still_read() -> None:
    text = (
        HEADER + "\n"
        's1,Hallo,reminder,"Zeile eins\nZeile zwei, mit Komma",reminder\n'
        "s2,Hallo,reminder,Gut.,reminder,\n"  # a trailing delimiter: an empty extra cell
        "s3,Hallo,reminder\n"  # trailing columns left out
        "s4,Hallo,reminder,Gut.,reminder,zu viel\n"
    )
    records = list(csv_records(io.StringIO(text, newline=""), csv.excel))
    assert [(r.line, r.end) for r in records] == [(1, 1), (2, 3), (4, 4), (5, 5), (6, 6)]
    assert records[1].fields is not None and records[1].fields[3] == "Zeile eins\nZeile zwei, mit Komma"
    assert records[2].fields is not None and len(records[2].fields) == 5
    assert records[3].fields == ["s3", "Hallo", "reminder"]
    assert records[4].fields is None and records[4].error == "CSV: 6 fields where the header has 5"


def test_missing_column_names_file_line_and_field_for_the_first_rows(tmp_path: Path, bqas_home: Path) -> None:
    lines = ["id,user_input,detected_intent,expected_intent"] + [
        f"s{i},Erinnere mich,reminder,reminder" for i in range(1, 8)
    ]
    result, _ = _run(tmp_path, _write(tmp_path, lines))
    assert result.exit_code == 2, result.output  # no valid sample at all
    assert "invalid samples: 7 (the first 5)" in result.output
    for line in range(2, 7):
        assert f"data.csv:{line}: field response: missing (judge voice needs" in result.output
    assert "data.csv:7:" not in result.output and "(status invalid)" in result.output


def test_unclosed_quote_in_the_header_is_an_input_error(tmp_path: Path, bqas_home: Path) -> None:
    lines = ['id,"user_input,detected_intent,response,expected_intent', _row(1), _row(2)]
    result, _ = _run(tmp_path, _write(tmp_path, lines))
    assert result.exit_code == 2, result.output
    assert "data.csv:1: CSV header: column 2: a quote in the header is not closed" in result.output


PLAIN = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
CELL = PLAIN | st.builds(lambda a, b: f"{a}\n{b}", PLAIN, PLAIN) | st.builds(lambda a: f'{a}"x"', PLAIN)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CELL, min_size=3, max_size=3), min_size=1, max_size=8), st.data())
def test_one_unclosed_quote_loses_one_row_at_its_line(rows: list[list[str]], data: st.DataObject) -> None:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["a", "b", "c"])
    starts = []
    for row in rows:
        starts.append(buffer.getvalue().count("\n") + 1)
        writer.writerow(row)
    clean = list(csv_records(io.StringIO(buffer.getvalue(), newline=""), csv.excel))
    assert [r.fields for r in clean[1:]] == rows and [r.line for r in clean[1:]] == starts
    # Break one row written on a single line: its last cell opens a quote it never closes.
    single = [i for i, row in enumerate(rows) if not any(c for c in row if '"' in c or "\n" in c or "," in c)]
    if not single:
        return
    k = data.draw(st.sampled_from(single))
    lines = buffer.getvalue().split("\n")
    lines[starts[k] - 1] += ',"unclosed'
    records = list(csv_records(io.StringIO("\n".join(lines), newline=""), csv.excel))
    bad = [r for r in records if r.fields is None]
    assert [r.line for r in bad] == [starts[k]]
    assert [r.fields for r in records[1:] if r.fields is not None] == rows[:k] + rows[k + 1 :]


def test_bqas_score_refuses_the_unclosed_quote_at_its_line(tmp_path: Path, bqas_home: Path) -> None:
    lines = [HEADER] + [_row(i, '"Ich erinnere dich, unclosed' if i == 5 else None) for i in range(1, 11)]
    (tmp_path / "data.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(tmp_path / "data.csv"), "-j", "voice", "--backend", "offline"])
    assert result.exit_code == 2, result.output
    assert "data.csv:6: field response: CSV: a quote opened on this line is not closed" in result.output
