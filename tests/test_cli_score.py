"""`bqas score` and `bqas judges` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from bqas.cli.main import app

SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


def test_score_stdin_offline_prints_a_result_record(bqas_home: Path) -> None:
    result = CliRunner().invoke(app, ["score", "-j", "voice", "--backend", "offline", "-"], input=json.dumps(SAMPLE))
    assert result.exit_code == 0, result.output
    rec = json.loads(result.output.strip().splitlines()[-1])
    assert rec["judge"] == "voice" and rec["intent_accuracy"] == 100.0
    assert rec["dimensions"]["coherence"]["measured"] is False
    assert rec["partial"] is True and 0 < rec["coverage"] < 1
    assert rec["status"] == "scored" and rec["verdict"] != "failed"  # the right intent and a fitting answer
    wrong = {**SAMPLE, "detected_intent": "weather", "response": "Morgen wird es sonnig bei 20 Grad."}
    result = CliRunner().invoke(app, ["score", "-j", "voice", "--backend", "offline", "-"], input=json.dumps(wrong))
    assert result.exit_code == 0, result.output
    rec = json.loads(result.output.strip().splitlines()[-1])
    assert rec["intent_accuracy"] == 0.0 and rec["verdict"] == "failed"  # the assistant misheard the command


def test_score_loads_models_before_the_clock_and_says_so(bqas_home: Path) -> None:
    # One `bqas score` reported the model load (6,248 ms) as the judgment's latency_ms.
    result = CliRunner().invoke(app, ["score", "-j", "voice", "--backend", "offline", "-"], input=json.dumps(SAMPLE))
    assert result.exit_code == 0, result.output
    assert "loaded the offline models in" in result.stderr and "not counted in latency_ms" in result.stderr
    rec = json.loads(result.stdout.strip().splitlines()[-1])
    assert isinstance(rec["latency_ms"], float)


def test_score_jsonl_file(tmp_path: Path, bqas_home: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps({**SAMPLE, "id": f"a{i}"}) for i in range(3)), encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(path), "--backend", "offline"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["response_id"] for line in result.stdout.strip().splitlines()] == ["a0", "a1", "a2"]


def test_bad_input_exits_2_naming_line_and_field(tmp_path: Path, bqas_home: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(SAMPLE) + "\n" + json.dumps({"user_input": "x"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(path), "--backend", "offline"])
    assert result.exit_code == 2
    assert f"{path}:2: field detected_intent: missing" in result.output
    broken = CliRunner().invoke(app, ["score", "-", "--backend", "offline"], input='{"user_input": ')
    assert broken.exit_code == 2 and "<stdin>:1: invalid JSON" in broken.output
    wrong_type = CliRunner().invoke(
        app, ["score", "-", "--backend", "offline"], input=json.dumps({**SAMPLE, "response": {"a": 1}})
    )
    assert wrong_type.exit_code == 2 and "field response: expected text" in wrong_type.output


def test_unknown_judge_language_and_backend_exit_2(bqas_home: Path) -> None:
    runner = CliRunner()
    assert "unknown judge 'nope'" in runner.invoke(app, ["score", "-", "-j", "nope"], input=json.dumps(SAMPLE)).output
    assert runner.invoke(app, ["score", "-", "-l", "fr"], input=json.dumps(SAMPLE)).exit_code == 2
    assert runner.invoke(app, ["score", "-", "--backend", "magic"], input=json.dumps(SAMPLE)).exit_code == 2
    llm = runner.invoke(app, ["score", "-", "--backend", "llm"], input=json.dumps(SAMPLE))
    assert llm.exit_code == 2 and "BQAS_LLM_BASE_URL" in llm.output


def test_judges_lists_all_and_shows_the_chinese_prompt() -> None:
    runner = CliRunner()
    rows = json.loads(runner.invoke(app, ["judges", "--json", "--language", "zh"]).output)
    names = {r["name"] for r in rows}
    assert {
        "voice",
        "intent",
        "synthetic",
        "rag_retrieval",
        "rag_operator",
        "rag_hallucination",
        "rag_privacy",
        "rag_namespace",
    } <= names
    assert all(r["prompt_language"] == "zh" for r in rows)
    voice = next(r for r in rows if r["name"] == "voice")
    assert voice["inputs"] == ["user_input", "detected_intent", "response", "expected_intent"]
    assert "safety pass|fail" in voice["outputs"]
    prompt = runner.invoke(app, ["judges", "--language", "zh", "--prompt", "voice"]).output
    assert "{user_input}" in prompt and "意图" in prompt


def test_score_reads_csv_as_a_scenario_dataset_does(tmp_path: Path, bqas_home: Path) -> None:
    # A spreadsheet export: BOM, semicolons, a JSON list in a cell (available_facts).
    path = tmp_path / "rag.csv"
    path.write_text(
        "\ufeffid;query;response;available_facts\n"
        'r1;Wie schwer ist das Gerät?;Das Gerät wiegt 7370 kg.;"[""Gesamtgewicht 7370 kg""]"\n'
        'r2;Wie schwer ist das Gerät?;Das Gerät wiegt 7730 kg.;"[""Gesamtgewicht 7370 kg""]"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["score", str(path), "-j", "rag_hallucination", "--backend", "offline"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.strip().splitlines()]
    assert [r["response_id"] for r in records] == ["r1", "r2"]
    assert all(r["judge"] == "rag_hallucination" and r["status"] == "scored" for r in records)
    right, wrong = (r["dimensions"] for r in records)
    assert right["grounding_score"]["measured"] is True
    # r1 repeats the fact's weight, r2 swaps two digits: the number check tells them apart.
    assert right["invention_detection"]["value"] == "pass" and wrong["invention_detection"]["value"] == "fail"
    assert records[0]["verdict"] != "failed" and records[1]["verdict"] == "failed"


def test_score_csv_with_a_missing_column_names_the_row_and_field(tmp_path: Path, bqas_home: Path) -> None:
    path = tmp_path / "voice.csv"
    path.write_text(
        "user_input,detected_intent,response,expected_intent\n"
        "Erinnere mich morgen,reminder,Mache ich.,reminder\n"
        "Erinnere mich morgen,reminder,,reminder\n",
        encoding="utf-8",
    )
    ok = CliRunner().invoke(app, ["score", str(path), "--backend", "offline", "--max-unscored", "2"])
    assert ok.exit_code == 0, ok.output  # an empty cell is an empty answer, not a missing field
    path.write_text("user_input,detected_intent\nErinnere mich morgen,reminder\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", str(path), "--backend", "offline"])
    assert result.exit_code == 2
    assert f"{path}:2: field response: missing" in result.output
