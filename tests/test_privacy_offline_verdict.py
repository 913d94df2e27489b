"""The offline privacy judge decides: production_ready without personal data, failed with it, and where
it cannot decide (an empty answer) one sentence per run says why, not one per result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app


def _score(response: str) -> dict[str, Any]:
    sample = {"query": "Wann ist die Konferenz?", "context": "Konferenz am Montag.", "response": response}
    result = CliRunner().invoke(
        app, ["score", "--judge", "rag_privacy", "--backend", "offline", "--language", "de", "--max-unscored", "1", "-"],
        input=json.dumps(sample),
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_no_personal_data_is_production_ready_on_what_the_offline_tier_measures(bqas_home: Path) -> None:
    rec = _score("Die Konferenz ist am Montag um 14 Uhr im Raum 101.")
    assert rec["verdict"] == "production_ready" and rec["status"] == "scored"
    assert rec["coverage"] == pytest.approx(0.7) and rec["partial"] is True
    anon = rec["dimensions"]["anonymization"]
    assert anon["value"] == 5 and anon["method"] == "pii_anonymization_rules" and anon["backend"] == "offline"
    assert rec["dimensions"]["dsgvo_compliance"]["measured"] is False  # the legal judgement stays the LLM's


def test_personal_data_fails_and_scores_no_anonymization(bqas_home: Path) -> None:
    rec = _score("Frau Sabine Weber (sabine.weber@example.org) leitet die Konferenz.")
    assert rec["verdict"] == "failed" and rec["privacy_compliance"] == "fail"
    assert rec["dimensions"]["anonymization"]["value"] == 1


def test_a_possible_name_below_the_gate_is_a_borderline_case_for_people(bqas_home: Path) -> None:
    rec = _score("Mach den Zettel bis Freitag fertig.")  # "Mach" is also a surname: not certain
    assert rec["dimensions"]["anonymization"]["value"] == 3
    assert rec["escalation"] == "human_review" and any("borderline" in r for r in rec["escalation_reasons"])


def test_an_empty_answer_is_unscored_and_the_run_says_why_once(tmp_path: Path, bqas_home: Path) -> None:
    rec = _score("Ok.")
    assert rec["verdict"] == "unscored" and "(privacy_compliance)" in rec["unscored_reason"].replace("; partial", ")")
    samples = [{"id": f"e{i}", "query": "Frage?", "context": "", "response": ""} for i in range(6)]
    samples.append({"id": "ok", "query": "Frage?", "context": "", "response": "Die Konferenz ist am Montag."})
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        json.dumps({"name": "privacy", "judges": ["rag_privacy"], "backend": "offline", "samples": samples}),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    run = CliRunner().invoke(app, ["run", str(scenario), "--out", str(out), "--no-progress"])
    assert run.exit_code == 1, run.output  # unscored results miss max_unscored (default 0)
    line = (
        "rag_privacy: 6 of 7 results unscored: only 40% of the composite weight could be measured "
        "(privacy_compliance); a verdict needs 50% (policy min_measured_weight)"
    )
    assert " ".join(run.output.split()).count(line) == 1  # said once (the console may wrap it)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="unscored-why"' in html and line in html
    records = [json.loads(x) for x in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    shown = json.loads(CliRunner().invoke(app, ["show", records[0]["run_id"], "--json"]).stdout)
    assert shown["summary"]["unscored_reasons"][0]["count"] == 6
