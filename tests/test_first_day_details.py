"""Small things a new user trips over: `method: post`, a target error without a dangling dot, the list of
known judges offers only judges that grade, `bqas demo-assistant --help` keeps its example's lines."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.targets.config import TargetConfigError, load_target_option
from test_service_api import Service, _start


def test_http_method_in_any_case() -> None:
    target = load_target_option("{type: http, url: http://127.0.0.1:1/chat, method: post, outputs: {response: $.a}}")
    assert getattr(target, "method", None) == "POST"


def test_a_target_error_names_the_field_without_a_dangling_dot() -> None:
    with pytest.raises(TargetConfigError) as caught:
        load_target_option("{url: http://127.0.0.1:1/chat}")
    assert str(caught.value).startswith("--target: target: ") and "target.:" not in str(caught.value)


@pytest.fixture
def svc(tmp_path: Path) -> Service:
    yield from _start(tmp_path)


def test_unknown_judge_offers_only_judges_that_grade(svc: Service, tmp_path: Path, bqas_home: Path) -> None:
    body = {"judges": ["nope"], "sample": {"user_input": "x", "response": "y"}}
    answer = httpx.post(f"{svc.url}/api/score", json=body, headers={"Authorization": f"Bearer {svc.key_a}"})
    assert answer.status_code == 422
    message = str(answer.json()["detail"])
    assert "voice" in message and "synthetic" not in message, message
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\njudges: [nope]\nsamples: []\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2 and "known: " in result.output and "synthetic" not in result.output


def test_demo_assistant_help_keeps_the_example_as_two_commands() -> None:
    result = CliRunner().invoke(app, ["demo-assistant", "--help"], env={"COLUMNS": "80"})
    lines = [line.strip() for line in result.output.splitlines()]
    assert "bqas demo-assistant --port 8790 &" in lines and "bqas run scenarios/voice_de_target.yaml" in lines


def test_ci_logs_leave_out_the_local_review_queue(tmp_path: Path, bqas_home: Path) -> None:
    scenario = tmp_path / "s.yaml"
    sample = (
        '{"id": "s1", "user_input": "Erinnere mich morgen an die Konferenz", "detected_intent": "weather",'
        ' "response": "Morgen wird es sonnig.", "expected_intent": "reminder"}'
    )
    scenario.write_text(f"name: s\njudges: [voice]\nsamples:\n  - {sample}\n", encoding="utf-8")
    local = CliRunner(env={"CI": None}).invoke(app, ["run", str(scenario), "--out", str(tmp_path / "a")])
    assert "\nreview: " in local.output  # at a desk: what the review loop found, and where
    ci = CliRunner(env={"CI": "true"}).invoke(app, ["run", str(scenario), "--out", str(tmp_path / "b")])
    assert ci.exit_code == local.exit_code and "\nreview: " not in ci.output, ci.output
