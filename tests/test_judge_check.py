"""`bqas judge-check`: the judge measured on clear known-answer pairs before it is trusted.

A scripted judge that answers every pair correctly comes out fit, one that answers the same whatever it
reads comes out unfit, and the small real model of the dev install (SmolLM2-135M in the embedded
llama.cpp engine) comes out unfit for every judge that has a known-answer set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judging.check import available_sets, load_pairs, set_path
from bqas.llm.local import LocalEngine
from bqas.testing.local_engine import TEST_CTX, TEST_SLOTS, TEST_THREADS
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {
    "voice": {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"},
    "rag_hallucination": {
        "grounding_score": 100,
        "invention_detection": "pass",
        "source_attribution": 5,
        "hallucinated_claims": [],
    },
}
BAD = {
    "voice": {"intent_accuracy": 0, "faithfulness": 1, "relevance": 2, "coherence": 3, "safety": "pass"},
    "rag_hallucination": {
        "grounding_score": 10,
        "invention_detection": "fail",
        "source_attribution": 1,
        "hallucinated_claims": ["invented"],
    },
}


def _reply(values: dict[str, Any]) -> Reply:
    return Reply(content=json.dumps({**values, "reasoning": "Geprüft."}))


def _check(server: ScriptedLLM, *args: str) -> Any:
    return CliRunner().invoke(
        app,
        ["judge-check", "--backend", "llm", "--base-url", server.base_url, "--model", "scripted", *args],
    )


def test_every_set_has_about_twenty_clear_pairs_with_the_judges_inputs() -> None:
    from bqas.judgment.spec import default_registry

    sets = available_sets()
    assert {("voice", "de"), ("voice", "zh"), ("rag_hallucination", "de"), ("rag_hallucination", "zh")} <= set(sets)
    for judge, language in sets:
        path = set_path(judge, language)
        assert path is not None
        pairs = load_pairs(path)
        inputs = set(default_registry().get(judge).inputs)
        assert len(pairs) >= 20, path
        for pair in pairs:
            assert set(pair.good) == inputs and set(pair.bad) == inputs, pair.id
            assert pair.good != pair.bad, pair.id


def test_a_judge_that_answers_correctly_is_fit(bqas_home: Path) -> None:
    with ScriptedLLM(default=_reply(GOOD["voice"])) as server:
        for judge in ("voice", "rag_hallucination"):
            path = set_path(judge, "de")
            assert path is not None
            for pair in load_pairs(path):
                server.on(json.dumps(pair.bad["response"], ensure_ascii=False)[1:-1], _reply(BAD[judge]))
        server.on("available_facts", _reply(GOOD["rag_hallucination"]))  # after the bad rules: those win
        result = _check(server, "--json")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {"voice", "rag_hallucination"}
    for row in rows:
        assert row["fit"] and row["pairs_right"] == 1.0 and row["parse_failures"] == 0.0, row
        assert row["verdict_agreement"] >= 0.7 and row["llm_calls"] == 2 * row["pairs"], row


def test_a_judge_that_answers_the_same_whatever_it_reads_is_unfit(bqas_home: Path) -> None:
    # The voice judge of a broken model: every answer "failed", reasoning "test".
    with ScriptedLLM(default=Reply(content=json.dumps({**BAD["voice"], "reasoning": "test"}))) as server:
        result = _check(server, "--judge", "voice")
    assert result.exit_code == 1, result.output
    assert "UNFIT" in result.stdout and "0% of 20 clear pairs ranked right" in result.stdout
    assert "pairs_right 0% below the floor 80%" in result.stdout


def test_a_judge_whose_replies_do_not_parse_is_unfit(bqas_home: Path) -> None:
    with ScriptedLLM(default=Reply(content="no JSON here")) as server:
        result = _check(server, "--judge", "rag_hallucination", "--limit", "3", "--json")
    assert result.exit_code == 1, result.output
    (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert row["parse_failures"] == 1.0 and not row["fit"]
    assert "parse_failures 100% above 10%" in row["reasons"]


def test_the_check_is_cached_per_model_judge_and_prompt(bqas_home: Path) -> None:
    with ScriptedLLM(default=_reply(GOOD["voice"])) as server:
        first = _check(server, "--judge", "voice", "--limit", "2")
        asked = len(server.requests)
        again = _check(server, "--judge", "voice", "--limit", "2")
        assert len(server.requests) == asked  # the second check asked nothing
        fresh = _check(server, "--judge", "voice", "--limit", "2", "--no-cache")
        assert len(server.requests) > asked
    assert "(cached)" not in first.stdout and "(cached)" in again.stdout and "(cached)" not in fresh.stdout


def test_the_offline_judges_pass_their_known_answer_sets(bqas_home: Path) -> None:
    result = CliRunner().invoke(app, ["judge-check", "--backend", "offline", "--json", "--no-cache"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {"voice", "rag_hallucination"}
    assert all(r["fit"] and r["backend"] == "offline" and r["model"] is None for r in rows), rows


def test_an_unknown_language_set_is_a_usage_error(bqas_home: Path) -> None:
    result = CliRunner().invoke(app, ["judge-check", "--backend", "offline", "--judge", "voice", "-l", "en"])
    assert result.exit_code == 2 and "no known-answer set for judge voice in en" in result.output


@pytest.mark.timeout(900)
def test_the_small_real_model_is_unfit_for_every_judge(
    local_llm: LocalEngine, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2-135M on the real engine: the first 3 pairs of each set (temperature 0, so the same replies
    every run) are enough to show that it cannot tell a right answer from a wrong one."""
    for name, value in (
        ("BQAS_LLM_GGUF_CTX", TEST_CTX),
        ("BQAS_LLM_GGUF_THREADS", TEST_THREADS),
        ("BQAS_LLM_GGUF_SLOTS", TEST_SLOTS),
        ("BQAS_LLM_MAX_TOKENS", 128),
    ):
        monkeypatch.setenv(name, str(value))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    args = ["judge-check", "--backend", "llm", "--llm-gguf", str(local_llm.model.path), "--limit", "3", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {j for j, lang in available_sets() if lang == "de"}
    for row in rows:
        assert not row["fit"] and row["reasons"], row
        assert row["model"] and "SmolLM2" in row["model"] and row["llm_calls"] >= 6, row


def test_the_examples_of_the_docs_run_as_shown(bqas_home: Path) -> None:
    import re
    import shlex

    doc = (Path(__file__).resolve().parents[1] / "docs" / "judge-check.md").read_text(encoding="utf-8")
    commands = [line for block in re.findall(r"```bash\n(.*?)```", doc, re.S) for line in block.splitlines()]
    assert commands, "docs/judge-check.md shows no command"
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "bqas", command
        result = CliRunner().invoke(app, argv[1:])
        assert result.exit_code == 0, (command, result.output)
        assert ": fit - " in result.stdout, command
