"""The pull-request gate compares builds, not just files: a pull request that deletes failing samples does
not pass (``max_removed_samples``, default 0, or an allow-list), and a scenario with a live target is
compared with the main branch's stored baseline run (its replies reused), not a second call to the same
assistant. The action's script runs in a real git repository against a real assistant on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app
from test_ci_summary import ROOT, _action_env, _git

GOOD = [
    {
        "id": f"ok{i}",
        "user_input": f"Erinnere mich morgen an Termin {i}",
        "detected_intent": "reminder",
        "response": f"Ich erinnere dich morgen an Termin {i}.",
        "expected_intent": "reminder",
    }
    for i in range(4)
]
FAILING = [
    {
        "id": f"bad{i}",
        "user_input": f"Erinnere mich morgen an Termin {i}",
        "detected_intent": "weather",
        "response": "Morgen wird es sonnig.",
        "expected_intent": "reminder",
    }
    for i in range(2)
]


def _scenario(folder: Path, samples: list[dict[str, Any]], **extra: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"name": "pr-gate", "judges": ["voice"], "language": "de", "backend": "offline", "samples": samples, **extra}
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _repo(tmp_path: Path) -> Path:
    origin, repo = tmp_path / "origin.git", tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(repo)], check=True, capture_output=True)
    return repo


def _commit_main(repo: Path, env: dict[str, str]) -> None:
    _git(repo, "add", ".")
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True, env=env)
    _git(repo, "push", "-q", "origin", "HEAD:main")


def _action(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts/ci-action.sh")], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_pull_request_that_deletes_its_failing_samples_exits_1(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    env = _action_env(tmp_path)
    _scenario(repo / "qa", GOOD + FAILING, thresholds={"max_failed": 2})
    _commit_main(repo, env)
    # The pull request "fixes" the failing samples by deleting them: every gate of the run alone is met.
    _scenario(repo / "qa", GOOD, thresholds={"max_failed": 2})
    env = _action_env(
        tmp_path,
        BQAS_SCENARIO="qa/scenario.yaml",
        BQAS_OUT=str(tmp_path / "out"),
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_BASE_REF="main",
    )
    done = _action(repo, env)
    assert done.returncode == 1, done.stderr[-2000:]
    md = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "**Regression:** 2 samples of the baseline are missing from this run (&gt; 0): bad0, bad1" in md, md
    assert "samples removed: 2" in md


def test_removed_samples_gate_counts_only_what_the_scenario_does_not_allow(tmp_path: Path, bqas_home: Path) -> None:
    runner = CliRunner()
    base = _scenario(tmp_path / "base", GOOD + FAILING)
    assert (
        runner.invoke(app, ["run", str(base), "--out", str(tmp_path / "a"), "--no-progress"]).exit_code == 0
    )  # no gate set
    for name, thresholds, code in (
        ("strict", {}, 1),
        ("allowed", {"allow_removed_samples": ["bad0", "bad1"]}, 0),
        ("counted", {"max_removed_samples": 2}, 0),
        ("one-allowed", {"allow_removed_samples": ["bad0"]}, 1),
    ):
        pr = _scenario(tmp_path / name, GOOD, thresholds=thresholds)
        assert runner.invoke(app, ["run", str(pr), "--out", str(tmp_path / name / "o"), "--no-progress"]).exit_code == 0
        result = runner.invoke(app, ["ci-summary", str(tmp_path / name / "o"), "--baseline", str(tmp_path / "a")])
        assert result.exit_code == code, (name, result.output)
        assert ("missing from this run" in result.output) == (code == 1), name
    # The option overrides the scenario: --max-removed 2 lets the strict pull request pass.
    strict = runner.invoke(
        app, ["ci-summary", str(tmp_path / "strict" / "o"), "--baseline", str(tmp_path / "a"), "--max-removed", "2"]
    )
    assert strict.exit_code == 0, strict.output


def test_a_targeted_scenario_compares_with_the_stored_baseline_not_a_second_call(tmp_path: Path) -> None:
    calls: list[str] = []
    build = {"intent": "reminder"}

    async def assistant(request: web.Request, body: dict[str, Any]) -> web.Response:
        calls.append(str(body["text"]))
        intent = build["intent"]
        return web.json_response({"answer": f"Ich erinnere dich: {body['text']}.", "intent": {"name": intent}})

    samples = [
        {"id": f"t{i}", "user_input": f"Erinnere mich morgen an Termin {i}", "expected_intent": "reminder"}
        for i in range(4)
    ]
    repo = _repo(tmp_path)
    with ServedApp(json_app(assistant)) as served:
        target = {
            "type": "http",
            "url": f"{served.url}/chat",
            "body": {"text": "{user_input}"},
            "outputs": {"response": "$.answer", "detected_intent": "$.intent.name"},
        }
        _scenario(repo / "qa", samples, target=target)
        env = _action_env(tmp_path)
        _commit_main(repo, env)
        baseline = tmp_path / "runner_temp" / "bqas-baseline"
        # A push to main: the run is kept as the baseline (the action caches BQAS_BASELINE_DIR).
        push = _action(
            repo,
            _action_env(
                tmp_path,
                BQAS_SCENARIO="qa/scenario.yaml",
                BQAS_OUT=str(tmp_path / "main-out"),
                BQAS_HOME=str(tmp_path / "main-home"),
                GITHUB_EVENT_NAME="push",
                BQAS_BASELINE_DIR=str(baseline),
                BQAS_SAVE_BASELINE="true",
            ),
        )
        assert push.returncode == 0, push.stderr[-2000:]
        assert len(calls) == 4 and (baseline / "run-id").is_file()
        main_run = (baseline / "run-id").read_text(encoding="utf-8").strip()
        # The pull request's build of the assistant is worse; the PR also deletes a sample.
        build["intent"] = "weather"
        _scenario(repo / "qa", samples[:3], target=target)
        pr = _action(
            repo,
            _action_env(
                tmp_path,
                BQAS_SCENARIO="qa/scenario.yaml",
                BQAS_OUT=str(tmp_path / "pr-out"),
                GITHUB_EVENT_NAME="pull_request",
                GITHUB_BASE_REF="main",
                BQAS_BASELINE_DIR=str(baseline),
            ),
        )
    assert pr.returncode == 1, pr.stderr[-2000:]
    assert len(calls) == 4 + 3  # the pull request's samples once; the base side made no call
    base = [json.loads(line) for line in (tmp_path / "pr-out" / "base" / "results.jsonl").read_text().splitlines()]
    assert base and all(r["target"]["reused_from"] == main_run for r in base)
    md = (tmp_path / "pr-out" / "summary.md").read_text(encoding="utf-8")
    assert f"stored baseline run {main_run}" in md and "| t0::voice | production\\_ready |" in md, md
    assert "1 samples of the baseline are missing from this run (&gt; 0): t3" in md
