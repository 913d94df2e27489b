"""Edge rules of judging and gating: empty and trivial answers, the minimum measured share, hostile YAML,
run-wide exit codes and usage errors, and unscored results counted alike by score, run and calibrate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.runner.scenario import ScenarioError, load_scenario
from bqas.testing.scripted_llm import Reply, ScriptedLLM

FACTS = ["Das Gesamtgewicht des MAGNETOM Vida beträgt 7370 kg."]
QUESTION = "Wie schwer ist der MAGNETOM Vida?"
VOICE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


def _score(sample: dict[str, Any], judge: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = CliRunner().invoke(
        app, ["score", "-", "-j", judge, "--backend", "offline", *extra], input=json.dumps(sample, ensure_ascii=False)
    )
    lines = [x for x in result.stdout.splitlines() if x.startswith("{")]
    return result.exit_code, json.loads(lines[-1]) if lines else {}, result.output


# -- item 3: a verdict needs a minimum share of measured weight; empty answers fail -----------------------


@pytest.mark.parametrize("answer", ["", "Ok."])
def test_empty_answer_to_rag_privacy_is_unscored_not_production_ready(bqas_home: Path, answer: str) -> None:
    code, record, output = _score({"query": QUESTION, "context": FACTS[0], "response": answer}, "rag_privacy")
    assert code == 1, output  # unscored: misses max_unscored (default 0)
    assert record["verdict"] == "unscored" and record["composite_score"] is None
    assert "40% of the composite weight" in record["unscored_reason"]
    assert "min_measured_weight" in record["unscored_reason"]


@pytest.mark.parametrize("answer", ["", "Ok.", "好的"])
def test_empty_or_trivial_answer_fails_grounding(bqas_home: Path, answer: str) -> None:
    sample = {"query": QUESTION, "available_facts": FACTS, "response": answer}
    _code, record, output = _score(sample, "rag_hallucination", "--max-unscored", "1")
    assert record["verdict"] == "failed", output
    assert record["dimensions"]["grounding_score"]["value"] == 0.0


def test_ok_to_a_voice_question_is_not_a_pass(bqas_home: Path) -> None:
    _code, record, output = _score({**VOICE, "response": "Ok."}, "voice")
    assert record["dimensions"]["relevance"]["value"] == 1.0, output
    assert record["verdict"] != "production_ready"


def test_a_failed_gate_still_fails_below_the_minimum_share(bqas_home: Path) -> None:
    pii = "Die Schülerin Anna Schmidt (anna.schmidt@example.org) hat die Note 5."
    _code, record, output = _score({"query": QUESTION, "context": FACTS[0], "response": pii}, "rag_privacy")
    assert record["verdict"] == "failed" and record["status"] == "scored", output


def test_min_measured_weight_is_a_policy_setting(tmp_path: Path, bqas_home: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("defaults:\n  min_measured_weight: 0.8\n", encoding="utf-8")
    sample = {"query": QUESTION, "context": FACTS[0], "response": "Es wiegt 7370 kg."}
    # Offline rag_privacy measures its PII gate and anonymization: 70 % of the weight, enough by default.
    code, record, output = _score(sample, "rag_privacy")
    assert code == 0 and record["verdict"] == "production_ready" and record["coverage"] == 0.7, output
    unscored = _score(sample, "rag_privacy", "--policy", str(policy))[1]
    assert unscored["verdict"] == "unscored" and "needs 80%" in unscored["unscored_reason"]
    policy.write_text("defaults:\n  min_measured_weight: 1.5\n", encoding="utf-8")
    assert _score(sample, "rag_privacy", "--policy", str(policy))[0] == 2


# -- item 7: YAML alias bombs -----------------------------------------------------------------------------


def test_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text("{}\n", encoding="utf-8")
    rows = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\njudges: [voice]\ndataset: d.jsonl\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"bomb\.yaml: YAML aliases expand to more than 200000 nodes"):
        load_scenario(path)
    path.write_text("name: &n [*n]\njudges: [voice]\ndataset: d.jsonl\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"alias refers to itself|invalid YAML"):
        load_scenario(path)
    path.write_text(
        "name: x\njudges: [voice]\ndataset: d.jsonl\nx: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8"
    )
    with pytest.raises(ScenarioError, match="nested deeper"):
        load_scenario(path)
    policy = tmp_path / "policy.yaml"
    policy.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "-", "--backend", "offline", "--policy", str(policy)], input="{}")
    assert result.exit_code == 2 and "aliases expand" in result.output


# -- items 16, 17, 20 and the exit-code rule ---------------------------------------------------------------


def _scenario(tmp_path: Path, rows: list[dict[str, Any]], extra: str = "", backend: str = "offline") -> Path:
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: rules\njudges: [voice]\nbackend: {backend}\ndataset: data.jsonl\n{extra}", encoding="utf-8")
    return path


def _run(path: Path, *extra: str) -> Any:
    return CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(path.parent / "o"), *extra])


def test_a_run_where_every_sample_is_invalid_exits_2(tmp_path: Path, bqas_home: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text('{"id": "a"}\n{"id": "b", "user_input": 1}\n', encoding="utf-8")
    result = _run(path)
    assert result.exit_code == 2 and "no valid sample: 2 of 2 are invalid" in result.output


@pytest.mark.parametrize("value", ["0", "-3"])
def test_concurrency_below_one_is_a_usage_error(tmp_path: Path, bqas_home: Path, value: str) -> None:
    path = _scenario(tmp_path, [VOICE])
    result = _run(path, "--concurrency", value)
    assert result.exit_code == 2 and "--concurrency: expected at least 1" in result.output
    assert CliRunner().invoke(app, ["runs", "--json"]).output.strip() in ("[]", "")
    score = CliRunner().invoke(
        app, ["score", "-", "--backend", "offline", "--concurrency", value], input=json.dumps(VOICE)
    )
    assert score.exit_code == 2


def test_max_unscored_as_count_or_share_gates_the_run(tmp_path: Path, bqas_home: Path) -> None:
    rows = [{**VOICE, "id": f"s{i}"} for i in range(4)]
    with ScriptedLLM(default=Reply(content="not json")) as server:  # every judgment ends unscored
        llm = ["--base-url", server.base_url, "--model", "m", "--no-cache"]
        for limit, code in (
            ("", 1),
            ("max_unscored: 3\n", 1),
            ("max_unscored: 4\n", 0),
            ("max_unscored: 0.5\n", 1),
            ("max_unscored: 1\n", 1),
        ):
            path = _scenario(tmp_path, rows, f"thresholds:\n  {limit}" if limit else "", backend="llm")
            result = _run(path, *llm)
            assert result.exit_code == code, (limit, result.output)
            assert "max_unscored" in result.output
    path.write_text(path.read_text().replace("max_unscored: 1", "max_unscored: 2.5"), encoding="utf-8")
    with pytest.raises(ScenarioError, match="max_unscored"):
        load_scenario(path)


def test_score_run_and_calibrate_agree_on_unscored_results(tmp_path: Path, bqas_home: Path) -> None:
    """One rule: 0 all gates met; 1 a gate missed (an unscored result misses max_unscored, default 0);
    2 usage or input error."""
    with ScriptedLLM(default=Reply(content="not json")) as server:
        llm = ["--backend", "llm", "--base-url", server.base_url, "--model", "m", "--no-cache"]
        score = CliRunner().invoke(app, ["score", "-", *llm], input=json.dumps(VOICE))
        assert score.exit_code == 1 and "1 of 1 results unscored" in score.output
        allowed = CliRunner().invoke(app, ["score", "-", *llm, "--max-unscored", "1"], input=json.dumps(VOICE))
        assert allowed.exit_code == 0
        run = _run(_scenario(tmp_path, [VOICE]), *llm)
        assert run.exit_code == 1
        gold = tmp_path / "gold.jsonl"
        gold.write_text(
            json.dumps({**VOICE, "id": "g1", "expected": {"verdict": "production_ready"}}) + "\n", encoding="utf-8"
        )
        targets = tmp_path / "t.yaml"
        targets.write_text(
            "fpr_max: null\nfnr_max: null\nagreement_min: null\nlatency_mean_max_ms: null\n", encoding="utf-8"
        )
        cal = CliRunner().invoke(
            app, ["calibrate", "--gold", str(gold), "-j", "voice", *llm, "--targets", str(targets)]
        )
        assert cal.exit_code == 1, cal.output
        targets.write_text(targets.read_text() + "abstention_max: 1\n", encoding="utf-8")
        cal = CliRunner().invoke(
            app, ["calibrate", "--gold", str(gold), "-j", "voice", *llm, "--targets", str(targets)]
        )
        assert cal.exit_code == 0, cal.output
    bad = CliRunner().invoke(app, ["score", "-", "--backend", "offline"], input='{"user_input": 3}')
    assert bad.exit_code == 2
