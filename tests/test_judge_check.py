"""`bqas judge-check`: the judge measured on clear known-answer pairs before it is trusted.

A scripted judge that answers every pair correctly comes out fit, one that answers the same whatever it
reads comes out unfit, and the small real model of the dev install (SmolLM2-135M in the embedded
llama.cpp engine) comes out unfit for every judge that has a known-answer set. An LLM judge is checked as
the LLM tier alone unless --as-configured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.judging.check import available_sets, load_pairs, set_path
from bqas.llm.local import LocalEngine
from bqas.testing.judge_replies import BAD, GOOD
from bqas.testing.local_engine import TEST_CTX, TEST_SLOTS, TEST_THREADS
from bqas.testing.scripted_llm import Reply, ScriptedLLM

REASONING = {"de": "Geprüft.", "en": "Checked.", "zh": "已检查。"}
#: Every known-answer set BQAS ships: (judge, language).
SETS = {
    *(
        (judge, lang)
        for judge in ("voice", "rag_hallucination", "rag_privacy", "rag_namespace", "rag_retrieval")
        for lang in ("de", "en", "zh")
    ),
    ("rag_operator", "de"),
}


def _reply(values: dict[str, Any], language: str = "de") -> Reply:
    return Reply(content=json.dumps({**values, "reasoning": REASONING[language]}, ensure_ascii=False))


def _correct_judge(language: str) -> Any:
    """A scripted LLM judge that knows every pair of the language's sets: the good answer graded as good, the
    bad one as bad (the judge's evaluated field, as the prompt quotes it, names the answer). A bad answer is
    looked for first: a good one may stand word for word in the facts that both prompts of its pair quote."""
    from bqas.judgment.spec import default_registry

    registry = default_registry()
    bad: dict[str, Reply] = {}
    good: dict[str, Reply] = {}
    for judge, set_language in available_sets():
        path = set_path(judge, set_language)
        if set_language != language or path is None:
            continue
        (field,) = registry.get(judge).evaluated
        for pair in load_pairs(path):
            bad[json.dumps(pair.bad[field], ensure_ascii=False)[1:-1]] = _reply(BAD[judge], language)
            good[json.dumps(pair.good[field], ensure_ascii=False)[1:-1]] = _reply(GOOD[judge], language)

    def respond(payload: dict[str, Any]) -> Reply | None:
        text = json.dumps(payload.get("messages", []), ensure_ascii=False)
        for replies in (bad, good):
            found = [needle for needle in replies if needle in text]
            if found:
                return replies[max(found, key=len)]
        return None

    return respond


def _check(server: ScriptedLLM, *args: str) -> Any:
    return CliRunner().invoke(
        app,
        ["judge-check", "--backend", "llm", "--base-url", server.base_url, "--model", "scripted", *args],
    )


def test_every_set_has_about_twenty_clear_pairs_with_the_judges_inputs() -> None:
    from bqas.judgment.spec import default_registry

    sets = available_sets()
    assert set(sets) == SETS
    for judge, language in sets:
        path = set_path(judge, language)
        assert path is not None
        pairs = load_pairs(path)
        inputs = set(default_registry().get(judge).inputs)
        assert len(pairs) >= 20, path
        assert len({p.id for p in pairs}) == len(pairs), path
        for pair in pairs:
            assert set(pair.good) == inputs and set(pair.bad) == inputs, pair.id
            assert pair.good != pair.bad, pair.id


@pytest.mark.parametrize("language", ["de", "en", "zh"])
def test_a_judge_that_answers_correctly_is_fit(bqas_home: Path, language: str) -> None:
    with ScriptedLLM(responder=_correct_judge(language), default=Reply(content="no JSON here")) as server:
        result = _check(server, "--json", "-l", language)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {judge for judge, lang in SETS if lang == language}
    for row in rows:
        assert row["fit"] and row["pairs_right"] == 1.0 and row["parse_failures"] == 0.0, (
            row["judge"],
            row["wrong_pairs"],
        )
        assert row["verdict_agreement"] >= 0.7 and row["llm_calls"] == 2 * row["pairs"], row
        assert row["measured"] == "llm tier alone" and row["safety_gate"] is False, row


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


def test_an_llm_judge_is_checked_alone_and_as_configured_only_when_asked(bqas_home: Path) -> None:
    """The deterministic PII gate runs beside every backend and its rule hits stand: on rag_privacy's clear
    pairs it, not the LLM, fails the bad answers. So an LLM judge is checked as the LLM tier alone: an LLM that
    finds nothing anywhere is unfit, with backend llm and with auto (the same measurement, so auto's check
    comes from the cache). --as-configured measures the judge with the gate beside it: then the gate decides,
    and it comes out fit, a result cached under a key of its own."""
    with ScriptedLLM(default=_reply(GOOD["rag_privacy"])) as server:
        alone = _check(server, "--judge", "rag_privacy", "--json")
        asked = len(server.requests)
        auto = CliRunner().invoke(
            app,
            ["judge-check", "--judge", "rag_privacy", "--base-url", server.base_url, "--model", "scripted", "--json"],
        )
        assert len(server.requests) == asked  # auto with an LLM checks the LLM alone too: the cached result
        configured = _check(server, "--judge", "rag_privacy", "--json", "--as-configured")
        text = _check(server, "--judge", "rag_privacy")
    (by_llm,) = [json.loads(line) for line in alone.stdout.splitlines() if line.startswith("{")]
    (by_auto,) = [json.loads(line) for line in auto.stdout.splitlines() if line.startswith("{")]
    (gated,) = [json.loads(line) for line in configured.stdout.splitlines() if line.startswith("{")]
    assert alone.exit_code == 1 and not by_llm["fit"] and by_llm["pairs_right"] == 0.0, by_llm
    assert by_llm["measured"] == "llm tier alone" and by_llm["backend"] == "llm" and by_llm["safety_gate"] is False
    assert auto.exit_code == 1 and by_auto["cached"] and by_auto["measured"] == "llm tier alone", by_auto
    assert by_auto["key"] == by_llm["key"]
    assert configured.exit_code == 0 and gated["fit"] and not gated["cached"], gated
    assert gated["measured"] == "as configured" and gated["safety_gate"] is True and gated["key"] != by_llm["key"]
    assert "(de, scripted, llm tier alone): UNFIT" in text.stdout and "(cached)" in text.stdout


def test_no_known_answer_pair_trips_the_judge_manipulation_rules() -> None:
    """The rules run beside the LLM tier alone too (bqas.judging.check_engine): they must not answer a pair."""
    from bqas.judging.manipulation import find_manipulation
    from bqas.judgment.spec import default_registry

    registry = default_registry()
    for judge, language in available_sets():
        path = set_path(judge, language)
        assert path is not None
        for pair in load_pairs(path):
            for side in (pair.good, pair.bad):
                assert find_manipulation(registry.get(judge), side) == {}, (judge, language, pair.id)


@pytest.mark.parametrize("language", ["de", "en", "zh"])
def test_the_offline_judges_pass_their_known_answer_sets(bqas_home: Path, language: str) -> None:
    result = CliRunner().invoke(app, ["judge-check", "--backend", "offline", "--json", "--no-cache", "-l", language])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {judge for judge, lang in SETS if lang == language}
    assert all(r["fit"] and r["backend"] == "offline" and r["model"] is None for r in rows), rows
    assert all(r["measured"] == "offline tier" and r["safety_gate"] for r in rows), rows


def test_an_unknown_language_set_is_a_usage_error(bqas_home: Path) -> None:
    result = CliRunner().invoke(app, ["judge-check", "--backend", "offline", "--judge", "rag_operator", "-l", "en"])
    assert result.exit_code == 2 and "no known-answer set for judge rag_operator in en" in result.output


@pytest.mark.timeout(1500)
def test_the_small_real_model_is_unfit_for_every_judge(
    local_llm: LocalEngine, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2-135M on the real engine, with the default settings: the first 2 pairs of each set (temperature
    0, so the same replies every run) are enough to show that it cannot tell a right answer from a wrong one.
    The check measures the LLM tier alone, so neither the PII gate (which decides rag_privacy's clear pairs
    whatever the model says) nor the offline facts of auto answer for it."""
    for name, value in (
        ("BQAS_LLM_GGUF_CTX", TEST_CTX),
        ("BQAS_LLM_GGUF_THREADS", TEST_THREADS),
        ("BQAS_LLM_GGUF_SLOTS", TEST_SLOTS),
        ("BQAS_LLM_MAX_TOKENS", 128),
    ):
        monkeypatch.setenv(name, str(value))
    from bqas.settings import get_settings

    get_settings.cache_clear()
    args = ["judge-check", "--llm-gguf", str(local_llm.model.path), "--limit", "2", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert {r["judge"] for r in rows} == {j for j, lang in available_sets() if lang == "de"}
    for row in rows:
        assert not row["fit"] and row["reasons"], row
        assert row["model"] and "SmolLM2" in row["model"] and row["llm_calls"] >= 4, row
        assert row["measured"] == "llm tier alone" and row["backend"] == "llm", row


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
        if "--list" in argv:
            assert "rag_operator: de\n" in result.stdout and "voice: de, en, zh\n" in result.stdout, command
        else:
            assert ": fit - " in result.stdout, command


def test_the_list_names_every_judge_with_a_set_and_its_languages(bqas_home: Path) -> None:
    result = CliRunner().invoke(app, ["judge-check", "--list"])
    assert result.exit_code == 0, result.output
    listed = {
        (judge, lang.strip())
        for line in result.stdout.splitlines()
        for judge, langs in [line.split(": ", 1)]
        for lang in langs.split(",")
    }
    assert listed == SETS
