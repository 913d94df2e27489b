"""A run that judges with an LLM measures the judge on its known-answer set first (bqas.runner.judge_gate):
an unfit judge stops the run with exit 2 and the figures, unless --accept-unfit-judge; a fit one runs, and
the run records the check."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.testing.scripted_llm import Reply, ScriptedLLM

CONSTANT = {"intent_accuracy": 0, "faithfulness": 1, "relevance": 1, "coherence": 1, "safety": "pass"}
SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.fixture
def checked(bqas_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BQAS_JUDGE_CHECK", "true")
    from bqas.settings import get_settings

    get_settings.cache_clear()
    return bqas_home


def _scenario(tmp_path: Path, backend: str = "llm") -> Path:
    (tmp_path / "data.jsonl").write_text(json.dumps(SAMPLE, ensure_ascii=False) + "\n", encoding="utf-8")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        f"name: checked\njudges: [voice]\nlanguage: de\nbackend: {backend}\ndataset: data.jsonl\n", encoding="utf-8"
    )
    return path


def _run(path: Path, server: ScriptedLLM, *extra: str) -> object:
    args = ["run", str(path), "--no-progress", "--base-url", server.base_url, "--model", "broken", *extra]
    return CliRunner().invoke(app, args)


def _runs(home: Path) -> int:
    db = home / "bqas.sqlite"
    if not db.is_file():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def test_a_run_refuses_an_unfit_llm_judge_with_the_figures_and_the_override(checked: Path, tmp_path: Path) -> None:
    reply = Reply(content=json.dumps({**CONSTANT, "reasoning": "test"}))
    with ScriptedLLM(default=reply) as server:
        refused = _run(_scenario(tmp_path), server)
        assert refused.exit_code == 2, refused.output  # type: ignore[attr-defined]
        out = refused.output  # type: ignore[attr-defined]
        assert "the judge is unfit" in out and "UNFIT - 0% of 20 clear pairs ranked right" in out
        assert "--accept-unfit-judge" in out
        assert _runs(checked) == 0  # no run was created
        asked = len(server.requests)
        accepted = _run(_scenario(tmp_path), server, "--accept-unfit-judge", "--out", str(tmp_path / "o"))
        # The check is cached: the second run asked only for its one sample.
        assert len(server.requests) == asked + 1
    out = accepted.output  # type: ignore[attr-defined]
    assert accepted.exit_code in (0, 1), out  # type: ignore[attr-defined]
    assert "UNFIT" in out and "run anyway (--accept-unfit-judge)" in out
    junit = (tmp_path / "o" / "junit.xml").read_text(encoding="utf-8")
    assert '<property name="judge_check.voice.fit" value="false"/>' in junit
    assert '<property name="judge_check.voice.accepted_unfit" value="true"/>' in junit
    assert '<property name="judge_check.voice.measured" value="llm tier alone"/>' in junit


def test_an_offline_run_checks_nothing(checked: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(_scenario(tmp_path, "offline")), "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    assert "judge-check" not in result.output


def test_a_fit_llm_judge_runs_and_the_run_records_its_check(checked: Path, tmp_path: Path) -> None:
    from bqas.judging.check import load_pairs, set_path

    good = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"}
    with ScriptedLLM(default=Reply(content=json.dumps({**good, "reasoning": "Passt."}))) as server:
        path = set_path("voice", "de")
        assert path is not None
        for pair in load_pairs(path):
            bad = json.dumps(pair.bad["response"], ensure_ascii=False)[1:-1]
            server.on(bad, Reply(content=json.dumps({**CONSTANT, "reasoning": "Falsch."})))
        result = _run(_scenario(tmp_path), server, "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert "judge-check voice (de, broken, llm tier alone): fit - 100% of 20 clear pairs ranked right" in result.output  # type: ignore[attr-defined]
    with sqlite3.connect(checked / "bqas.sqlite") as conn:
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
    (check,) = config["judge_check"]
    assert check["fit"] and check["model"] == "broken" and not check["accepted_unfit"]
    assert check["measured"] == "llm tier alone" and check["backend"] == "llm" and check["safety_gate"] is False


def _fit_judge(server: ScriptedLLM) -> ScriptedLLM:
    """``server`` answering the voice set like a judge that can tell the pairs apart."""
    from bqas.judging.check import load_pairs, set_path

    path = set_path("voice", "de")
    assert path is not None
    for pair in load_pairs(path):
        bad = json.dumps(pair.bad["response"], ensure_ascii=False)[1:-1]
        server.on(bad, Reply(content=json.dumps({**CONSTANT, "reasoning": "Falsch."})))
    return server


def _stored_check(home: Path) -> list[dict[str, object]]:
    with sqlite3.connect(home / "bqas.sqlite") as conn:
        config = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
    return list(config["judge_check"])


def test_a_resumed_run_checks_its_judge_again(checked: Path, tmp_path: Path) -> None:
    """--resume takes the LLM from its own command line: an unfit one there stops the resume (exit 2) and
    changes nothing; the fit one is checked again from the cache (no LLM call) and the run records that."""
    good = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"}
    scenario = _scenario(tmp_path)
    with _fit_judge(ScriptedLLM(default=Reply(content=json.dumps({**good, "reasoning": "Passt."})))) as fit:
        first = _run(scenario, fit, "--out", str(tmp_path / "o"))
        assert first.exit_code == 0, first.output  # type: ignore[attr-defined]
        with sqlite3.connect(checked / "bqas.sqlite") as conn:
            run_id = str(conn.execute("SELECT id FROM runs").fetchone()[0])
        (at_start,) = _stored_check(checked)
        assert at_start["fit"] and "resumed" not in at_start

        with ScriptedLLM(default=Reply(content=json.dumps({**CONSTANT, "reasoning": "test"}))) as broken:
            args = ["run", "--resume", run_id, "--no-progress", "--base-url", broken.base_url, "--model", "other"]
            refused = CliRunner().invoke(app, args)
            assert refused.exit_code == 2, refused.output
            assert (
                "the judge is unfit" in refused.output
                and "judge-check voice (de, other, llm tier alone): UNFIT" in refused.output
            )
            assert len(broken.requests) == 40  # the whole set, asked of the resume's model
        assert _stored_check(checked) == [at_start]  # the refused resume changed nothing

        asked = len(fit.requests)
        args = ["run", "--resume", run_id, "--no-progress", "--base-url", fit.base_url, "--model", "broken"]
        resumed = CliRunner().invoke(app, args)
        assert resumed.exit_code == 0, resumed.output
        assert len(fit.requests) == asked  # checked from the cache; every sample was already judged
    assert "judge-check voice (de, broken, llm tier alone): fit" in resumed.output
    (again,) = _stored_check(checked)
    assert again["fit"] and again["resumed"] is True and again["cached"] is True and again["model"] == "broken"
    report = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "(checked again on resume)" in report and "(cached result)" in report
    junit = (tmp_path / "o" / "junit.xml").read_text(encoding="utf-8")
    assert '<property name="judge_check.voice.resumed" value="true"/>' in junit
