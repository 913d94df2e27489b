"""No call that cannot be judged: a run whose judge needs a field that neither the samples sent nor the
target's reply (its ``outputs``) can give is refused before the first call, and ``--dry-run`` exits 2 on
what the real run would refuse (an unset variable, a field the target cannot give, too many invalid
samples), so that CI can run it as the pre-flight check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app, records, voice_samples, write_scenario


def _openai_app(calls: list[dict[str, Any]]) -> web.Application:
    async def completions(request: web.Request, body: dict[str, Any]) -> web.Response:
        calls.append(body)
        content = json.dumps({"answer": "Gern.", "intent": "reminder"})
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": content}}]})

    return json_app(completions, "/v1/chat/completions")


def test_an_openai_target_without_the_voice_judges_intent_is_refused_before_any_call(
    tmp_path: Path, bqas_home: Path
) -> None:
    calls: list[dict[str, Any]] = []
    with ServedApp(_openai_app(calls)) as server:
        bare = {"type": "openai", "base_url": f"{server.url}/v1", "model": "m"}
        path = write_scenario(tmp_path, voice_samples(4), bare)
        dry = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
        real = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
        assert calls == []  # neither asked the assistant
        mapped = {**bare, "outputs": {"response": "$.answer", "detected_intent": "$.intent"}}
        path = write_scenario(tmp_path, voice_samples(4), mapped)
        fixed_dry = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
        fixed = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "p")])
    for result in (dry, real):
        assert result.exit_code == 2, result.output
        assert "judge voice needs detected_intent" in result.output
        assert "outputs: {response: $.answer, detected_intent: $.detected_intent}" in result.output
    assert not (tmp_path / "o").exists()
    assert len(json.loads(CliRunner().invoke(app, ["runs", "--json"]).output)) == 1  # only the fixed run
    assert fixed_dry.exit_code == 0, fixed_dry.output
    assert fixed.exit_code == 0, fixed.output
    assert len(calls) == 4


def test_a_field_the_dataset_gives_needs_no_mapping(tmp_path: Path, bqas_home: Path) -> None:
    samples = [{**s, "detected_intent": "reminder"} for s in voice_samples(2)]
    target = {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    result = CliRunner().invoke(app, ["run", str(write_scenario(tmp_path, samples, target)), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "target calls 2" in result.output


def test_dry_run_fails_on_an_unset_variable_and_on_invalid_samples_beyond_max_invalid(
    tmp_path: Path, bqas_home: Path
) -> None:
    target = {
        "type": "http",
        "url": "http://127.0.0.1:9/chat",
        "headers": {"Authorization": "Bearer ${PREFLIGHT_UNSET_TOKEN}"},
        "body": {"text": "{user_input}"},
        "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
    }
    unset = CliRunner().invoke(app, ["run", str(write_scenario(tmp_path, voice_samples(1), target)), "--dry-run"])
    assert unset.exit_code == 2
    assert "target.headers: environment variable PREFLIGHT_UNSET_TOKEN is not set" in unset.output
    bad = [*voice_samples(2), {"id": "x", "expected_intent": "reminder"}]  # no user message at all
    no_target = [{**s, "response": "Gern.", "detected_intent": "reminder"} for s in bad[:2]] + [bad[2]]
    strict = CliRunner().invoke(app, ["run", str(write_scenario(tmp_path, no_target, None)), "--dry-run"])
    assert strict.exit_code == 2, strict.output
    assert "1 invalid samples, thresholds.max_invalid allows 0" in strict.output
    lenient_path = write_scenario(tmp_path, no_target, None, thresholds={"max_invalid": 1})
    lenient = CliRunner().invoke(app, ["run", str(lenient_path), "--dry-run"])
    assert lenient.exit_code == 0, lenient.output


def test_dry_run_fails_on_a_python_target_that_cannot_be_imported(tmp_path: Path, bqas_home: Path) -> None:
    target = {"type": "python", "function": "no_such_package_here.assistant:answer"}
    result = CliRunner().invoke(app, ["run", str(write_scenario(tmp_path, voice_samples(1), target)), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "target.function: cannot import 'no_such_package_here.assistant'" in result.output


def test_dry_run_fails_on_a_target_with_ray_as_the_run_does(tmp_path: Path, bqas_home: Path) -> None:
    target = {"type": "python", "function": "bqas.demo.assistant:answer"}
    path = write_scenario(tmp_path, voice_samples(1), target, ray={"address": "local"})
    dry = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    real = CliRunner().invoke(app, ["run", str(path), "--no-progress"])
    assert dry.exit_code == 2 and real.exit_code == 2, dry.output + real.output
    assert "run it without Ray" in dry.output and "run it without --ray" in real.output


def test_a_sample_that_cannot_be_judged_is_not_sent(tmp_path: Path, bqas_home: Path) -> None:
    calls: list[dict[str, Any]] = []
    samples = [*voice_samples(2), {"id": "no-expectation", "user_input": "Erinnere mich an die Konferenz"}]
    with ServedApp(_openai_app(calls)) as server:
        target = {
            "type": "openai",
            "base_url": f"{server.url}/v1",
            "model": "m",
            "outputs": {"response": "$.answer", "detected_intent": "$.intent"},
        }
        path = write_scenario(tmp_path, samples, target, thresholds={"max_invalid": 1})
        dry = CliRunner().invoke(app, ["run", str(path), "--dry-run", "--json"])
        real = CliRunner().invoke(app, ["run", str(path), "--no-progress", "--out", str(tmp_path / "o")])
    assert real.exit_code == 0, real.output
    assert len(calls) == 2  # the sample without expected_intent was not sent
    assert json.loads(dry.stdout)["target_calls"] == 2  # and the dry run counted as much
    by_id = {r["response_id"]: r for r in records(tmp_path / "o")}
    assert by_id["no-expectation"]["status"] == "invalid"
    assert "expected_intent" in by_id["no-expectation"]["errors"][0]
    assert "not sent to the target" in by_id["no-expectation"]["errors"][0]
    assert {by_id["s000"]["status"], by_id["s001"]["status"]} == {"scored"}
