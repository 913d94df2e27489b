"""The offline voice judge flags answer specifics the user never said (times, dates, numbers, names,
places) as unsupported for faithfulness, with the method named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.offline.specifics import faithfulness_from, find_specifics

REQUEST = "Erinnere mich morgen an die Konferenz"


def _score(response: str, user_input: str = REQUEST, intent: str = "reminder") -> dict[str, Any]:
    sample = {"user_input": user_input, "detected_intent": intent, "response": response, "expected_intent": intent}
    result = CliRunner().invoke(
        app, ["score", "--judge", "voice", "--backend", "offline", "--language", "de", "-"], input=json.dumps(sample)
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_the_readme_example_invents_a_time_and_is_no_longer_production_ready(bqas_home: Path) -> None:
    rec = _score("Ich erinnere dich morgen um 8 Uhr.")
    faith = rec["dimensions"]["faithfulness"]
    assert faith["value"] == 1 and faith["method"] == "specifics:input" and faith["backend"] == "offline"
    assert faith["note"] == "not in the user's input: time '8 Uhr'"
    assert rec["verdict"] != "production_ready"
    # The same answer without the invented time: every specific was said.
    clean = _score("Ich erinnere dich morgen an die Konferenz.")
    assert clean["dimensions"]["faithfulness"]["value"] == 5 and clean["verdict"] == "production_ready"


def test_an_off_topic_answer_fails(bqas_home: Path) -> None:
    rec = _score("Das Wetter in Berlin ist morgen sonnig bei 25 Grad.")
    assert rec["dimensions"]["faithfulness"]["value"] == 1 and rec["verdict"] == "failed"


@pytest.mark.parametrize(
    ("answer", "said", "language", "score", "missing"),
    [
        # a time said as a number word supports the digits
        ("Ich erinnere dich morgen um 8 Uhr an die Konferenz.", "Erinnere mich morgen um acht an die Konferenz", "de",
         5, []),
        ("Ich schreibe den Eltern von Jonas Weber, dass er am Freitag fehlt.", "Schreib den Eltern von Jonas, dass "
         "er morgen fehlt", "de", 1, ["date Freitag", "name Jonas Weber"]),
        ("Ich erstelle ein Arbeitsblatt mit 10 Aufgaben.", "Erstelle ein Arbeitsblatt zur Bruchrechnung", "de", 2,
         ["number 10"]),
        ("Die Konferenz ist im Raum 204.", "Ist die Konferenz im Raum 204?", "de", 5, []),
        ("Okay, I will remind you tomorrow at 3 pm.", "Remind me tomorrow at 3 in the afternoon", "en", 5, []),
        ("Okay, I will remind you tomorrow at 9 am.", "Remind me tomorrow", "en", 1, ["time 9 am."]),
        ("好的，明天下午三点提醒你开会。", "明天下午三点提醒我开会", "zh", 5, []),
        ("好的，明天上午九点提醒你开会。", "明天提醒我开会", "zh", 1, ["time 九点"]),
        ("Alles klar, mache ich.", "Erinnere mich an die Konferenz", "de", None, []),
    ],
)  # fmt: skip
def test_specifics_against_the_input(
    answer: str, said: str, language: str, score: float | None, missing: list[str]
) -> None:
    specifics = find_specifics(answer, said, language)
    value, note = faithfulness_from(specifics)
    assert value == score, specifics
    assert sorted(f"{s.kind} {s.text}" for s in specifics if not s.supported) == sorted(missing)
    if score is None:
        assert "no time, date, number, name or place" in note
